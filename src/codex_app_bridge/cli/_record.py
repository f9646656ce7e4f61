"""codex-app-bridge record --out DIR -- COMMAND...: record a real app-server session as a fixture.

The command runs COMMAND (``codex app-server`` and its flags) and sits between it and the client
that started this process: every line the client writes on stdin goes to COMMAND's stdin and
every line COMMAND writes on stdout comes back, unchanged (the conformance tee, ``tee.run``);
stderr is COMMAND's own. When COMMAND's output ends (the client closed stdin, or COMMAND
exited), DIR holds:

* ``transcript.jsonl``: every line both ways, ``{"dir": "c2s" | "s2c", "line": <the message>}``
  after a ``{"dir": "start", "argv": [...]}`` line;
* ``script.jsonl``: the core events of the first thread the session showed (thread/start,
  thread/resume or thread/fork answered with a thread whose ``path`` is its rollout), read from
  that rollout by the rules ``--script ROLLOUT`` replays it with (``sources.RolloutReader``), as
  event envelopes ``{"timestamp", "id", "msg"}``, plus what the rollout does not keep and the
  client saw (``LiveItems``: each item's ``item_started`` and streamed deltas, before its
  ``item_completed``; a retried failure's ``stream_error`` after the item completed before it;
  a turn's final ``error`` before its end): ``serve --script DIR/script.jsonl`` plays the
  recorded turns to a client that starts a thread and its turns again, with live ids;
* ``script-<thread id>.jsonl``: the same for every further thread.

A thread with no rollout (ephemeral, or no turn ever ran) gets no script; stderr says so. Ctrl-C
waits for COMMAND to finish its files and writes what was recorded.

Exit status: COMMAND's; 2 when COMMAND is missing or DIR cannot be written; 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import base64
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import orjson

from codex_app_bridge.cli._flags import EXIT_USAGE

__all__ = ["LiveItems", "live_items", "register", "rollout_script", "transcript_rollouts"]

_COMMAND = "record"
_EXIT_INTERRUPTED = 130
_THREAD_METHODS = frozenset({"thread/start", "thread/resume", "thread/fork"})
_ENTRY_KINDS = frozenset({"event_msg", "response_item"})


def _object(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def transcript_rollouts(transcript: Path) -> list[tuple[str, str | None]]:
    """``(thread id, rollout path or None)`` of every thread a session's answers showed (to
    ``thread/start``, ``thread/resume`` and ``thread/fork``), in order of first appearance."""
    methods: dict[object, str] = {}
    threads: dict[str, str | None] = {}
    with transcript.open("rb") as stream:
        for raw in stream:
            record = orjson.loads(raw)
            line = record.get("line")
            if not isinstance(line, dict):
                continue
            message = cast(dict[str, Any], line)
            if record.get("dir") == "c2s" and message.get("method") in _THREAD_METHODS:
                methods[message.get("id")] = message["method"]
            elif record.get("dir") == "s2c" and "method" not in message:
                if methods.pop(message.get("id"), None) is None:
                    continue
                result = _object(message.get("result"))
                fields = _object(result.get("thread"))
                thread_id, path = fields.get("id"), fields.get("path")
                if isinstance(thread_id, str) and thread_id not in threads:
                    threads[thread_id] = path if isinstance(path, str) and path else None
    return list(threads.items())


# What an item looked like when core started it, by core item type: the fields its completion
# filled in, reset (a rollout keeps only the completed item).
_STARTED_SHAPES: Final[dict[str, dict[str, object]]] = {
    "AgentMessage": {"content": []},
    "Reasoning": {"summary_text": [], "raw_content": []},
    "Plan": {"text": ""},
    "CommandExecution": {
        "status": "in_progress",
        "aggregated_output": None,
        "exit_code": None,
        "duration": None,
    },
    "FileChange": {"status": "in_progress"},
}

# The streaming notifications a rollout does not keep, as the core events they were mapped
# from (the mapper's delta rows read backwards): method -> (event type, event fields from
# the notification's params).
_DeltaFields = Callable[[dict[str, Any]], dict[str, object]]
_DELTAS: Final[dict[str, tuple[str, _DeltaFields]]] = {
    "item/agentMessage/delta": (
        "agent_message_content_delta",
        lambda p: {"item_id": p["itemId"], "delta": p["delta"]},
    ),
    "item/plan/delta": ("plan_delta", lambda p: {"item_id": p["itemId"], "delta": p["delta"]}),
    "item/reasoning/summaryTextDelta": (
        "reasoning_content_delta",
        lambda p: {
            "item_id": p["itemId"],
            "delta": p["delta"],
            "summary_index": p.get("summaryIndex", 0),
        },
    ),
    "item/reasoning/textDelta": (
        "reasoning_raw_content_delta",
        lambda p: {
            "item_id": p["itemId"],
            "delta": p["delta"],
            "content_index": p.get("contentIndex", 0),
        },
    ),
    "item/reasoning/summaryPartAdded": (
        "agent_reasoning_section_break",
        lambda p: {"item_id": p["itemId"], "summary_index": p.get("summaryIndex", 0)},
    ),
    "item/commandExecution/outputDelta": (
        "exec_command_output_delta",
        lambda p: {
            "call_id": p["itemId"],
            "stream": "stdout",
            "chunk": base64.b64encode(str(p["delta"]).encode()).decode("ascii"),
        },
    ),
}


@dataclass(slots=True)
class LiveItems:
    """What a thread's client saw of its items that its rollout does not keep: which items were
    started live, and each item's streamed deltas as core events (in order)."""

    started: set[str] = field(default_factory=set[str])
    deltas: dict[str, list[dict[str, object]]] = field(
        default_factory=dict[str, list[dict[str, object]]]
    )
    errors: dict[str, list[dict[str, object]]] = field(
        default_factory=dict[str, list[dict[str, object]]]
    )
    """By turn id: the ``error`` events of its final failures (``willRetry`` false), which end
    up before the turn's end."""
    retries: dict[str, list[dict[str, object]]] = field(
        default_factory=dict[str, list[dict[str, object]]]
    )
    """The ``stream_error`` events of retried failures (``willRetry`` true), by the item the
    client saw completed last before each (its turn's id when none was)."""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _core_error_info(info: object) -> object:
    """The core ``codex_error_info`` a v2 ``codexErrorInfo`` was made from (the mapper's
    camelCasing undone)."""
    if isinstance(info, str):
        return _snake(info)
    fields = _object(info)
    if not fields:
        return None
    return {
        _snake(key): _core_error_info(value) if _object(value) else value
        for key, value in fields.items()
    }


