"""Parsing envelopes keeps none of the strings it read (pydantic's JSON string cache holds keys
only): ids read back by ``thread/read`` must not outlive their threads (issue 23)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc, tracemalloc, orjson
from codex_app_bridge.protocol.core import parse_event_envelope

def line(i):
    turn = f"01a2aaaa-0000-7000-8000-{i:012d}"
    msg = {"type": "task_started", "turn_id": turn, "started_at": 1}
    return orjson.dumps({"id": turn, "msg": msg})

for i in range(100):  # the validator is built on first use: not part of the figure
    parse_event_envelope(line(i))
tracemalloc.start()
for i in range(1000, 2000):
    parse_event_envelope(line(i))
gc.collect()
print(tracemalloc.get_traced_memory()[0] / 1000)
"""


def test_parsed_envelopes_leave_no_strings_behind() -> None:
    # a process of its own: the cache and the validators are built once per process, in the
    # order a server builds them (an envelope parsed before anything else validated one)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    kept = float(out.stdout.strip())
    assert kept < 20, f"{kept:.0f} bytes kept per envelope parsed"
