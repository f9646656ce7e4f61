"""``codex-app-bridge serve`` (alias ``app-server``): the drop-in ``codex app-server``.

    codex-app-bridge serve [--listen URL] [--script FILE | --producer "CMD ARGS..."]
                           [--pace SECONDS|recorded[:SPEED]] [--allow-inject]
                           [--ws-auth capability-token --ws-token-file PATH]
                           [--allow-unauthenticated]

* No flags: the built-in deterministic agent answers every turn (``sources.DefaultAgent``);
  ``--pace`` sets the seconds before each streamed delta (default ``0.02``).
* ``--script FILE``: each ``turn/start`` plays the next recorded turn of FILE (``sources``
  ``ScriptSource``); ``--pace`` is then a fixed delay before each event, or ``recorded`` /
  ``recorded:SPEED`` for the recorded timing (default: no pacing). FILE may also be a Codex
  rollout (``sources.RolloutSource``). Before it reads stdin the command reads FILE's first line
  only: a file that cannot be read, holds no events or whose first line is neither an event
  envelope nor a rollout line is reported (with the line number) and the command exits 2, as a
  bad ``--pace`` is. FILE is indexed on the first turn, after ``initialize`` is answered: a bad
  line further on (or a file gone since) fails every turn with a message naming it, also logged.
* ``--producer "CMD ARGS..."``: each thread's events come from its own CMD process, which reads
  Codex submissions on stdin and writes event envelopes on stdout (``sources.ProducerSource``).
  CMD is split into words as a POSIX shell would (no shell runs it); a program that cannot be
  found or executed is reported and the command exits 2 before reading stdin (checked without
  loading ``sources``: the producer source is made after ``initialize`` is answered).
* ``--allow-inject``: adds the ``bridge/inject/*`` methods (``server._inject``) with which a test
  harness on the same connection claims a thread, pushes its event envelopes and reads the
  ``Op`` s it received; without the flag they do not exist, as any unknown method.
* ``--listen`` (as the real server): ``stdio://`` (the default, also ``--stdio``): one client on
  stdin/stdout, JSON Lines. ``unix://PATH`` (``unix://`` alone:
  ``$CODEX_HOME/app-server-control/app-server-control.sock``) and ``ws://IP:PORT``: any number of
  clients, WebSocket framing on both (``transport.listen``), running until SIGTERM/SIGINT;
  port ``0`` picks a free port (the banner on stderr tells which). ``off`` exits 1 with the real
  server's "no transport configured" (the bridge has no remote control). A bad URL gets the real
  server's message and exit 2.
* ``--allocator python|system``: ``system`` (the default with ``--listen unix://`` or ``ws://``)
  starts the process again in place under the C library's malloc (``PYTHONMALLOC=malloc``,
  taken out of the environment its children get; nothing if ``PYTHONMALLOC`` is set or glibc is
  missing): a server that runs for weeks with many clients gives back what a busy spell left
  free (``_gc.use_system_allocator``), for about a tenth more CPU per request. ``python`` (the
  default on stdio) keeps CPython's own allocator.
* ``--ws-auth capability-token --ws-token-file PATH`` (or ``--ws-token-sha256 HEX``): websocket
  clients must send ``Authorization: Bearer <token>`` in the upgrade request (``transport.auth``).
  A ``ws://`` address that is not loopback is refused without it (exit 2) unless
  ``--allow-unauthenticated`` is given (then a warning on stderr); the real server only warns.
  ``signed-bearer-token`` is not supported (exit 2). The unix socket is never authenticated (its
  file is 0600), as in the real server.
* ``--outbound-budget BYTES`` (``K``/``M``/``G`` suffixes): encoded output held per connection
  behind its 128-message queue for a client that is not reading (``rpc.connection``): on stdio
  reading and streaming pause beyond it (default 4 MiB: a client may write thousands of requests
  before it reads an answer); on sockets the client is disconnected beyond it (default 8 MiB, plus
  the kernel's buffers), so a stalled client never slows the others.
* ``--idle-unload SECONDS``: a thread nobody is subscribed to (connection closed, or
  ``thread/unsubscribe``) is unloaded after this long idle, with ``thread/status/changed``
  ``notLoaded`` and ``thread/closed`` to every client (default 1800, the real server's; 0: never).
* ``-c/--config KEY=VALUE`` (repeatable, before or after the command, as ``codex -c``): a
  config override, the value TOML (a string when it is not), the key dotted; ``--enable X`` /
  ``--disable X`` are ``-c features.X=true`` / ``=false``. Config comes from
  ``$CODEX_HOME/config.toml`` (``--codex-home``, else ``$CODEX_HOME``, else ``~/.codex``) and
  ``/etc/codex/config.toml``, under these overrides (``config``). Before reading stdin the
  command exits 1 with ``Error: <message>`` when Codex would: an override it refuses, a file
  setting ``approval_policy = "untrusted"``, or (``--strict-config``) a key it does not know. A
  file that cannot be read or parsed does not stop it: the requests that need the config get
  the real server's errors, and every client a ``configWarning`` after ``initialize``.
* Accepted and ignored, so this command can be handed to any client as its codex executable:
  ``app-server`` and ``--profile P`` (e.g. ``codex-app-bridge -c a=b app-server --enable x``).

Lifecycle: on stdio, exits 0 on end of input (a turn still streaming is cancelled, as the real
server does); on every transport SIGTERM and SIGINT stop it cleanly with exit code 0 (a unix
socket file is removed); logs go to stderr only (``LOG_LEVEL``, ``LOG_FORMAT=json``); stdout carries
nothing but protocol lines.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from codex_app_bridge._clock import SeededClock, install_clock
from codex_app_bridge._gc import hold_collector
from codex_app_bridge._producer_command import check_program, parse_command
from codex_app_bridge._scriptfile import ScriptPacing, check_script
from codex_app_bridge.cli._flags import EXIT_USAGE, add_codex_compat_flags
from codex_app_bridge.server._first_list import ListReadAhead
from codex_app_bridge.server._handshake import codex_home
from codex_app_bridge.server._idle import DEFAULT_IDLE_UNLOAD_SECONDS

# Imported where used: ``serve`` on stdio answers ``initialize`` before it imports the event loop
# and the server (``server._first_initialize``), and the server before it needs the sources, the
# socket transports or the domain behind the handlers.
if TYPE_CHECKING:
    from pydantic import BaseModel

    from codex_app_bridge.cluster import ClusterNode, ClusterOptions
    from codex_app_bridge.config import ConfigLayers
    from codex_app_bridge.rpc import MethodTable
    from codex_app_bridge.server._first_initialize import FirstInitialize
    from codex_app_bridge.server._server import BridgeServer
    from codex_app_bridge.sources import EventSource, Scenario, TurnSource
    from codex_app_bridge.transport.auth import CapabilityToken
    from codex_app_bridge.transport.listen import TcpEndpoint

__all__ = [
    "DEFAULT_AGENT_PACE",
    "ListenTarget",
    "default_unix_socket_path",
    "parse_listen_url",
    "register",
    "run_server",
]

logger = logging.getLogger(__name__)

DEFAULT_AGENT_PACE = 0.02
EXIT_START_FAILED = 1
"""The transport could not start (socket in use, token file unreadable, ``--listen off``)."""
_STDIO = "stdio://"
SERVER_MODULES: Final = (
    "anyio",
    "anyio._backends._asyncio",
    "codex_app_bridge.transport.stdio",
    "codex_app_bridge.server._server",
)
"""What ``run_server`` imports on stdio: imported beside the first lists answered before it
(``server._first_list``)."""


@dataclass(frozen=True, slots=True)
class ListenTarget:
    """A parsed ``--listen`` URL."""

    scheme: Literal["stdio", "unix", "ws", "off"]
    path: str | None = None
    """unix: the socket path (``None``: the default under ``$CODEX_HOME``)."""
    host: str = ""
    port: int = 0

    @property
    def url(self) -> str:
        if self.scheme == "ws":
            host = f"[{self.host}]" if ":" in self.host else self.host
            return f"ws://{host}:{self.port}"
        if self.scheme == "unix":
            return f"unix://{self.path or ''}"
        return _STDIO if self.scheme == "stdio" else "off"

    @property
    def is_loopback(self) -> bool:
        return self.scheme != "ws" or ipaddress.ip_address(self.host).is_loopback


STDIO = ListenTarget("stdio")


def default_unix_socket_path(home: str | None = None) -> str:
    """Where ``unix://`` listens: ``HOME/app-server-control/app-server-control.sock``, ``home``
    being ``--codex-home``, else ``$CODEX_HOME``, else ``~/.codex``."""
    return os.path.join(home or codex_home(), "app-server-control", "app-server-control.sock")


def _socket_address(text: str) -> tuple[str, int] | None:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        return None
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed:
        host = host[1:-1]
    try:
        version = ipaddress.ip_address(host).version
    except ValueError:
        return None
    if version != (6 if bracketed else 4):
        return None
    return host, int(port)


def parse_listen_url(text: str) -> ListenTarget:
    """``--listen`` as the real server checks it."""
    if text == _STDIO:
        return STDIO
    if text == "off":
        return ListenTarget("off")
    if text.startswith("ws://"):
        address = _socket_address(text.removeprefix("ws://"))
        if address is None:
            raise argparse.ArgumentTypeError(
                f"invalid websocket --listen URL `{text}`; expected `ws://IP:PORT`"
            )
        return ListenTarget("ws", host=address[0], port=address[1])
    if text.startswith("unix://"):
        return ListenTarget("unix", path=text.removeprefix("unix://") or None)
    raise argparse.ArgumentTypeError(
        f"unsupported --listen URL `{text}`; expected `stdio://`, `unix://`, `unix://PATH`, "
        "`ws://IP:PORT`, or `off`"
    )


def parse_byte_size(text: str) -> int:
    """``--outbound-budget``: a positive byte count, optionally with a K, M or G suffix (1024s)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    body = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = body[-1:] if body[-1:] in units else ""
    number = body[: len(body) - len(unit)]
    if not number.isdigit() or int(number) == 0:
        raise argparse.ArgumentTypeError(
            f"invalid byte count `{text}`: expected a positive integer with an optional K, M "
            "or G suffix"
        )
    return int(number) * units[unit]


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        type=parse_listen_url,
        default=STDIO,
        metavar="URL",
        help="transport endpoint: stdio:// (default), unix://, unix://PATH, ws://IP:PORT, off",
    )
    parser.add_argument(
        "--stdio",
        action="store_const",
        const=STDIO,
        dest="listen",
        help="use stdio as the transport (same as --listen stdio://)",
    )
    parser.add_argument(
        "--script",
        metavar="FILE",
        default=None,
        help="play recorded core events (JSONL envelopes {id, msg}), one recorded turn per "
        "turn/start, instead of the built-in agent",
    )
    parser.add_argument(
        "--producer",
        metavar="CMD",
        default=None,
        help="spawn CMD (one process per thread) and stream its events: it reads Codex "
        "submissions {id, op} on stdin and writes event envelopes {id, msg} on stdout",
    )
    parser.add_argument(
        "--allow-inject",
        action="store_true",
        help="add the bridge/inject/* JSON-RPC methods, with which a test harness claims a "
        "thread, pushes its event envelopes and reads the Ops it received",
    )
    parser.add_argument(
        "--pace",
        metavar="PACE",
        default=None,
        help="built-in agent: seconds before each streamed delta (default "
        f"{DEFAULT_AGENT_PACE}); --script: seconds before each event, or 'recorded' / "
        "'recorded:SPEED' for the recorded timing (default: none)",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        default=None,
        help="working directory reported for threads started without a cwd (default: the "
        "current directory)",
    )
    parser.add_argument(
        "--codex-home",
        metavar="DIR",
        default=None,
        help="store threads under DIR as Codex does (sessions/YYYY/MM/DD/rollout-*.jsonl), so "
        "a restarted server lists and resumes them (default: $CODEX_HOME; with neither, threads "
        "live in memory only)",
    )
    parser.add_argument(
        "--outbound-budget",
        type=parse_byte_size,
        default=None,
        metavar="BYTES",
        help="bytes of output held per connection for a client that is not reading (suffix "
        "K, M or G; default 4M on stdio, where reading and streaming pause beyond it, 8M on "
        "sockets, where the client is disconnected beyond it)",
    )
    parser.add_argument(
        "--max-message-size",
        type=parse_byte_size,
        default=None,
        metavar="BYTES",
        help="largest inbound JSON-RPC message on every transport (suffix K, M or G; default 64M "
        "on stdio, 16M on sockets as the real server); a larger request is refused unparsed "
        "(stdio: answered with the reason when its id comes first; sockets: closed with 1009)",
    )
    parser.add_argument(
        "--idle-unload",
        type=float,
        default=DEFAULT_IDLE_UNLOAD_SECONDS,
        metavar="SECONDS",
        help="unload a thread nobody is subscribed to after this long idle (default "
        f"{DEFAULT_IDLE_UNLOAD_SECONDS:g}, as the real server; 0: never)",
    )
    auth = parser.add_argument_group("websocket authentication")
    auth.add_argument(
        "--ws-auth",
        choices=("capability-token", "signed-bearer-token"),
        default=None,
        metavar="MODE",
        help="authentication of ws:// clients: capability-token (signed-bearer-token is not "
        "supported yet)",
    )
    auth.add_argument(
        "--ws-token-file",
        metavar="PATH",
        default=None,
        help="file holding the capability token (surrounding whitespace ignored)",
    )
    auth.add_argument(
        "--ws-token-sha256",
        metavar="HEX",
        default=None,
        help="hex SHA-256 digest of the capability token, instead of --ws-token-file",
    )
    for flag in (
        "--ws-shared-secret-file",
        "--ws-issuer",
        "--ws-audience",
        "--ws-max-clock-skew-seconds",
    ):
        auth.add_argument(flag, default=None, help=argparse.SUPPRESS)
    auth.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve a non-loopback ws:// address without --ws-auth (anyone who can reach it "
        "can drive the server)",
    )
    parser.add_argument(
        "--scenario",
        metavar="FILE",
        default=None,
        help="answer turns from a scenario: rules chosen by the input text (see the README, "
        "Scenarios; codex-app-bridge check FILE validates one)",
    )
    parser.add_argument(
        "--seed",
        type=_seed,
        default=None,
        metavar="N",
        help="a reproducible run: ids come from a generator seeded with N and the clock stands "
        "still at 2025-01-01T00:00:00Z, so the same client flow gets the same bytes",
    )
    parser.add_argument(
        "--strict-config",
        action="store_true",
        help="exit when config.toml (or a -c override) holds a key Codex does not know",
    )
    cluster = parser.add_argument_group("cluster (threads shared by many nodes through NATS)")
    cluster.add_argument(
        "--cluster",
        metavar="URL",
        default=None,
        help="join the cluster whose NATS JetStream is at URL (nats://HOST:PORT or tls://...; "
        "several comma-separated): threads are shared with every node of it (README, Cluster)",
    )
    cluster.add_argument(
        "--cluster-name", metavar="NAME", default=None, help="this node's name in NATS"
    )
    cluster.add_argument(
        "--cluster-creds", metavar="FILE", default=None, help="NATS credentials (.creds) file"
    )
    cluster.add_argument(
        "--cluster-nkey", metavar="FILE", default=None, help="file holding an NKey seed"
    )
    cluster.add_argument(
        "--cluster-tls-ca", metavar="FILE", default=None, help="CA bundle to verify NATS with"
    )
    cluster.add_argument(
        "--cluster-tls-cert", metavar="FILE", default=None, help="client certificate (mTLS)"
    )
    cluster.add_argument(
        "--cluster-tls-key", metavar="FILE", default=None, help="client certificate's key"
    )
    cluster.add_argument(
        "--cluster-lease-ttl",
        metavar="SECONDS",
        type=float,
        default=None,
        help="seconds a thread's owner holds it unless renewed (the lease bucket's TTL, set by "
        "the first node of a cluster; default 3): after a crash, another node takes over "
        "within about this long",
    )
    compat = parser.add_argument_group("codex app-server flags accepted and ignored")
    compat.add_argument(
        "--analytics-default-enabled",
        action="store_true",
        help="as codex app-server (IDE extensions pass it); codex-app-bridge sends no analytics",
    )
    compat.add_argument(
        "--code-mode-host",
        metavar="URL",
        default=None,
        help="as codex app-server; codex-app-bridge has no code-mode host and ignores it",
    )
    parser.add_argument(
        "--allocator",
        choices=("python", "system"),
        default=None,
        help="where the interpreter allocates its objects: python (its own arenas, the "
        "fastest) or system (the C library's malloc, whose free pages go back to the system "
        "once the server is quiet, for about a tenth more CPU per request); default: system "
        "for --listen unix:// and ws://, python for stdio",
    )
    add_codex_compat_flags(parser)
    parser.set_defaults(handler=_run, prepare_process=_prepare_process)


