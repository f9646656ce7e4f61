"""codex-app-bridge record --out DIR -- COMMAND...: record a real app-server session as a fixture.

The command runs COMMAND (``codex app-server`` and its flags) and sits between it and its
clients, passing everything through unchanged:

* stdio (COMMAND's default, ``--listen stdio://``): every line the client that started this
  process writes on stdin goes to COMMAND's stdin and every line COMMAND writes on stdout comes
  back (the conformance tee, ``tee.run``); stderr is COMMAND's own. The recording ends when
  COMMAND's output ends (the client closed stdin, or COMMAND exited).
* a socket (``--listen ws://IP:PORT`` or ``--listen unix://PATH`` in COMMAND): record listens
  there itself, runs COMMAND on a private unix socket instead, and passes each client
  connection's frames both ways (``ws_tee.run``); with port 0 it says on stderr where it
  listens. The recording ends when COMMAND exits, or on SIGINT / SIGTERM (passed on to COMMAND).
  A COMMAND with ``--ws-auth`` is refused: record's own listener has no authentication.

DIR then holds:

* ``transcript.jsonl``: every message both ways, ``{"dir": "c2s" | "s2c", "line": <the
  message>}`` after a ``{"dir": "start", "argv": [...]}`` line (with a socket, each record names
  its connection, ``"conn": N``, between ``{"dir": "open"}`` and ``{"dir": "close"}`` records);
* ``script.jsonl``: the core events behind every turn the clients saw, in order (each thread's
  messages as the connection that saw it first received them), as event
  envelopes ``{"id": <turn id>, "msg": <EventMsg>}``: derived as the conformance suite derives
  them (``conformance._script.script_from_run``): the rollout's own payload where each thread's
  rollout (the ``path`` of the thread/start, thread/resume or thread/fork answer) has it (turn
  start and end, completed items, token counts), else the event rebuilt from the notification
  or server request the client saw (item starts, deltas, stream errors, approval and dynamic
  tool requests, turn diffs). ``serve --script DIR/script.jsonl`` plays it to the same client
  flow with the same notifications, raising the same server requests and waiting for the
  client's answers;
* ``script-<thread id>.jsonl``: with several threads, each thread's turns alone.

A thread with no rollout (ephemeral, or no turn ever ran) is said on stderr, and so is each
notification no core event is known for. Ctrl-C waits for COMMAND to finish its files and writes
what was recorded.

Exit status: COMMAND's; 2 when COMMAND is missing, DIR cannot be written or the address cannot
be listened on; 130 after Ctrl-C; 143 after SIGTERM (passed on to COMMAND, whose files are then
turned into the script as after a normal end).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import orjson

from codex_app_bridge.cli._flags import EXIT_USAGE
from codex_app_bridge.conformance.tee import EXIT_TERMINATED

__all__ = ["register", "session_script", "transcript_received", "transcript_rollouts"]

_COMMAND = "record"
_EXIT_INTERRUPTED = 130
_STOPPED = {_EXIT_INTERRUPTED: "interrupted", EXIT_TERMINATED: "stopped (SIGTERM)"}
_THREAD_METHODS = frozenset({"thread/start", "thread/resume", "thread/fork"})


def _object(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _records(transcript: Path) -> Iterator[dict[str, Any]]:
    """The transcript's records whose line is a JSON-RPC message."""
    with transcript.open("rb") as stream:
        for raw in stream:
            record = orjson.loads(raw)
            if isinstance(record.get("line"), dict):
                yield record


def transcript_rollouts(transcript: Path) -> list[tuple[str, str | None]]:
    """``(thread id, rollout path or None)`` of every thread a session's answers showed (to
    ``thread/start``, ``thread/resume`` and ``thread/fork``), in order of first appearance."""
    methods: dict[tuple[object, object], str] = {}
    threads: dict[str, str | None] = {}
    for record in _records(transcript):
        message = cast(dict[str, Any], record["line"])
        key = (record.get("conn"), message.get("id"))  # ids are per connection
        if record.get("dir") == "c2s" and message.get("method") in _THREAD_METHODS:
            methods[key] = message["method"]
        elif record.get("dir") == "s2c" and "method" not in message:
            if methods.pop(key, None) is None:
                continue
            fields = _object(_object(message.get("result")).get("thread"))
            thread_id, path = fields.get("id"), fields.get("path")
            if isinstance(thread_id, str) and thread_id not in threads:
                threads[thread_id] = path if isinstance(path, str) and path else None
    return list(threads.items())


