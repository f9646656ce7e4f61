"""The ``capabilities.experimentalApi`` gate: experimental params fields and enum variants.

Methods: ``protocol.v2.methods.EXPERIMENTAL_CLIENT_REQUEST_METHODS``, marked ``experimental`` in
the method table (``_table``); without the capability they answer ``-32600 "<method> requires
experimentalApi capability"`` (``_handshake.check_request``).

Fields: the vendored (stable) schema leaves experimental params fields out, so they reach us as
unknown members of the params object. ``EXPERIMENTAL_FIELDS`` lists them per method **in the order
the 0.163.0 binary checks them** (probed: with several set, the first one of this order is named):
``generate-json-schema --experimental`` minus the stable schema, ordered by repeated probing. A
field counts as *set* as the binary decides: an ``Option`` field when present and not ``null`` (an
empty list is set), a ``bool`` field only when ``true``. The error names ``<method>.<field>``.

Enum variants: ``approvalPolicy: {"granular": …}`` is the experimental variant
``askForApproval.granular`` (checked before the fields: it is declared first in every struct).

Boundary: pure functions over the raw params object; raising ``RpcError`` is the caller's gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Final

from codex_app_bridge.protocol.jsonrpc import JsonValue

__all__ = [
    "APPROVAL_POLICY_METHODS",
    "EXPERIMENTAL_FIELDS",
    "FieldKind",
    "experimental_descriptor",
]


class FieldKind(Enum):
    OPTION = "option"
    """``Option<T>``: set when present and not ``null``."""
    FLAG = "flag"
    """``bool`` with a ``false`` default: set when ``true``."""


_O = FieldKind.OPTION
_F = FieldKind.FLAG

EXPERIMENTAL_FIELDS: Final[Mapping[str, tuple[tuple[str, FieldKind], ...]]] = {
    "thread/start": (
        ("allowProviderModelFallback", _F),
        ("runtimeWorkspaceRoots", _O),
        ("permissions", _O),
        ("multiAgentMode", _O),
        ("historyMode", _O),
        ("projectId", _O),
        ("daybreakEnabled", _O),
        ("environments", _O),
        ("dynamicTools", _O),
        ("selectedCapabilityRoots", _O),
        ("mockExperimentalField", _O),
        ("experimentalRawEvents", _F),
    ),
    "thread/fork": (
        ("experimentalPredictionMode", _F),
        ("beforeTurnId", _O),
        ("path", _O),
        ("runtimeWorkspaceRoots", _O),
        ("permissions", _O),
        ("deferGoalContinuation", _F),
    ),
    "thread/resume": (
        ("history", _O),
        ("path", _O),
        ("runtimeWorkspaceRoots", _O),
        ("permissions", _O),
        ("initialTurnsPage", _O),
    ),
    "thread/list": (
        ("projectId", _O),
        ("parentThreadId", _O),
        ("ancestorThreadId", _O),
    ),
    "thread/metadata/update": (
        ("projectId", _O),
        ("daybreakEnabled", _O),
    ),
    "turn/start": (
        ("responsesapiClientMetadata", _O),
        ("additionalContext", _O),
        ("environments", _O),
        ("runtimeWorkspaceRoots", _O),
        ("permissions", _O),
        ("collaborationMode", _O),
        ("multiAgentMode", _O),
        ("cyberAccessProgram", _O),
    ),
    "turn/steer": (
        ("responsesapiClientMetadata", _O),
        ("additionalContext", _O),
    ),
    "command/exec": (("permissionProfile", _O),),
}

APPROVAL_POLICY_METHODS: Final = frozenset(
    {"thread/start", "thread/resume", "thread/fork", "turn/start"}
)


def _is_set(value: JsonValue, kind: FieldKind) -> bool:
    if kind is FieldKind.FLAG:
        return value is True
    return value is not None


def experimental_descriptor(method: str, params: Mapping[str, JsonValue]) -> str | None:
    """The descriptor of the first experimental thing ``params`` uses, or ``None``."""
    if method in APPROVAL_POLICY_METHODS:
        policy = params.get("approvalPolicy")
        if isinstance(policy, dict) and "granular" in policy:
            return "askForApproval.granular"
    for name, kind in EXPERIMENTAL_FIELDS.get(method, ()):
        if name in params and _is_set(params[name], kind):
            return f"{method}.{name}"
    return None