def _prepare_process(args: argparse.Namespace) -> None:
    """Before the process's own ``serve`` starts (not a caller embedding ``cli.main``): run
    under the allocator ``--allocator`` names (``_gc.use_system_allocator`` starts the process
    again in place for ``system``)."""
    allocator: str | None = args.allocator
    if allocator is None:
        listen: ListenTarget = args.listen
        allocator = "system" if listen.scheme in ("unix", "ws") else "python"
    if allocator == "system":
        from codex_app_bridge._gc import use_system_allocator

        use_system_allocator()


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: expected an integer") from None


def register(subparsers: Any) -> None:
    description = __doc__.split("\n\n", 1)[0] if __doc__ else None
    _add_arguments(
        subparsers.add_parser(
            "serve",
            help="serve the codex app-server protocol (stdio, unix socket, websocket)",
            description=description,
        )
    )
    # The hidden alias: a sub-parser added without ``help`` is not listed in ``--help``
    # (``help=SUPPRESS`` would print a literal ``==SUPPRESS==`` there).
    _add_arguments(subparsers.add_parser("app-server", description=description))


SourceFactory = Callable[[], "EventSource | TurnSource"]
"""Makes the event source when the server first needs it (checked before: a bad flag exits 2)."""


def _default_agent(delay: float) -> EventSource | TurnSource:
    from codex_app_bridge.sources import DefaultAgent

    return DefaultAgent(delay=delay)