def transcript_received(transcript: Path) -> list[dict[str, Any]]:
    """What the server sent (the ``s2c`` lines), in order, each thread's messages once: with
    several connections (a listening server), a thread's messages are those of the connection
    that saw the thread first (the others get copies, and replays of their own on resume), and a
    message about no thread is kept from the connection the last kept message came from."""
    received: list[dict[str, Any]] = []
    owners: dict[str, object] = {}
    last: object = None
    for record in _records(transcript):
        if record.get("dir") != "s2c":
            continue
        message = cast(dict[str, Any], record["line"])
        conn = record.get("conn")
        thread_id = _object(message.get("params")).get("threadId")
        if isinstance(thread_id, str):
            if owners.setdefault(thread_id, conn) != conn:
                continue
            last = conn
        elif received and conn != last:
            continue
        received.append(message)
    return received


def _of_thread(message: dict[str, Any], thread_id: str) -> bool:
    """A message about ``thread_id``, or about no thread (rate limits)."""
    return _object(message.get("params")).get("threadId") in (thread_id, None)


def session_script(
    transcript: Path, thread_id: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The script lines (``{"id": turn id, "msg": EventMsg}``) that make a faithful server send
    the transcript's turn notifications again, and what could not be derived: the conformance
    derivation (``script_from_run``) over what the client received and every thread's rollout.
    With ``thread_id``, that thread's turns only."""
    from codex_app_bridge.conformance._script import script_from_run

    received = transcript_received(transcript)
    if thread_id is not None:
        received = [m for m in received if _of_thread(m, thread_id)]
    rollouts: list[list[dict[str, Any]]] = []
    for _, path in transcript_rollouts(transcript):
        if path is not None and Path(path).is_file():
            with Path(path).open("rb") as stream:
                rollouts.append([orjson.loads(raw) for raw in stream if raw.strip()])
    derived = script_from_run(received, rollouts)
    return derived.envelopes, derived.notes


def _write(target: Path, envelopes: list[dict[str, Any]]) -> None:
    with target.open("wb") as sink:
        sink.writelines(orjson.dumps(envelope) + b"\n" for envelope in envelopes)


def _write_scripts(out: Path, transcript: Path) -> None:
    """The session's script, and one per thread when there are several (module docstring)."""
    threads = transcript_rollouts(transcript)
    for thread_id, rollout in threads:
        if rollout is None or not Path(rollout).is_file():
            _say(f"thread {thread_id} has no rollout (ephemeral, or no turn ran)")
    try:
        envelopes, notes = session_script(transcript)
        if not envelopes:
            _say("no turn to replay: no script")
            return
        _write(out / "script.jsonl", envelopes)
        for note in notes:
            _say(f"script: {note}")
        _say(f"{out / 'script.jsonl'}: {len(envelopes)} events")
        if len(threads) < 2:
            return
        for thread_id, _ in threads:
            envelopes, _notes = session_script(transcript, thread_id)
            if envelopes:
                _write(out / f"script-{thread_id}.jsonl", envelopes)
    except (OSError, ValueError) as exc:  # a rollout line that is not JSON
        _say(f"cannot make a script: {exc}")


def _say(message: str) -> None:
    print(f"{_COMMAND}: {message}", file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    from codex_app_bridge.conformance import tee, ws_tee

    command: list[str] = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        _say("no command to record: codex-app-bridge record --out DIR -- codex app-server")
        return EXIT_USAGE
    try:
        address = ws_tee.listen_address(command)
    except ValueError as exc:
        _say(str(exc))
        return EXIT_USAGE
    out = Path(args.out)
    transcript = out / "transcript.jsonl"
    try:
        out.mkdir(parents=True, exist_ok=True)
        transcript.write_bytes(b"")  # the tee appends: a new recording starts empty
    except OSError as exc:
        _say(f"cannot write {out}: {exc.strerror or exc}")
        return EXIT_USAGE
    try:
        if address is None:
            status = tee.run(str(transcript), command)
        else:
            status = ws_tee.run(str(transcript), command, address)
    except FileNotFoundError as exc:
        _say(f"cannot run {command[0]}: {exc.strerror or exc}")
        return EXIT_USAGE
    except OSError as exc:  # the listening address (in use, not ours)
        _say(f"cannot listen on {address.url if address else '?'}: {exc.strerror or exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        status = _EXIT_INTERRUPTED
    _write_scripts(out, transcript)
    if status in _STOPPED:
        _say(_STOPPED[status])
    return status


def register(subparsers: Any) -> None:
    """Add the ``record`` command."""
    parser = subparsers.add_parser(
        _COMMAND,
        help="sit between a client and a real codex app-server, pass everything through, and "
        "save the transcript and a script that replays the session",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    parser.add_argument("--out", metavar="DIR", required=True, help="where the recording goes")
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND",
        help="the server to record and its arguments (codex app-server ...)",
    )
    parser.set_defaults(handler=_run)
