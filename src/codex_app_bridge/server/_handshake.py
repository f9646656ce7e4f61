"""The initialize handshake and the gate every request passes: per-connection state, user agent.

* ``ConnectionState`` is what the server keeps per connection (in ``Connection.state``):
  initialized or not, the negotiated capabilities, the client's name and version.
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
* The gate (``check_request``): anything but ``initialize`` before a successful initialize answers
  ``Not initialized``; then the experimental method, enum variant and field checks
  (``_experimental``). ``initialized`` (a client notification) is accepted and never required.

Boundary: no threads, no turns; what happens after the initialize response (registering the
connection for broadcasts, start-up notifications) is wired by the server.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from codex_app_bridge._version import CODEX_PROTOCOL_VERSION
from codex_app_bridge.protocol.v2 import InitializeParams
from codex_app_bridge.rpc import RequestContext
from codex_app_bridge.server._errors import (
    already_initialized,
    experimental_required,
    invalid_client_name,
    not_initialized,
)
from codex_app_bridge.server._experimental import experimental_descriptor

__all__ = [
    "ConnectionState",
    "check_request",
    "codex_home",
    "is_header_value",
    "os_description",
    "platform_family",
    "platform_os",
    "sanitize_header_part",
    "terminal_description",
    "user_agent",
]


@dataclass
class ConnectionState:
    """What the server knows about one connection (kept in ``Connection.state``)."""

    initialized: bool = False
    experimental_api: bool = False
    client_name: str | None = None
    client_version: str | None = None


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


def validate_initialize(ctx: RequestContext, params: InitializeParams) -> ConnectionState:
    """Refuse a second initialize or a bad client name; record the client on success."""
    state = connection_state(ctx)
    if state.initialized:
        raise already_initialized()
    name = params.client_info.name
    if not is_header_value(name):
        raise invalid_client_name(name)
    capabilities = params.capabilities
    state.initialized = True
    state.client_name = name
    state.client_version = params.client_info.version
    state.experimental_api = bool(capabilities and capabilities.experimental_api)
    opt_out = (capabilities.opt_out_notification_methods if capabilities else None) or []
    ctx.connection.set_notification_opt_out(opt_out)
    return state


async def check_request(ctx: RequestContext) -> None:
    """The gate: initialize first and once, then the experimental checks."""
    state = connection_state(ctx)
    if ctx.method == "initialize":
        if state.initialized:
            raise already_initialized()
        return
    if not state.initialized:
        raise not_initialized()
    if state.experimental_api:
        return
    if ctx.spec.experimental:
        raise experimental_required(ctx.method)
    raw = ctx.request.params
    if isinstance(raw, dict):
        descriptor = experimental_descriptor(ctx.method, raw)
        if descriptor is not None:
            raise experimental_required(descriptor)
