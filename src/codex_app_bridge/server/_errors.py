"""The server layer's errors, with the real 0.163.0 codes and texts (probed from the binary).

Every function returns an ``RpcError`` for a handler to raise; the rpc layer's single boundary
turns it into the JSON-RPC error object. Almost all are ``-32600`` (the real server's habit); the
"not supported" cases are ``-32601``.

Our own choice (no real counterpart): a method the protocol has but this bridge does not implement
answers ``-32601`` with ``"<method> is not supported by codex-app-bridge"`` and
``data: {"method": "<method>", "reason": "unsupported"}``, so a client can tell it apart from an
unknown method (``-32600 Invalid request: unknown variant …``) and from a real failure.
"""

from __future__ import annotations

from typing import Any, Final

from codex_app_bridge.rpc import METHOD_NOT_FOUND, MethodSpec, RpcError, invalid_request

__all__ = [
    "ALREADY_INITIALIZED",
    "NOT_INITIALIZED",
    "UNSUPPORTED_REASON",
    "active_turn_mismatch",
    "already_initialized",
    "empty_input",
    "ephemeral_include_turns",
    "experimental_required",
    "invalid_client_name",
    "invalid_cursor",
    "list_turns_unsupported",
    "no_active_turn",
    "no_rollout",
    "not_initialized",
    "steer_turn_mismatch",
    "thread_not_found",
    "thread_not_loaded",
    "unsupported_method",
]

NOT_INITIALIZED: Final = "Not initialized"
ALREADY_INITIALIZED: Final = "Already initialized"
UNSUPPORTED_REASON: Final = "unsupported"


def not_initialized() -> RpcError:
    return invalid_request(NOT_INITIALIZED)


def already_initialized() -> RpcError:
    return invalid_request(ALREADY_INITIALIZED)


def invalid_client_name(name: str) -> RpcError:
    return invalid_request(f"Invalid clientInfo.name: '{name}'. Must be a valid HTTP header value.")


def experimental_required(descriptor: str) -> RpcError:
    """``<method>`` or ``<method>.<field>`` (or ``askForApproval.granular``) without opt-in."""
    return invalid_request(f"{descriptor} requires experimentalApi capability")


def thread_not_loaded(thread_id: str) -> RpcError:
    """``thread/read`` of an unknown thread."""
    return invalid_request(f"thread not loaded: {thread_id}")


def thread_not_found(thread_id: str) -> RpcError:
    """``turn/start``, ``turn/interrupt``, ``turn/steer`` on an unknown thread."""
    return invalid_request(f"thread not found: {thread_id}")


def no_rollout(thread_id: str) -> RpcError:
    """``thread/resume``, ``thread/fork`` of an unknown or never-materialized thread."""
    return invalid_request(f"no rollout found for thread id {thread_id}")


def no_active_turn(action: str) -> RpcError:
    """``no active turn to interrupt`` / ``no active turn to steer``."""
    return invalid_request(f"no active turn to {action}")


def active_turn_mismatch(expected: str, active: str) -> RpcError:
    """``turn/interrupt`` naming another turn than the active one (no backticks, as probed)."""
    return invalid_request(f"expected active turn id {expected} but found {active}")


def steer_turn_mismatch(expected: str, active: str) -> RpcError:
    """``turn/steer`` with a stale ``expectedTurnId`` (backticks, as probed)."""
    return invalid_request(f"expected active turn id `{expected}` but found `{active}`")


def empty_input() -> RpcError:
    """``turn/steer`` with ``input: []``."""
    return invalid_request("input must not be empty")


def invalid_cursor(cursor: str) -> RpcError:
    return invalid_request(f"invalid cursor: {cursor}")


def list_turns_unsupported() -> RpcError:
    """Full-history hydration of a thread that has no turn yet (paginated history mode)."""
    return RpcError(METHOD_NOT_FOUND, "list_turns is not supported yet")


def ephemeral_include_turns() -> RpcError:
    """``thread/read {includeTurns: true}`` of an ephemeral thread (0.163.0's answer)."""
    return invalid_request("ephemeral threads do not support includeTurns")


def unsupported_method(spec: MethodSpec[Any]) -> RpcError:
    """What every known but unimplemented method answers (see the module docstring)."""
    return RpcError(
        METHOD_NOT_FOUND,
        f"{spec.name} is not supported by codex-app-bridge",
        {"method": spec.name, "reason": UNSUPPORTED_REASON},
    )