def _agent_delay(pace: str | None) -> float:
    if pace is None:
        return DEFAULT_AGENT_PACE
    try:
        delay = float(pace)
    except ValueError:
        delay = -1.0
    if not 0 <= delay < float("inf"):
        raise ValueError(
            f"invalid --pace {pace!r}: the built-in agent takes seconds >= 0 "
            "('recorded' needs --script)"
        )
    return delay


def _script_source(path: str, pacing: ScriptPacing | None) -> EventSource | TurnSource:
    """The ``--script`` source, made on first use (``_build_source`` checked the file's head).

    Never raises: a file that can no longer be read gives a source whose every turn fails with
    the index pass's message (and logs it), as a bad line further on does."""
    from codex_app_bridge.sources import ScriptError, ScriptSource, load_script

    try:
        source = load_script(path, lazy=True)
    except ScriptError:
        source = ScriptSource(script_path=Path(path), name=str(Path(path)))
    return source if pacing is None else source.with_pacing(pacing)


def _model_source(config: ConfigLayers, codex_home_dir: str | None) -> EventSource | TurnSource:
    """The model source (``agent``), made on first use: turns from the configured provider."""
    from codex_app_bridge.agent import ModelSource

    return ModelSource(config, codex_home=codex_home_dir or codex_home())


