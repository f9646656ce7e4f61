"""CODEX_HOME directories built from the real captures, laid out as 0.163.0 names its files."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from codex_app_bridge.storage._layout import INDEX_FILE
from tests.conftest import CAPTURES_DIR, DATA_DIR

CAPTURE_HOME = "/home/dev/.codex"
LIST_ORDER = DATA_DIR / "list_order"
"""Rollouts whose name times and ``session_meta`` times disagree, and the real binary's
``thread/list`` answers over them (``thread_list_0.163.0.json``)."""


def _meta(path: Path) -> dict[str, Any]:
    return orjson.loads(path.read_bytes().split(b"\n", 1)[0])["payload"]


def home_from_capture(capture: str, home: Path) -> dict[str, Path]:
    """Copy every rollout of ``capture`` into ``home/sessions/YYYY/MM/DD`` under its real name;
    the paths by rollout id (thread id, or segment id for a segment)."""
    placed: dict[str, Path] = {}
    for source in sorted((CAPTURES_DIR / capture).glob("rollout*.jsonl")):
        meta = _meta(source)
        created = datetime.fromisoformat(meta["timestamp"].replace("Z", "+00:00"))
        stamp = f"{created:%Y-%m-%dT%H-%M-%S}"
        segment = source.stem.split("_")[1] if "_" in source.stem else None
        thread_id = meta["id"]
        name = f"rollout-{stamp}-{thread_id}" + (f"_{segment}" if segment else "") + ".jsonl"
        day = home / "sessions" / f"{created:%Y}" / f"{created:%m}" / f"{created:%d}"
        day.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, day / name)
        placed[segment or thread_id] = day / name
    return placed


def captured_thread_read(capture: str, name: str = "thread_read.json") -> dict[str, Any]:
    return json.loads((CAPTURES_DIR / capture / name).read_text(encoding="utf-8"))["result"][
        "thread"
    ]


def files_held(below: Path) -> list[str]:
    """The paths starting with ``below`` that this process holds a descriptor on."""
    held: list[str] = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
        if target.startswith(str(below)):
            held.append(target)
    return held


def index_open(home: Path) -> bool:
    """Whether this process holds a descriptor on the stored-thread index database of the
    ``CODEX_HOME`` at ``home`` (its WAL files included)."""
    return bool(files_held(home / INDEX_FILE))


def list_order_home(home: Path) -> dict[str, Any]:
    """A copy of :data:`LIST_ORDER` under ``home`` with its files' modification times; the
    real binary's answers there."""
    shutil.copytree(LIST_ORDER / "sessions", home / "sessions")
    expected: dict[str, Any] = orjson.loads((LIST_ORDER / "thread_list_0.163.0.json").read_bytes())
    for rel, mtime in expected["mtimes"].items():
        os.utime(home / rel, (mtime, mtime))
    return expected
