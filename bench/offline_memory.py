#!/usr/bin/env python3
"""Peak memory and wall time of the offline commands (``history``, ``map``, ``inspect``) as the
rollout grows: they stream their input, so the peak must stay flat from the small rollout to the
large one (the ratio large/small is printed per command).

    .venv/bin/python bench/offline_memory.py [--lines 100000 1000000] [--deltas-per-turn 200]
                                             [--src DIR]

For each N a rollout of about N lines is written in a temporary directory, laid out as Codex
0.163.0 writes one (the plain capture's ``session_meta``, ``history_mode: paginated``), then
turns of: ``task_started``, the user message (``response_item`` and ``item_completed``), D
``agent_message_content_delta`` events, the assistant message (``response_item`` and
``item_completed``), ``token_count``, ``task_complete``. Beside it a fork segment (a
``session_meta`` whose ``history_base`` keeps every line of the big rollout, plus one turn), so
``history`` of the segment streams the base too. Each command runs as a child process with its
output discarded; peak RSS is the child's ``ru_maxrss`` (``wait4``), wall time is spawn to exit.
``history`` must hold the turns it prints: a control run over the same turns without deltas shows
what part of its peak that is.
``--src`` runs another checkout's ``src/`` (e.g. the code before a change) on the same files.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
META = ROOT / "tests" / "data" / "captures" / "plain" / "rollout.jsonl"
THREAD = "01a2cccc-0000-7000-8000-000000000001"
FORK = "01a2cccc-0000-7000-8000-000000000002"
STAMP = "2026-11-30T00:54:51.103Z"
FIXED_LINES = 8
"""Lines of a turn besides its deltas."""


class _Lines:
    """Writes rollout lines with increasing ordinals."""

    def __init__(self, out: object, ordinal: int = 0) -> None:
        self._write = out.write  # type: ignore[attr-defined]
        self.ordinal = ordinal

    def put(self, kind: str, payload: dict[str, object]) -> None:
        record = {"timestamp": STAMP, "ordinal": self.ordinal, "type": kind, "payload": payload}
        self._write(orjson.dumps(record) + b"\n")
        self.ordinal += 1

    def turn(self, thread: str, index: int, deltas: int) -> None:
        turn = f"01a2dddd-0000-7000-8000-{index:012d}"
        common = {"thread_id": thread, "turn_id": turn}
        question = f"question {index}"
        answer = f"answer {index}: " + "word " * 20
        self.put("event_msg", {"type": "task_started", "turn_id": turn, "started_at": 1796000000})
        user_content = [{"type": "input_text", "text": question}]
        self.put("response_item", {"type": "message", "role": "user", "content": user_content})
        user = {
            "type": "UserMessage",
            "id": f"u{index}",
            "content": [{"type": "text", "text": question, "text_elements": []}],
        }
        self.put("event_msg", {"type": "item_completed", **common, "item": user})
        message_id = f"msg_{index}"
        delta = {"type": "agent_message_content_delta", **common, "item_id": message_id}
        for k in range(deltas):
            self.put("event_msg", {**delta, "delta": f"w{k} "})
        out_content = [{"type": "output_text", "text": answer}]
        self.put(
            "response_item",
            {"type": "message", "id": message_id, "role": "assistant", "content": out_content},
        )
        agent = {
            "type": "AgentMessage",
            "id": message_id,
            "content": [{"type": "Text", "text": answer}],
        }
        self.put("event_msg", {"type": "item_completed", **common, "item": agent})
        usage = {
            "input_tokens": 100,
            "cached_input_tokens": 0,
            "output_tokens": 20,
            "reasoning_output_tokens": 0,
            "total_tokens": 120,
        }
        info = {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 1000}
        self.put("event_msg", {"type": "token_count", "info": info, "rate_limits": None})
        self.put(
            "event_msg",
            {
                "type": "task_complete",
                "turn_id": turn,
                "last_agent_message": answer,
                "completed_at": 1796000001,
                "duration_ms": 1000,
            },
        )


def _meta(thread: str, extra: dict[str, object] | None = None) -> dict[str, object]:
    first = orjson.loads(META.read_bytes().split(b"\n", 1)[0])
    payload: dict[str, object] = {**first["payload"], "id": thread, "session_id": thread}
    payload.update(extra or {})
    return payload


def write_rollouts(directory: Path, lines: int, deltas: int) -> tuple[Path, Path, int]:
    """The big rollout and its fork segment in ``directory``, as Codex names them; the number of
    turns of the big one."""
    per_turn = deltas + FIXED_LINES
    turns = max(1, (lines - 1) // per_turn)
    rollout = directory / f"rollout-2026-11-30T00-54-51-{THREAD}.jsonl"
    with rollout.open("wb") as out:
        writer = _Lines(out)
        writer.put("session_meta", _meta(THREAD))
        for index in range(turns):
            writer.turn(THREAD, index, deltas)
        end = writer.ordinal
    fork = directory / f"rollout-2026-11-30T00-54-52-{FORK}.jsonl"
    with fork.open("wb") as out:
        writer = _Lines(out, end)
        base = {"thread_id": THREAD, "end_ordinal_exclusive": end, "end_byte_offset": 0}
        writer.put("session_meta", _meta(FORK, {"forked_from_id": THREAD, "history_base": base}))
        writer.turn(FORK, turns, deltas)
    return rollout, fork, turns


def run(argv: list[str], src: Path, stdin: Path | None = None) -> tuple[float, int]:
    """(wall s, peak RSS kB) of ``python -m codex_app_bridge ARGV``, output discarded."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src)
    env.setdefault("LOG_LEVEL", "WARNING")
    started = time.perf_counter()
    with open(stdin or os.devnull, "rb") as given:
        proc = subprocess.Popen(
            [sys.executable, "-m", "codex_app_bridge", *argv],
            env=env,
            stdin=given,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        errors = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}: {errors.decode(errors='replace')}")
    return wall, usage.ru_maxrss