def _warm_model_source(config: ConfigLayers) -> None:
    """Run in a worker thread when the model source serves, once the first ``initialize`` is
    answered and no request is being handled (a ``thread/start`` right behind it first: this
    would share the interpreter with it): what a first turn would build on the event loop (the
    turn's wire models, the agent's modules, the HTTP stack) is built now, the HTTP stack last
    (``agent._source.warm``), so that the first ``turn/start`` finds little left to build."""
    from codex_app_bridge.agent._source import warm

    try:
        _warm_turn_models()
    except Exception:  # a warm-up never fails the server
        logger.exception("warming the turn's models")
    warm(config)


def _warm_turn_models() -> None:
    """Map and encode a synthetic turn, so the wire models a turn's notifications use are built
    before the first real one (pydantic builds a model on first use, on the event loop)."""
    from codex_app_bridge.listener import ListenerHub
    from codex_app_bridge.mapping import item_event_to_server_notification
    from codex_app_bridge.protocol import core, v2
    from codex_app_bridge.protocol.v2 import dump_json

    # first what turn/start itself builds: its params and answer, the model warning, the op it
    # submits, the turn's attribution and the first lines of the thread's rollout
    turn_start: tuple[type[BaseModel], ...] = (
        v2.TurnStartParams,
        v2.TurnStartResponse,
        v2.WarningNotification,
        core.WarningEvent,
        core.UserTurnOp,
        core.Submission,
        core.TurnAttribution,
        core.SessionMeta,
        core.TurnContextItem,
    )
    for model in turn_start:
        model.model_rebuild()
    thread, turn = "00000000-0000-7000-8000-000000000000", "00000000-0000-7000-8000-000000000001"
    user = core.UserMessageItem(id="u", content=[core.TextUserInput(text="")])
    agent = core.AgentMessageItem(id="m", content=[core.TextAgentMessageContent(text="")])
    reasoning = core.ReasoningItem(id="r", summary_text=[""], raw_content=[])
    usage = core.TokenUsage()
    events: list[core.EventMsg] = [
        core.TaskStartedEvent(turn_id=turn, started_at=0, model_context_window=1),
        core.ItemStartedEvent(thread_id=thread, turn_id=turn, item=user, started_at_ms=0),
        core.ItemCompletedEvent(
            thread_id=thread, turn_id=turn, item=user, started_at_ms=0, completed_at_ms=0
        ),
        core.ItemStartedEvent(thread_id=thread, turn_id=turn, item=reasoning, started_at_ms=0),
        core.AgentReasoningSectionBreakEvent(item_id="r", summary_index=0),
        core.ReasoningContentDeltaEvent(thread_id=thread, turn_id=turn, item_id="r", delta=""),
        core.ItemCompletedEvent(
            thread_id=thread, turn_id=turn, item=reasoning, started_at_ms=0, completed_at_ms=0
        ),
        core.ItemStartedEvent(thread_id=thread, turn_id=turn, item=agent, started_at_ms=0),
        core.AgentMessageContentDeltaEvent(thread_id=thread, turn_id=turn, item_id="m", delta=""),
        core.ItemCompletedEvent(
            thread_id=thread, turn_id=turn, item=agent, started_at_ms=0, completed_at_ms=0
        ),
        core.StreamErrorEvent(
            message="",
            codex_error_info={"response_stream_disconnected": {"http_status_code": None}},
        ),
        core.TokenCountEvent(
            info=core.TokenUsageInfo(total_token_usage=usage, last_token_usage=usage),
            rate_limits=core.RateLimitSnapshot(limit_id="codex"),
        ),
        core.TaskCompleteEvent(turn_id=turn, last_agent_message=""),
    ]
    # the rollout lines storage writes for them (the first turn creates the thread's file)
    stamp = "2026-01-01T00:00:00.000Z"
    item = core.RESPONSE_ITEM_ADAPTER.validate_python(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ""}]}
    )
    core.dump_rollout_record("response_item", item, timestamp=stamp)
    for event in events:
        core.dump_rollout_record("event_msg", event, timestamp=stamp)
    listener = ListenerHub().create_thread(thread)
    for event in events:
        mapped = item_event_to_server_notification(event, thread, turn)
        if mapped is not None:
            dump_json(mapped)
        listener.process(core.EventEnvelope.trusted(turn, event))


