"""The initialize handshake and the gate every request passes: per-connection state, user agent.

* ``ConnectionState`` is what the server keeps per connection (in ``Connection.state``):
  initialized or not, the negotiated capabilities, the client's name and version.
* ``initialize``'s params are decoded without the wire models when they have the usual shape
  (``InitializeParamsSpec``): a ``clientInfo`` object with string ``name`` and ``version``,
  capabilities of the declared types. Anything else (a missing or mistyped field, positional
  params, snake_case names, ...) is decoded by the generated ``InitializeParams`` model, which
  words the real server's errors; so answering ``initialize`` loads neither pydantic nor the
  models, and what is accepted is what the model accepts.
* ``initialize`` (inline on the connection, so the next request already sees its outcome):
  ``clientInfo.name`` must be a valid HTTP header value (else ``Invalid clientInfo.name: '…'.
  Must be a valid HTTP header value.``, the connection stays uninitialized); a second one answers
  ``Already initialized``; ``optOutNotificationMethods`` is set on the connection (exact names,
  notifications only); the result is ``{userAgent, codexHome, platformFamily, platformOs}``.
* ``user_agent``: ``<originator>/0.163.0 (<os> <version>; <arch>) <terminal> (<name>; <version>)``
  like the real one. The originator is the first client name that initialized in this process
  (the real server fixes it process-wide); every character outside visible ASCII and tab becomes
  ``_`` in the client parts, as the real server sanitizes them. The official SDK takes the server
  name and version from the part before the first space.
* The gate (``admit``; ``check_request`` on a request's context): anything but ``initialize``
  before a successful initialize answers ``Not initialized``; then the experimental method, enum
  variant and field checks (``_experimental``). ``initialized`` (a client notification) is
  accepted and never required.
* ``welcome_notifications``: what follows the ``initialize`` answer (the config's warnings, the
  remote control state).

Boundary: no threads, no turns; sending the welcome and registering the connection for
broadcasts are wired by the server (or by ``serve`` before it, ``_first_initialize``).
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import orjson

from codex_app_bridge._version import CODEX_PROTOCOL_VERSION
from codex_app_bridge.protocol.jsonrpc import JsonValue
from codex_app_bridge.rpc.methods import ModelParams
from codex_app_bridge.server._errors import (
    already_initialized,
    experimental_required,
    invalid_client_name,
    not_initialized,
)
from codex_app_bridge.server._experimental import experimental_descriptor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from codex_app_bridge.rpc import RequestContext
    from codex_app_bridge.rpc.methods import RawParamsValue
    from codex_app_bridge.rpc.outbox import EncodedParams

__all__ = [
    "ClientHello",
    "ConnectionState",
    "InitializeParamsSpec",
    "accept_hello",
    "admit",
    "check_request",
    "codex_home",
    "host_name",
    "initialize_result",
    "is_header_value",
    "os_description",
    "platform_family",
    "platform_os",
    "sanitize_header_part",
    "terminal_description",
    "user_agent",
    "welcome_notifications",
]


@dataclass
class ConnectionState:
    """What the server knows about one connection (kept in ``Connection.state``)."""

    initialized: bool = False
    experimental_api: bool = False
    client_name: str | None = None
    client_version: str | None = None


@dataclass(frozen=True, slots=True)
class ClientHello:
    """What the server keeps of ``initialize``'s params."""

    name: str
    version: str
    experimental_api: bool = False
    opt_out_notification_methods: tuple[str, ...] = ()


_CAPABILITY_FLAGS: Final = frozenset({"experimentalApi", "requestAttestation"})
"""Booleans (not nullable) of ``InitializeCapabilities``."""
_CAPABILITY_OPTIONS: Final = frozenset({"explicitGatewayOauth", "mcpServerOpenaiFormElicitation"})
"""Nullable booleans of ``InitializeCapabilities``."""
_PYTHON_NAMES: Final = frozenset(
    {
        "client_info",
        "experimental_api",
        "request_attestation",
        "explicit_gateway_oauth",
        "mcp_server_openai_form_elicitation",
        "opt_out_notification_methods",
    }
)
"""Names the models also accept (``populate_by_name``): such params go to the model."""


def _plain_capability(key: str, value: JsonValue) -> bool:
    """Whether a capability has the type the model gives it (unknown ones are kept, unused)."""
    if key in _CAPABILITY_FLAGS:
        return isinstance(value, bool)
    if value is None:
        return key not in _CAPABILITY_FLAGS
    if key in _CAPABILITY_OPTIONS:
        return isinstance(value, bool)
    if key == "extensions":
        return isinstance(value, dict)
    if key == "optOutNotificationMethods":
        return isinstance(value, list) and all(isinstance(method, str) for method in value)
    return True