def response_items(rollout: Path) -> Path:
    """The rollout's ``response_item`` payloads, one a line: the input ``inspect turn-items``
    takes (given a whole rollout it says so and exits 1)."""
    items = rollout.with_name("response-items.jsonl")
    with rollout.open("rb") as source, items.open("wb") as out:
        for raw in source:
            line = orjson.loads(raw)
            if line.get("type") == "response_item":
                out.write(orjson.dumps(line["payload"]) + b"\n")
    return items


def commands(rollout: Path, fork: Path, turns: int) -> list[tuple[str, list[str], Path | None]]:
    """(label, argv, stdin file) of every command measured."""
    path = str(rollout)
    middle = str(turns // 2)
    return [
        ("history FILE", ["history", path], None),
        ("history (fork segment, base streamed)", ["history", str(fork)], None),
        ("history --items-view summary", ["history", "--items-view", "summary", path], None),
        ("map --no-timestamps FILE", ["map", "--no-timestamps", path], None),
        ("inspect user-positions FILE", ["inspect", "user-positions", path], None),
        (
            "inspect truncate --before-user N FILE",
            ["inspect", "truncate", "--before-user", middle, path],
            None,
        ),
        (
            "inspect truncate --last-fork-turns N -",
            ["inspect", "truncate", "--last-fork-turns", middle, "-"],
            rollout,
        ),
        ("inspect turn-items ITEMS", ["inspect", "turn-items", str(response_items(rollout))], None),
    ]


def mb(kb: int) -> str:
    return f"{kb / 1024:,.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--deltas-per-turn", type=int, default=200)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the src/ to run")
    args = parser.parse_args()
    sizes = sorted(args.lines)
    print(f"src: {args.src}")
    figures: dict[str, list[tuple[float, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as tmp:
        for lines in sizes:
            directory = Path(tmp) / str(lines)
            directory.mkdir()
            rollout, fork, turns = write_rollouts(directory, lines, args.deltas_per_turn)
            with rollout.open("rb") as f:
                count = sum(1 for _ in f)
            size = rollout.stat().st_size / 1e6
            print(f"rollout of {count:,} lines ({size:,.0f} MB, {turns:,} turns):")
            for label, argv, stdin in commands(rollout, fork, turns):
                wall, peak = run(argv, args.src, stdin)
                figures.setdefault(label, []).append((wall, peak))
                print(f"  {label:<42} peak RSS {mb(peak):>9}, {wall:6.1f} s wall", flush=True)
            for path in (rollout, fork):
                path.unlink()
        # What history holds is the turns it prints: the same turns without a single delta.
        directory = Path(tmp) / "control"
        directory.mkdir()
        lines = sizes[-1]
        turns = max(1, (lines - 1) // (args.deltas_per_turn + FIXED_LINES))
        control, _fork, _turns = write_rollouts(directory, 1 + turns * FIXED_LINES, 0)
        wall, peak = run(["history", str(control)], args.src)
        print(
            f"control: history of the same {turns:,} turns without deltas "
            f"({control.stat().st_size / 1e6:,.0f} MB): peak RSS {mb(peak)}, {wall:.1f} s wall"
        )
    if len(sizes) > 1:
        print(f"peak RSS ratio {sizes[-1]:,} / {sizes[0]:,} lines:")
        for label, runs in figures.items():
            print(f"  {label:<42} {runs[-1][1] / runs[0][1]:.2f}")


if __name__ == "__main__":
    main()