def _say_sandbox() -> None:
    """Say which sandbox the model's commands get (bubblewrap on ``PATH``), or that there is
    none and sandboxed commands will not run (``machine._sandbox``)."""
    import shutil

    bwrap = shutil.which("bwrap")
    if bwrap is not None:
        print(f"codex-app-bridge serve: sandbox: bubblewrap at {bwrap}", file=sys.stderr)
    else:
        print(
            "codex-app-bridge serve: sandbox: bubblewrap (bwrap) not found on PATH: commands "
            "that need the sandbox will not run (install it: apt-get install bubblewrap)",
            file=sys.stderr,
        )


def _start_warm_model_source(config: ConfigLayers) -> None:
    import threading

    threading.Thread(
        target=_warm_model_source, args=(config,), name="warm-model", daemon=True
    ).start()


def _choose_source(
    args: argparse.Namespace,
    built: SourceFactory,
    config: ConfigLayers,
    codex_home_dir: str | None,
    warm_ups: list[Callable[[], object]],
) -> SourceFactory:
    """Explicit flags first, then a configured model provider, then the built-in agent; the
    choice is said on stderr. The model source's warm-up is added to ``warm_ups`` (begun by the
    server once ``initialize`` is answered)."""
    if args.producer is not None:
        _announce("events from --producer")
        return built
    if args.script is not None:
        _announce(f"events from --script {args.script}")
        return built
    if args.scenario is not None:
        _announce(f"turns from --scenario {args.scenario}")
        return built
    if config.configured_provider():
        # the first turn's imports (agent, httpx, machine, the core models), off the loop once
        # initialize is answered
        warm_ups.append(partial(_start_warm_model_source, config))
        _announce(
            "turns from the model provider configured in "
            f"{Path(codex_home_dir or codex_home()) / 'config.toml'}"
        )
        _say_sandbox()
        return partial(_model_source, config, codex_home_dir)
    _announce("turns from the built-in agent (no model provider configured)")
    return built


def _announce(what: str) -> None:
    """Which source serves, on stderr through the log (so ``LOG_FORMAT=json`` keeps every
    stderr line JSON), at WARNING so that it shows by default."""
    logger.warning("serving %s", what)


def _scenario_source(scenario: Scenario, pace: float) -> EventSource | TurnSource:
    from codex_app_bridge.sources import ScenarioSource

    return ScenarioSource(scenario, pace=pace)


def _build_source(args: argparse.Namespace) -> SourceFactory:
    if args.scenario is not None:
        if args.script is not None or args.producer is not None:
            raise ValueError("--scenario cannot be combined with --script or --producer")
        from codex_app_bridge.sources import load_scenario

        # a scenario is small: checked whole now, every problem of every line at once
        pace = 0.0 if args.pace is None else _agent_delay(args.pace)
        return partial(_scenario_source, load_scenario(args.scenario), pace)
    if args.producer is None:
        if args.script is None:
            return partial(_default_agent, _agent_delay(args.pace))
        # Checked without the sources and the models (``_scriptfile``): the server answers
        # ``initialize`` before it loads them, and before it reads more than the first line.
        check_script(args.script)
        pacing = None if args.pace is None else ScriptPacing.parse(args.pace)
        return partial(_script_source, args.script, pacing)
    if args.script is not None:
        raise ValueError("--producer and --script cannot be combined")
    if args.pace is not None:
        raise ValueError("--pace does not apply to --producer (the producer paces itself)")
    # Checked without the sources and the models (``_producer_command``), as a script is.
    argv = parse_command(args.producer)
    check_program(argv, os.environ.get("PATH"))
    return partial(_producer_source, tuple(argv))


def _producer_source(argv: tuple[str, ...]) -> EventSource | TurnSource:
    """The ``--producer`` source, made on first use (``_build_source`` checked its program)."""
    from codex_app_bridge.sources import ProducerSource

    return ProducerSource(argv)


def _injectable_source(
    source: EventSource | TurnSource | None, source_factory: SourceFactory | None
) -> EventSource | TurnSource:
    """``--allow-inject``: the server's source (made now if it was not given) behind an
    ``InjectableSource``, so that a harness can claim threads."""
    from codex_app_bridge.sources import InjectableSource

    if source is None:
        source = source_factory() if source_factory is not None else _default_agent(0.0)
    return InjectableSource(source)


def _injecting_table(server: BridgeServer) -> MethodTable:
    """``--allow-inject``: the server's table plus ``bridge/inject/*``, still built on the first
    request other than ``initialize`` (so the answer to it loads nothing more than without)."""
    from codex_app_bridge.server._inject import INJECT_METHODS

    def extend(table: MethodTable) -> MethodTable:
        from codex_app_bridge.server._inject import with_injection
        from codex_app_bridge.sources import InjectableSource

        source = server.source
        assert isinstance(source, InjectableSource)
        hub = server.hub
        return with_injection(table, source, lambda thread_id: hub.get(thread_id) is not None)

    from codex_app_bridge.server._table import DeferredMethodTable

    assert isinstance(server.table, DeferredMethodTable)
    return server.table.extended(extend, INJECT_METHODS)