def _plain_capabilities(raw: JsonValue) -> tuple[bool, tuple[str, ...]] | None:
    if raw is None:
        return False, ()
    if not isinstance(raw, dict) or not _PYTHON_NAMES.isdisjoint(raw):
        return None
    if not all(_plain_capability(key, value) for key, value in raw.items()):
        return None
    methods = cast("list[str] | None", raw.get("optOutNotificationMethods"))
    return raw.get("experimentalApi") is True, tuple(methods or ())


def plain_client_hello(raw: RawParamsValue) -> ClientHello | None:
    """``initialize``'s params when they have the usual shape (see the module docstring);
    ``None``: let the model decide."""
    if not isinstance(raw, dict) or not _PYTHON_NAMES.isdisjoint(raw):
        return None
    info = raw.get("clientInfo")
    if not isinstance(info, dict) or not _PYTHON_NAMES.isdisjoint(info):
        return None
    name, version, title = info.get("name"), info.get("version"), info.get("title")
    if not isinstance(name, str) or not isinstance(version, str):
        return None
    if title is not None and not isinstance(title, str):
        return None
    capabilities = _plain_capabilities(raw.get("capabilities"))
    if capabilities is None:
        return None
    return ClientHello(name, version, *capabilities)


class InitializeParamsSpec:
    """How ``initialize``'s params are decoded (see the module docstring)."""

    def __init__(self) -> None:
        self._model: ModelParams[Any] | None = None

    def decode(self, raw: RawParamsValue) -> ClientHello:
        hello = plain_client_hello(raw)
        return hello if hello is not None else self._by_model(raw)

    def _by_model(self, raw: RawParamsValue) -> ClientHello:
        if self._model is None:
            from codex_app_bridge.protocol.v2 import InitializeParams

            # the real struct's field order, for positional params (``initialize [1,2]``)
            self._model = ModelParams(InitializeParams, field_order=("clientInfo", "capabilities"))
        params = self._model.decode(raw)
        capabilities = params.capabilities
        methods = None if capabilities is None else capabilities.opt_out_notification_methods
        return ClientHello(
            params.client_info.name,
            params.client_info.version,
            bool(capabilities is not None and capabilities.experimental_api),
            tuple(methods or ()),
        )


def connection_state(ctx: RequestContext) -> ConnectionState:
    state = ctx.connection.state
    if not isinstance(state, ConnectionState):
        state = ConnectionState()
        ctx.connection.state = state
    return state


def is_header_value(text: str) -> bool:
    """What ``http::HeaderValue`` accepts: no control character other than tab, no DEL."""
    return all((ord(ch) >= 0x20 or ch == "\t") and ord(ch) != 0x7F for ch in text)


def sanitize_header_part(text: str) -> str:
    """Every character outside visible ASCII and tab replaced by ``_`` (one per character)."""
    return "".join(ch if ch == "\t" or 0x20 <= ord(ch) < 0x7F else "_" for ch in text)


def _os_release() -> dict[str, str]:
    values: dict[str, str] = {}
    for candidate in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            text = Path(candidate).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip().strip('"')
        break
    return values


def _semantic(version: str) -> str:
    parts = [part for part in version.split(".") if part.isdigit()]
    if not parts:
        return version
    return ".".join([*parts, "0", "0"][:3])


def os_description() -> str:
    """``Debian 12.0.0; x86_64``: the OS name and version (as the ``os_info`` crate puts them)
    and the machine architecture."""
    system = platform.system()
    arch = platform.machine() or "unknown"
    if system == "Linux":
        release = _os_release()
        name = release.get("NAME", "Linux").split(" ")[0] or "Linux"
        version = release.get("VERSION_ID", "")
        description = f"{name} {_semantic(version)}" if version else name
    elif system == "Darwin":
        description = f"Mac OS {_semantic(platform.mac_ver()[0])}"
    elif system == "Windows":
        description = f"Windows {_semantic(platform.version())}"
    else:
        description = f"{system or 'Unknown'} {platform.release()}".strip()
    return f"{description}; {arch}"