def live_items(transcript: Path, thread_id: str) -> LiveItems:
    """The ``LiveItems`` of ``thread_id`` in a transcript's server-to-client notifications."""
    seen = LiveItems()
    last: dict[str, str] = {}  # turn id -> the item last seen completed in it
    with transcript.open("rb") as stream:
        for raw in stream:
            record = orjson.loads(raw)
            line = record.get("line")
            if record.get("dir") != "s2c" or not isinstance(line, dict):
                continue
            message = cast(dict[str, Any], line)
            params = message.get("params")
            if "id" in message or not isinstance(params, dict):
                continue
            fields = cast(dict[str, Any], params)
            if fields.get("threadId") != thread_id:
                continue
            method = message.get("method")
            if method == "item/started":
                item_id = _object(fields.get("item")).get("id")
                if isinstance(item_id, str):
                    seen.started.add(item_id)
            elif method == "item/completed":
                last[str(fields.get("turnId"))] = str(_object(fields.get("item")).get("id"))
            elif method == "error":
                error = _object(fields.get("error"))
                turn_id = str(fields.get("turnId"))
                event = {
                    "type": "error",
                    "message": error.get("message", ""),
                    "codex_error_info": _core_error_info(error.get("codexErrorInfo")),
                }
                if fields.get("willRetry") is True:
                    event["type"] = "stream_error"
                    event["additional_details"] = error.get("additionalDetails")
                    seen.retries.setdefault(last.get(turn_id, turn_id), []).append(event)
                else:
                    seen.errors.setdefault(turn_id, []).append(event)
            elif isinstance(method, str) and method in _DELTAS:
                kind, build = _DELTAS[method]
                event: dict[str, object] = {"type": kind}
                if kind != "exec_command_output_delta":
                    event.update(thread_id=thread_id, turn_id=fields.get("turnId"))
                event.update(build(fields))
                seen.deltas.setdefault(str(fields.get("itemId")), []).append(event)
    return seen