def config_overrides(args: argparse.Namespace) -> list[str]:
    """The ``-c`` overrides of the command line, ``--enable`` / ``--disable`` included, in
    the order Codex applies them (before the command, then after it)."""
    overrides: list[str] = []
    for prefix in ("top", "codex"):
        values: list[str] = getattr(args, f"{prefix}_config", None) or []
        enabled: list[str] = getattr(args, f"{prefix}_enable", None) or []
        disabled: list[str] = getattr(args, f"{prefix}_disable", None) or []
        overrides.extend(values)
        overrides.extend(f"features.{name}=true" for name in enabled)
        overrides.extend(f"features.{name}=false" for name in disabled)
    return overrides


def serve_config(args: argparse.Namespace, codex_home_dir: str | None) -> ConfigLayers:
    """The config layers ``serve`` runs with: ``codex_home_dir`` (else ``$CODEX_HOME``, else
    ``~/.codex``, as the real server) and the command line's overrides."""
    from codex_app_bridge.config import load_layers

    return load_layers(codex_home_dir or codex_home(), config_overrides(args))


def resolve_codex_home(flag: str | None) -> str | None:
    """``--codex-home``, else ``$CODEX_HOME``, else ``None`` (threads in memory only)."""
    chosen = flag or os.environ.get("CODEX_HOME") or None
    return None if chosen is None else os.path.abspath(os.path.expanduser(chosen))