def terminal_description() -> str:
    """``TERM_PROGRAM[/TERM_PROGRAM_VERSION]``, else ``TERM``, else ``unknown``."""
    program = os.environ.get("TERM_PROGRAM", "").strip()
    if program:
        version = os.environ.get("TERM_PROGRAM_VERSION", "").strip()
        return f"{program}/{version}" if version else program
    term = os.environ.get("TERM", "").strip()
    return term or "unknown"


def user_agent(originator: str, client_name: str, client_version: str) -> str:
    """The real server's user agent for a client (see the module docstring)."""
    return (
        f"{sanitize_header_part(originator)}/{CODEX_PROTOCOL_VERSION} ({os_description()}) "
        f"{sanitize_header_part(terminal_description())} "
        f"({sanitize_header_part(client_name)}; {sanitize_header_part(client_version)})"
    )


def platform_family() -> str:
    return "windows" if os.name == "nt" else "unix"


def platform_os() -> str:
    system = platform.system().lower()
    return {"darwin": "macos"}.get(system, system or "unknown")


def codex_home() -> str:
    """``$CODEX_HOME`` (made absolute) or ``~/.codex``, as the real server reports it."""
    configured = os.environ.get("CODEX_HOME")
    if configured:
        return str(Path(configured).expanduser().absolute())
    return str(Path.home() / ".codex")


def accept_hello(state: ConnectionState, hello: ClientHello) -> None:
    """Refuse a second initialize or a bad client name (``RpcError``); record the client in
    ``state`` on success."""
    if state.initialized:
        raise already_initialized()
    if not is_header_value(hello.name):
        raise invalid_client_name(hello.name)
    state.initialized = True
    state.client_name = hello.name
    state.client_version = hello.version
    state.experimental_api = hello.experimental_api


def validate_initialize(ctx: RequestContext, hello: ClientHello) -> ConnectionState:
    """``accept_hello`` on the connection's state; the client's notification opt-outs are then
    set on the connection."""
    state = connection_state(ctx)
    accept_hello(state, hello)
    ctx.connection.set_notification_opt_out(hello.opt_out_notification_methods)
    return state


def initialize_result(originator: str, hello: ClientHello, home: str) -> tuple[str, bytes]:
    """The user agent for ``hello``'s client and ``initialize``'s encoded result, written as
    the real server writes it (its key order), without the wire models. ``originator``: the
    first client name that initialized in this process; ``home``: the ``CODEX_HOME`` the server
    runs with."""
    agent = user_agent(originator, hello.name, hello.version)
    result = {
        "userAgent": agent,
        "codexHome": home,
        "platformFamily": platform_family(),
        "platformOs": platform_os(),
    }
    return agent, orjson.dumps(result)


def host_name() -> str:
    """``serverName`` of the remote control state: this machine's name (``uname``'s, which
    ``gethostname`` returns, without importing ``socket``: the welcome precedes a first list)."""
    if sys.platform != "win32":
        return os.uname().nodename or "localhost"
    import socket

    return socket.gethostname() or "localhost"


def welcome_notifications(
    warnings: Iterable[dict[str, Any]], server_name: str, installation_id: str
) -> list[tuple[str, EncodedParams]]:
    """What the real server sends a connection right after its ``initialize`` answer, before
    it reads anything more: the config's warnings (``configWarning``, ``warnings``), then the
    remote control state (written without the wire models), as ``(method, params)``."""
    status = {
        "status": "disabled",
        "serverName": server_name,
        "installationId": installation_id,
        "environmentId": None,
    }
    return [
        *(("configWarning", warning) for warning in warnings),
        ("remoteControl/status/changed", orjson.dumps(status)),
    ]


def admit(state: ConnectionState, method: str, params: object, *, experimental: bool) -> None:
    """The gate's rules for a request of ``method`` on a connection in ``state`` (raises
    ``RpcError``): initialize first and once, then the experimental checks (``experimental``:
    the method is)."""
    if method == "initialize":
        if state.initialized:
            raise already_initialized()
        return
    if not state.initialized:
        raise not_initialized()
    if state.experimental_api:
        return
    if experimental:
        raise experimental_required(method)
    if isinstance(params, dict):
        raw = cast("dict[str, JsonValue]", params)
        descriptor = experimental_descriptor(method, raw)
        if descriptor is not None:
            raise experimental_required(descriptor)


async def check_request(ctx: RequestContext) -> None:
    """The gate (``admit``) on the connection of ``ctx``."""
    admit(
        connection_state(ctx),
        ctx.method,
        ctx.request.params,
        experimental=ctx.spec.experimental,
    )