def rollout_script(rollout: Path, live: LiveItems | None = None) -> Iterator[bytes]:
    """The script lines (``{"timestamp", "id", "msg"}``, newline-ended) of a rollout's core
    events, by ``RolloutReader``'s rules, with what ``live`` adds before each completed item
    (its ``item_started`` and deltas); ``ScriptError`` / ``RolloutLineError`` on a bad line."""
    from codex_app_bridge.protocol.core import EventEnvelope, dump_event_msg
    from codex_app_bridge.sources import TURN_END_TYPES, RolloutReader, recorded_item_events
    from codex_app_bridge.sources._rollout import RolloutEntry, rollout_line

    reader = RolloutReader()
    stamps: dict[int, object] = {}
    name = str(rollout)
    seen = live or LiveItems()

    def line_of(stamp: object, turn_id: str, msg: bytes) -> bytes:
        head = orjson.dumps({"timestamp": stamp, "id": turn_id})[:-1]
        return head + b',"msg":' + msg + b"}\n"

    def before(stamp: object, turn_id: str, completed: dict[str, Any]) -> Iterator[bytes]:
        item = cast(dict[str, Any], completed.get("item") or {})
        item_id = item.get("id")
        if not isinstance(item_id, str):
            return
        if item_id in seen.started:
            shape = {**item, **_STARTED_SHAPES.get(str(item.get("type")), {})}
            started = {
                "type": "item_started",
                "thread_id": completed.get("thread_id"),
                "turn_id": completed.get("turn_id"),
                "item": shape,
                "started_at_ms": completed.get("started_at_ms"),
            }
            yield line_of(stamp, turn_id, orjson.dumps(started))
        for delta in seen.deltas.pop(item_id, []):
            yield line_of(stamp, turn_id, orjson.dumps(delta))

    def lines(entries: list[RolloutEntry]) -> Iterator[bytes]:
        for entry in entries:
            stamp = stamps.pop(entry.number, None)
            envelopes: list[EventEnvelope] = []
            if entry.envelope is not None:
                envelopes.append(entry.envelope)
            elif entry.item is not None:  # a turn without item events: what core records
                events = recorded_item_events(
                    entry.item, thread_id=reader.thread_id or "", turn_id=entry.turn_id, at_ms=0
                )
                envelopes.extend(EventEnvelope(id=entry.turn_id, msg=e) for e in events)
            for envelope in envelopes:
                msg = dump_event_msg(envelope.msg)
                kind = envelope.msg.type
                item_id: object = None
                if kind == "item_completed":
                    completed = orjson.loads(msg)
                    item_id = _object(completed.get("item")).get("id")
                    yield from before(stamp, envelope.id, completed)
                elif kind in TURN_END_TYPES:
                    for error in seen.errors.pop(envelope.id, []):
                        yield line_of(stamp, envelope.id, orjson.dumps(error))
                yield line_of(stamp, envelope.id, msg)
                anchor = item_id if kind == "item_completed" else None
                if kind == "task_started":
                    anchor = envelope.id
                for retry in seen.retries.pop(str(anchor), []) if anchor is not None else []:
                    yield line_of(stamp, envelope.id, orjson.dumps(retry))

    with rollout.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            line = rollout_line(raw, number, name)
            if line["type"] in _ENTRY_KINDS:  # each gives one entry, now or at its turn's end
                stamps[number] = line.get("timestamp")
            yield from lines(reader.feed(number, line))
    yield from lines(reader.flush())


def _write_scripts(out: Path, transcript: Path) -> None:
    """A script per thread of the transcript that has a rollout (see the module docstring)."""
    first = True
    for thread_id, rollout in transcript_rollouts(transcript):
        if rollout is None or not Path(rollout).is_file():
            _say(f"thread {thread_id} has no rollout (ephemeral, or no turn ran): no script")
            continue
        target = out / ("script.jsonl" if first else f"script-{thread_id}.jsonl")
        try:
            with target.open("wb") as sink:
                sink.writelines(rollout_script(Path(rollout), live_items(transcript, thread_id)))
        except (OSError, ValueError) as exc:  # ScriptError and RolloutLineError are ValueErrors
            _say(f"thread {thread_id}: cannot make a script of {rollout}: {exc}")
            continue
        first = False
        _say(f"thread {thread_id}: {target} (from {rollout})")


def _say(message: str) -> None:
    print(f"{_COMMAND}: {message}", file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    from codex_app_bridge.conformance import tee

    command: list[str] = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        _say("no command to record: codex-app-bridge record --out DIR -- codex app-server")
        return EXIT_USAGE
    out = Path(args.out)
    transcript = out / "transcript.jsonl"
    try:
        out.mkdir(parents=True, exist_ok=True)
        transcript.write_bytes(b"")  # the tee appends: a new recording starts empty
    except OSError as exc:
        _say(f"cannot write {out}: {exc.strerror or exc}")
        return EXIT_USAGE
    interrupted = False
    try:
        status = tee.run(str(transcript), command)
    except FileNotFoundError as exc:
        _say(f"cannot run {command[0]}: {exc.strerror or exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        interrupted, status = True, _EXIT_INTERRUPTED
    _write_scripts(out, transcript)
    if interrupted:
        _say("interrupted")
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
