"""The capture oracle: a real 0.163.0 rollout through ``map`` gives what the real server sent.

For every capture in ``tests/data/captures`` and every thread in it, the thread's rollout files
are fed through ``map`` (in process) and compared with the notifications the real server wrote
for that thread during its turns: same methods, same params, same order (``emittedAtMs``
aside; ids are the captured ones, so they compare as they are).

What a rollout cannot reproduce, because it is not in the file, is left out of the comparison:

* ``item/started``: rollouts persist ``item_completed`` only;
* every delta (``item/agentMessage/delta``, ``item/reasoning/summaryTextDelta`` /
  ``summaryPartAdded`` / ``textDelta``, ``item/commandExecution/outputDelta``,
  ``item/fileChange/patchUpdated``, ``item/plan/delta``): not persisted;
* ``warning`` and ``error``: ``warning``, ``error`` and ``stream_error`` events are not persisted
  (the failed turn itself is: ``task_complete.error``, which the comparison covers);
* ``turn/diff/updated``, ``turn/plan/updated``: not persisted (none occurs in the captures);
* ``thread/readState/changed``: server read-state bookkeeping for the connection that started
  the turn, driven by no core event (the server's concern, not the listener's);
* everything outside a turn (``thread/started``, ``deprecationNotice``,
  ``remoteControl/status/changed``, the ``thread/status/changed`` pair and ``thread/reverted`` of
  ``thread/revert``): answers to requests, not events.

Those are covered instead by table-driven tests from the spec's examples: the rows and the
lifecycle tests here (``warning``, ``error``, ``stream_error``, diff, plan, status), the item
generation tests (``item/started``), and the mapper's own tests (deltas, item shapes).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from codex_app_bridge.cli._common import iter_lines
from codex_app_bridge.cli._map import MapOptions, map_lines
from tests.conftest import CAPTURE_NAMES, CAPTURES_DIR

NOT_IN_ROLLOUTS = frozenset(
    {
        "item/started",
        "item/agentMessage/delta",
        "item/reasoning/summaryTextDelta",
        "item/reasoning/summaryPartAdded",
        "item/reasoning/textDelta",
        "item/commandExecution/outputDelta",
        "item/fileChange/patchUpdated",
        "item/plan/delta",
        "warning",
        "error",
        "turn/diff/updated",
        "turn/plan/updated",
        "thread/readState/changed",
    }
)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def real_turn_notifications(capture: str) -> dict[str, list[dict[str, Any]]]:
    """Per thread, the notifications the real server sent during that thread's turns.

    A turn runs from the ``thread/status/changed`` that precedes its ``turn/started`` to its
    ``turn/completed``; notifications without a ``threadId`` (``account/rateLimits/updated``)
    belong to the turn they were sent in.
    """
    lines = _jsonl(CAPTURES_DIR / capture / "notifications.jsonl")
    notifications = [line for line in lines if "method" in line and "id" not in line]
    by_thread: dict[str, list[dict[str, Any]]] = {}
    current: str | None = None
    for index, note in enumerate(notifications):
        params: dict[str, Any] = note.get("params") or {}
        thread_id = params.get("threadId")
        following = notifications[index + 1]["method"] if index + 1 < len(notifications) else None
        if note["method"] == "thread/status/changed" and following == "turn/started":
            current = thread_id
        if current is not None and thread_id in (current, None):
            by_thread.setdefault(current, []).append({"method": note["method"], "params": params})
        if note["method"] == "turn/completed":
            current = None
    return by_thread


def rollouts_by_thread(capture: str) -> dict[str, list[Path]]:
    """Rollout files per thread id (``session_meta.id``), main file first."""
    files: dict[str, list[Path]] = {}
    for path in sorted(
        (CAPTURES_DIR / capture).glob("rollout*.jsonl"),
        key=lambda p: (p.name != "rollout.jsonl", p.name),
    ):
        thread_id = _jsonl(path)[0]["payload"]["id"]
        files.setdefault(thread_id, []).append(path)
    return files


def map_file(path: Path, options: MapOptions | None = None) -> tuple[list[dict[str, Any]], int]:
    out = io.BytesIO()
    with path.open("rb") as stream:
        bad = anyio.run(map_lines, iter_lines(stream), options or MapOptions(timestamps=False), out)
    return [orjson.loads(line) for line in out.getvalue().splitlines()], bad


def comparable(notifications: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for n in notifications if n["method"] not in NOT_IN_ROLLOUTS]


CASES = [
    (capture, thread_id) for capture in CAPTURE_NAMES for thread_id in rollouts_by_thread(capture)
]


@pytest.mark.parametrize(("capture", "thread_id"), CASES, ids=[f"{c}:{t[-4:]}" for c, t in CASES])
def test_rollout_through_map_gives_what_the_real_server_sent(capture: str, thread_id: str) -> None:
    expected = comparable(real_turn_notifications(capture).get(thread_id, []))
    main = rollouts_by_thread(capture)[thread_id][0]
    mapped, bad = map_file(main)
    assert bad == 0
    assert comparable(mapped) == expected
    assert expected, "every captured thread ran at least one turn"


def test_every_capture_takes_part_in_the_oracle() -> None:
    assert {c for c, _ in CASES} == set(CAPTURE_NAMES)
    assert len(CASES) == len(CAPTURE_NAMES) + 1  # revert_fork also forks a second thread


def test_map_stays_in_step_with_the_real_item_completed_order() -> None:
    # the comparison above is only as strong as the items in it: the captures hold 20+ items
    total = sum(
        1
        for capture, thread_id in CASES
        for n in real_turn_notifications(capture).get(thread_id, [])
        if n["method"] == "item/completed"
    )
    assert total >= 20


def test_revert_segment_reports_its_reapplied_service_tier_as_a_change() -> None:
    """Known deviation. After ``thread/revert`` the new runtime applies its settings twice; the
    second report adds ``service_tier: "default"``. The real server compares its live config
    snapshot (which did not change) and sends nothing; the rollout only has the payloads, so
    ``map`` reports the difference it sees."""
    segments = rollouts_by_thread("revert_fork")
    main_thread = next(t for t, files in segments.items() if len(files) > 1)
    segment = segments[main_thread][1]
    mapped, bad = map_file(segment)
    assert bad == 0
    assert [n["method"] for n in mapped] == ["thread/settings/updated"]
    assert mapped[0]["params"]["threadSettings"]["serviceTier"] == "default"
    real = _jsonl(CAPTURES_DIR / "revert_fork" / "notifications.jsonl")
    assert not any(line.get("method") == "thread/settings/updated" for line in real)