class StartError(Exception):
    """The server cannot start as asked; ``code`` is the exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """What ``serve`` listens on and how it authenticates websocket clients."""

    listen: ListenTarget = STDIO
    token: CapabilityToken | None = None
    outbound_budget: int | None = None
    """Bytes held per connection for a slow reader (``None``: the rpc layer's default)."""
    idle_unload: float = DEFAULT_IDLE_UNLOAD_SECONDS
    """Seconds before a thread nobody is subscribed to is unloaded (0: never)."""
    codex_home: str | None = None
    """Where threads are stored (``--codex-home`` / ``CODEX_HOME``); ``None``: in memory."""
    allow_inject: bool = False
    """Add the ``bridge/inject/*`` methods (the source is wrapped in ``InjectableSource``)."""
    max_message_bytes: int | None = None
    """``--max-message-size``: the largest inbound message on every transport (``None``: each
    transport's default, 64 MiB on stdio, 16 MiB on sockets as the real server)."""
    cluster: ClusterOptions | None = None
    """``--cluster URL``: threads shared through NATS JetStream (``cluster``); ``None``: this
    process's own."""


def _auth_settings(args: argparse.Namespace) -> CapabilityToken | None:
    jwt_flags = (
        args.ws_shared_secret_file,
        args.ws_issuer,
        args.ws_audience,
        args.ws_max_clock_skew_seconds,
    )
    if args.ws_auth is None:
        if args.ws_token_file or args.ws_token_sha256 or any(v is not None for v in jwt_flags):
            raise StartError(
                "websocket auth flags require `--ws-auth capability-token` or "
                "`--ws-auth signed-bearer-token`",
                EXIT_USAGE,
            )
        return None
    if args.ws_auth == "signed-bearer-token":
        raise StartError(
            "`--ws-auth signed-bearer-token` is not supported by codex-app-bridge yet; use "
            "`--ws-auth capability-token`",
            EXIT_USAGE,
        )
    if any(v is not None for v in jwt_flags):
        raise StartError(
            "`--ws-shared-secret-file`, `--ws-issuer`, `--ws-audience`, and "
            "`--ws-max-clock-skew-seconds` require `--ws-auth signed-bearer-token`",
            EXIT_USAGE,
        )
    from codex_app_bridge.transport.auth import AuthConfigError, CapabilityToken

    try:
        if args.ws_token_file is not None:
            return CapabilityToken.from_file(args.ws_token_file)
        if args.ws_token_sha256 is not None:
            return CapabilityToken.from_sha256_hex(args.ws_token_sha256)
    except AuthConfigError as exc:
        raise StartError(str(exc), EXIT_START_FAILED) from None
    raise StartError(
        "`--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth capability-token` "
        "is set",
        EXIT_USAGE,
    )


def check_codex_home(path: str | None) -> None:
    """Refuse a CODEX_HOME (``--codex-home`` or the variable) that cannot be a directory, in the
    real binary's words (``StartError``, status 1); one that does not exist yet is created when
    the first thread is stored."""
    if path is None:
        return
    home = Path(path)
    if home.exists() and not home.is_dir():
        raise StartError(
            f'CODEX_HOME points to "{path}", but that path is not a directory', EXIT_START_FAILED
        )
    for parent in home.parents:
        if parent.exists():
            if not parent.is_dir():
                raise StartError(
                    f'failed to read CODEX_HOME "{path}": Not a directory (os error 20)',
                    EXIT_START_FAILED,
                )
            break


def check_cwd(path: str | None) -> None:
    """``--cwd`` must name a directory (threads started without a cwd run there)."""
    if path is not None and not Path(path).is_dir():
        reason = "is not a directory" if Path(path).exists() else "does not exist"
        raise StartError(f"--cwd {path} {reason}", EXIT_USAGE)


def serve_settings(args: argparse.Namespace) -> ServeSettings:
    """Check the transport flags together (raises ``StartError``); warns on stderr."""
    listen: ListenTarget = args.listen
    if listen.scheme == "off":
        raise StartError(
            "no transport configured; use --listen or enable remote control (codex-app-bridge "
            "has no remote control)",
            EXIT_START_FAILED,
        )
    token = _auth_settings(args)
    if listen.scheme == "ws" and not listen.is_loopback and token is None:
        url = listen.url
        if not args.allow_unauthenticated:
            raise StartError(
                f"refusing to serve {url} without authentication: it is not a loopback "
                "address, so anyone who can reach it could drive this server; add `--ws-auth "
                "capability-token --ws-token-file PATH`, or `--allow-unauthenticated` to accept "
                "the risk",
                EXIT_USAGE,
            )
        print(
            f"codex-app-bridge serve: WARNING: serving {url} without authentication "
            "(--allow-unauthenticated): anyone who can reach it can drive this server",
            file=sys.stderr,
        )
    check_cwd(args.cwd)
    if not 0 <= args.idle_unload < float("inf"):
        raise StartError(f"invalid --idle-unload {args.idle_unload}: seconds >= 0", EXIT_USAGE)
    return ServeSettings(
        listen,
        token,
        args.outbound_budget,
        args.idle_unload,
        codex_home=resolve_codex_home(args.codex_home),
        allow_inject=args.allow_inject,
        max_message_bytes=args.max_message_size,
        cluster=_cluster_options(args),
    )


def _cluster_options(args: argparse.Namespace) -> ClusterOptions | None:
    """``--cluster`` and its options, checked (``StartError``); the NATS client is not loaded."""
    if args.cluster is None:
        named = [
            f
            for f in ("cluster_creds", "cluster_tls_ca", "cluster_name", "cluster_lease_ttl")
            if getattr(args, f)
        ]
        if named:
            flag = "--" + named[0].replace("_", "-")
            raise StartError(f"{flag} needs --cluster URL", EXIT_USAGE)
        return None
    if args.allow_inject:
        raise StartError("--allow-inject cannot be combined with --cluster", EXIT_USAGE)
    from codex_app_bridge.cluster._options import ClusterOptions

    try:
        return ClusterOptions.parse(
            args.cluster,
            name=args.cluster_name,
            creds=args.cluster_creds,
            nkey_seed=args.cluster_nkey,
            tls_ca=args.cluster_tls_ca,
            tls_cert=args.cluster_tls_cert,
            tls_key=args.cluster_tls_key,
            **({} if args.cluster_lease_ttl is None else {"lease_ttl": args.cluster_lease_ttl}),
        )
    except ValueError as exc:
        raise StartError(str(exc), EXIT_USAGE) from None


def _banner(endpoint: TcpEndpoint, loopback: bool) -> str:
    base = f"http://{endpoint.url.removeprefix('ws://')}"
    lines = [
        "codex-app-bridge serve (WebSockets)",
        f"  listening on: {endpoint.url}",
        f"  readyz: {base}/readyz",
        f"  healthz: {base}/healthz",
    ]
    if loopback:
        lines.append("  note: binds localhost only (use SSH port-forwarding for remote access)")
    return "\n".join(lines)


async def run_server(
    source: EventSource | TurnSource | None = None,
    *,
    default_cwd: str | None = None,
    settings: ServeSettings | None = None,
    source_factory: SourceFactory | None = None,
    config: ConfigLayers | None = None,
    read_ahead: ListReadAhead | None = None,
    after_initialize: Sequence[Callable[[], object]] = (),
    first: FirstInitialize | None = None,
    prefix: bytes = b"",
    signals_before: Sequence[int] = (),
) -> None:
    """Serve until end of input (stdio) or SIGTERM/SIGINT (every transport).

    The source is ``source``, else made by ``source_factory`` when first needed, else the
    built-in agent. ``config``: the layers threads resolve theirs from (``BridgeServer``'s
    default otherwise). ``read_ahead``: the stored threads' first page, read from the first
    ``initialize`` answered (``server._first_list``), as ``after_initialize`` (warm-ups) are
    begun. On stdio, ``first``: the ``initialize`` answered before (``server._first_initialize``)
    and ``prefix``: the input read before, which the server reads first. ``signals_before``:
    SIGTERM / SIGINT received before the server watches them (it then stops as it starts)."""
    import anyio

    from codex_app_bridge.server._server import BridgeServer
    from codex_app_bridge.transport import TransportKind, stdio_transport

    settings = settings if settings is not None else ServeSettings()
    listen = settings.listen
    if settings.allow_inject:
        # The source is wrapped when the server first needs it, as any source is made.
        source_factory = partial(_injectable_source, source, source_factory)
        source = None
    node: ClusterNode | None = None
    if settings.cluster is not None:
        from codex_app_bridge.cluster import ClusterNode

        node = ClusterNode(settings.cluster)
        source = node.source(source, source_factory)
    async with (
        node if node is not None else nullcontext(),
        BridgeServer(
            source,
            default_cwd=default_cwd,
            outbound_budget=settings.outbound_budget,
            idle_unload=settings.idle_unload,
            codex_home=settings.codex_home,
            source_factory=source_factory,
            config=config,
            shared=node,
            read_ahead=read_ahead,
            after_initialize=after_initialize,
            installation_id=None if first is None else first.installation_id,
        ) as server,
        anyio.create_task_group() as tg,
    ):
        if settings.allow_inject:
            server.table = _injecting_table(server)

        async def watch_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                for signum in signals_before:  # noted until now (the receiver is in place)
                    logger.info("received %s; shutting down", signal.Signals(signum).name)
                    tg.cancel_scope.cancel()
                    return
                async for signum in signals:
                    logger.info("received %s; shutting down", signal.Signals(signum).name)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch_signals)
        message_limit: dict[str, int] = {}
        if settings.max_message_bytes is not None:
            message_limit["max_message_bytes"] = settings.max_message_bytes
        if listen.scheme == "unix":
            from codex_app_bridge.transport.listen import serve_unix

            path = listen.path or default_unix_socket_path(settings.codex_home)
            await tg.start(
                partial(serve_unix, path, server.serve_connection, **message_limit),
            )
            print(
                f"codex-app-bridge serve (unix socket)\n  listening on: unix://{path}",
                file=sys.stderr,
            )
            return
        if listen.scheme == "ws":
            from codex_app_bridge.transport.listen import serve_tcp

            endpoint: TcpEndpoint = await tg.start(
                partial(
                    serve_tcp, listen.host, listen.port, server.serve_connection, **message_limit
                ),
                settings.token,
            )
            print(_banner(endpoint, listen.is_loopback), file=sys.stderr)
            return
        async with stdio_transport(prefix=prefix, **message_limit) as streams:
            await server.serve_connection(streams, TransportKind.STDIO, first)
        tg.cancel_scope.cancel()


