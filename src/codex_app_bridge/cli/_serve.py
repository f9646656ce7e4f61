"""``codex-app-bridge serve`` (alias ``app-server``): the drop-in ``codex app-server`` on stdio.

    codex-app-bridge serve [--listen stdio://] [--script FILE | --producer "CMD ARGS..."]
                           [--pace SECONDS|recorded[:SPEED]]

* No flags: the built-in deterministic agent answers every turn (``sources.DefaultAgent``);
  ``--pace`` sets the seconds before each streamed delta (default ``0.02``).
* ``--script FILE``: each ``turn/start`` plays the next recorded turn of FILE (``sources``
  ``ScriptSource``); ``--pace`` is then a fixed delay before each event, or ``recorded`` /
  ``recorded:SPEED`` for the recorded timing (default: no pacing). A bad script is reported with
  its line number and the command exits 2 before reading stdin.
* ``--producer "CMD ARGS..."``: each thread's events come from its own CMD process, which reads
  Codex submissions on stdin and writes event envelopes on stdout (``sources.ProducerSource``).
  CMD is split into words as a POSIX shell would (no shell runs it); a program that cannot be
  found or executed is reported and the command exits 2 before reading stdin.
* ``--allow-inject``: adds the ``bridge/inject/*`` methods (``server._inject``) with which a test
  harness on the same connection claims a thread, pushes its event envelopes and reads the
  ``Op`` s it received; without the flag they do not exist, as any unknown method.
* ``--listen``: ``stdio://`` (the default). Other URLs the real server knows (``unix://``,
  ``unix://PATH``, ``ws://IP:PORT``, ``off``) are refused as not supported yet; anything else gets
  the real server's message (``unsupported --listen URL `x`; expected …``); both exit 2.
* Accepted and ignored anywhere, so this command can be handed to any client as its codex
  executable: ``app-server``, ``-c/--config k=v``, ``--enable X``, ``--disable X``,
  ``--profile P`` (e.g. ``codex-app-bridge -c a=b app-server --enable x --listen stdio://``).

Lifecycle: exits 0 on end of input (a turn still streaming is cancelled, as the real server does);
SIGTERM and SIGINT stop it cleanly with exit code 0; logs go to stderr only (``LOG_LEVEL``,
``LOG_FORMAT=json``); stdout carries nothing but protocol lines.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import signal
import sys
from typing import Any

import anyio

from codex_app_bridge.cli._common import EXIT_USAGE, add_codex_compat_flags
from codex_app_bridge.server import BridgeServer, with_injection
from codex_app_bridge.sources import (
    DefaultAgent,
    EventSource,
    InjectableSource,
    ProducerSource,
    ScriptError,
    ScriptPacing,
    TurnSource,
    load_script,
)
from codex_app_bridge.transport import TransportKind, stdio_transport

__all__ = ["DEFAULT_AGENT_PACE", "parse_listen_url", "register", "run_server"]

logger = logging.getLogger(__name__)

DEFAULT_AGENT_PACE = 0.02
_STDIO = "stdio://"


def _valid_socket_address(text: str) -> bool:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        return False
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            return ipaddress.ip_address(host).version == 6
        except ValueError:
            return False
    try:
        return ipaddress.ip_address(host).version == 4
    except ValueError:
        return False


def parse_listen_url(text: str) -> str:
    """``--listen`` as the real server checks it; only ``stdio://`` is served here."""
    if text == _STDIO:
        return text
    if text.startswith("ws://"):
        if not _valid_socket_address(text.removeprefix("ws://")):
            raise argparse.ArgumentTypeError(
                f"invalid websocket --listen URL `{text}`; expected `ws://IP:PORT`"
            )
    elif not (text == "off" or text.startswith("unix://")):
        raise argparse.ArgumentTypeError(
            f"unsupported --listen URL `{text}`; expected `stdio://`, `unix://`, `unix://PATH`, "
            "`ws://IP:PORT`, or `off`"
        )
    raise argparse.ArgumentTypeError(
        f"--listen `{text}` is not supported by codex-app-bridge yet; use `stdio://`"
    )


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        type=parse_listen_url,
        default=_STDIO,
        metavar="URL",
        help="transport to serve (only stdio://, the default, for now)",
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
    add_codex_compat_flags(parser)
    parser.set_defaults(handler=_run)


def register(subparsers: Any) -> None:
    for name in ("serve", "app-server"):
        parser = subparsers.add_parser(
            name,
            help="serve the codex app-server protocol on stdio"
            if name == "serve"
            else argparse.SUPPRESS,
            description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
        )
        _add_arguments(parser)


def _build_source(args: argparse.Namespace) -> EventSource | TurnSource:
    if args.producer is not None:
        if args.script is not None:
            raise ValueError("--producer and --script cannot be combined")
        if args.pace is not None:
            raise ValueError("--pace does not apply to --producer (the producer paces itself)")
        producer = ProducerSource(args.producer)
        producer.check()
        return producer
    if args.script is None:
        if args.pace is None:
            return DefaultAgent(delay=DEFAULT_AGENT_PACE)
        try:
            delay = float(args.pace)
        except ValueError:
            delay = -1.0
        if not 0 <= delay < float("inf"):
            raise ValueError(
                f"invalid --pace {args.pace!r}: the built-in agent takes seconds >= 0 "
                "('recorded' needs --script)"
            )
        return DefaultAgent(delay=delay)
    source = load_script(args.script, lazy=True)
    if args.pace is not None:
        source = source.with_pacing(ScriptPacing.parse(args.pace))
    return source


async def run_server(
    source: EventSource | TurnSource,
    *,
    default_cwd: str | None = None,
    allow_inject: bool = False,
) -> None:
    """Serve one client on stdio until end of input or SIGTERM/SIGINT."""
    if allow_inject:
        source = InjectableSource(source)
    async with (
        BridgeServer(source, default_cwd=default_cwd) as server,
        anyio.create_task_group() as tg,
    ):
        if isinstance(source, InjectableSource):
            hub = server.hub
            server.table = with_injection(
                server.table, source, lambda thread_id: hub.get(thread_id) is not None
            )

        async def watch_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    logger.info("received %s; shutting down", signal.Signals(signum).name)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch_signals)
        async with stdio_transport() as streams:
            await server.serve_connection(streams, TransportKind.STDIO)
        tg.cancel_scope.cancel()


def _run(args: argparse.Namespace) -> int:
    try:
        source = _build_source(args)
    except (ScriptError, ValueError) as exc:
        print(f"codex-app-bridge serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    anyio.run(lambda: run_server(source, default_cwd=args.cwd, allow_inject=args.allow_inject))
    return 0