def _start_failure(exc: BaseException) -> OSError | None:
    from codex_app_bridge.transport.listen import ListenError

    if isinstance(exc, ListenError):
        return exc
    if type(exc).__name__ == "ClusterUnavailable":  # not imported: the cluster may be unused
        assert isinstance(exc, ConnectionError)
        return exc
    if isinstance(exc, BaseExceptionGroup):
        group: BaseExceptionGroup[BaseException] = exc  # pyright: ignore[reportUnknownVariableType]
        for inner in group.exceptions:
            found = _start_failure(inner)
            if found is not None:
                return found
    return None


class _Stopped(BaseException):
    """Raised by ``_EarlySignals`` (a ``BaseException``: nothing on the way, such as a log
    handler's ``except Exception``, may swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _EarlySignals:
    """SIGTERM and SIGINT before the server watches them (``run_server``): while the first
    line of stdin is read and answered they stop the command at once (``_Stopped``: a clean
    stop, as the server's); after it, they are noted (``noted``) and the server stops as soon
    as it watches them."""

    def __init__(self) -> None:
        self.noted: list[int] = []
        self.reading = True
        self._previous = {
            signum: signal.signal(signum, self._handle)
            for signum in (signal.SIGTERM, signal.SIGINT)
        }

    def _handle(self, signum: int, frame: object) -> None:
        if self.reading:
            raise _Stopped(signum)
        self.noted.append(signum)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def _first_lines(
    settings: ServeSettings,
    config: ConfigLayers,
    read_ahead: ListReadAhead | None,
    signals: _EarlySignals,
) -> tuple[FirstInitialize | None, bytes]:
    """On stdio, the first line of stdin, answered when it is an ``initialize`` the server would
    accept as it is (``server._first_initialize``), and then, with a ``CODEX_HOME``, the
    ``thread/list`` requests after it (``server._first_list``), before the event loop and the
    server are imported (those are imported beside the lists, ``SERVER_MODULES``); with the
    bytes read that the server has still to read. May raise ``_Stopped``."""
    try:
        if settings.listen.scheme != "stdio" or settings.cluster is not None:
            return None, b""
        # until the server first answers a request or idles (``BridgeServer``)
        hold_collector()
        from codex_app_bridge.server._first_initialize import answer_first_initialize
        from codex_app_bridge.transport._framing import DEFAULT_MAX_MESSAGE_BYTES

        limit = settings.max_message_bytes
        limit = DEFAULT_MAX_MESSAGE_BYTES if limit is None else limit
        logger.debug("reading the first line of stdin")
        first, rest = answer_first_initialize(
            settings.codex_home or codex_home(), limit, config.startup_warnings
        )
        if first is None or read_ahead is None:
            return first, rest
        from codex_app_bridge.server._first_list import answer_first_lists

        return answer_first_lists(first, rest, read_ahead, SERVER_MODULES, limit=limit)
    finally:
        signals.reading = False


def _run(args: argparse.Namespace) -> int:
    try:
        source = _build_source(args)
    except ValueError as exc:  # sources.ScriptError is a ValueError
        print(f"codex-app-bridge serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        settings = serve_settings(args)
    except StartError as exc:
        print(f"codex-app-bridge serve: {exc}", file=sys.stderr)
        return exc.code
    try:
        check_codex_home(settings.codex_home)
    except StartError as exc:
        print(f"Error: {exc}", file=sys.stderr)  # the real binary's words and form
        return exc.code
    # the first thread/list's imports and reads, begun once initialize is answered
    read_ahead = None if settings.codex_home is None else ListReadAhead(settings.codex_home)
    config = serve_config(args, settings.codex_home)
    refused = config.startup_error(strict=args.strict_config)
    if refused is not None:
        print(f"Error: {refused}", file=sys.stderr)
        return EXIT_START_FAILED
    if settings.codex_home is None:
        logger.warning(
            "no --codex-home and no CODEX_HOME: threads live in memory only and are gone when "
            "the server stops"
        )
    else:
        logger.info("storing threads under %s", settings.codex_home)
    warm_ups: list[Callable[[], object]] = []
    source = _choose_source(args, source, config, settings.codex_home, warm_ups)
    if args.seed is not None:
        install_clock(SeededClock(args.seed))
    signals: _EarlySignals | None = None
    try:
        signals = _EarlySignals()
        first, prefix = _first_lines(settings, config, read_ahead, signals)
    except _Stopped as stopped:  # before the server watches signals: a clean stop as its own
        logger.info("received %s; shutting down", signal.Signals(stopped.signum).name)
        if signals is not None:
            signals.restore()
        return 0
    import anyio

    from codex_app_bridge._gc import reserve_future_iterators

    reserve_future_iterators()  # asyncio is loaded now (``tune_collector`` left it)
    try:
        anyio.run(
            lambda: run_server(
                default_cwd=args.cwd,
                settings=settings,
                source_factory=source,
                config=config,
                read_ahead=read_ahead,
                after_initialize=warm_ups,
                first=first,
                prefix=prefix,
                signals_before=signals.noted,
            )
        )
    except (Exception, BaseExceptionGroup) as exc:  # pyright: ignore[reportUnknownVariableType]
        failure = _start_failure(exc)  # pyright: ignore[reportUnknownArgumentType]
        if failure is None:
            raise
        print(f"codex-app-bridge serve: {failure.strerror or failure}", file=sys.stderr)
        return EXIT_START_FAILED
    finally:
        signals.restore()
    return 0
