"""The rollout writer: whole lines only, ordinals, torn tails left alone, typed errors."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from codex_app_bridge.mapping.thread_history import build_turns
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.v2 import dump_dict
from codex_app_bridge.storage import (
    CodexHome,
    RolloutWriter,
    StorageError,
    ThreadCatalog,
    load_rollout,
    session_meta,
)
from tests.conftest import CAPTURES_DIR
from tests.storage._homes import captured_thread_read

THREAD = "01a229f2-8bc4-7672-b5c6-4900240ba28b"
CREATED = datetime(2026, 11, 30, 0, 54, 51, 82000, tzinfo=UTC)


def _meta(thread_id: str = THREAD) -> core.SessionMeta:
    return session_meta(
        thread_id=thread_id,
        created=CREATED,
        cwd="/home/dev/project",
        originator="test",
        model_provider="mock",
    )


def _events(capture: str) -> list[core.EventMsg]:
    lines = core.iter_rollout_jsonl((CAPTURES_DIR / capture / "rollout.jsonl").read_bytes())
    return [line.payload for line in lines if isinstance(line, core.EventMsgLine)]


def _new_writer(home: Path, thread_id: str = THREAD) -> RolloutWriter:
    path = CodexHome(home).new_rollout_path(thread_id, CREATED.astimezone())
    return RolloutWriter.create(path, _meta(thread_id))


def test_session_meta_has_every_field_0_163_0_writes() -> None:
    captured = orjson.loads((CAPTURES_DIR / "plain" / "rollout.jsonl").read_bytes().split(b"\n")[0])
    written = orjson.loads(
        core.dump_rollout_line(core.SessionMetaLine(timestamp="t", payload=_meta()))
    )
    assert sorted(written["payload"]) == sorted(captured["payload"])
    assert written["payload"]["history_mode"] == "paginated"


def test_events_written_by_the_bridge_rebuild_the_real_turns(tmp_path: Path) -> None:
    writer = _new_writer(tmp_path)
    written = [writer.append_event(event) for event in _events("shell")]
    writer.close()
    assert all(written)
    loaded = load_rollout(writer.path)
    assert [line.ordinal for line in loaded.lines] == list(range(len(loaded.lines)))
    turns = build_turns(loaded.lines, interrupt_stale=True)
    assert [dump_dict(turn) for turn in turns] == captured_thread_read("shell")["turns"]


def test_events_codex_does_not_persist_are_not_written(tmp_path: Path) -> None:
    writer = _new_writer(tmp_path)
    assert not writer.append_event(core.WarningEvent(message="careful"))
    assert not writer.append_event(core.ErrorEvent(message="boom"))
    writer.close()
    assert len(load_rollout(writer.path).lines) == 1


def test_a_new_rollout_never_clobbers_an_existing_file(tmp_path: Path) -> None:
    _new_writer(tmp_path).close()
    with pytest.raises(StorageError):
        _new_writer(tmp_path)


def test_torn_last_line_is_reported_skipped_and_never_extended(tmp_path: Path) -> None:
    writer = _new_writer(tmp_path)
    events = _events("plain")
    for event in events[:3]:
        writer.append_event(event)
    writer.close()
    torn = b'{"timestamp":"2026-11-30T00:54:52.000Z","ordinal":4,"type":"event_msg","payl'
    with writer.path.open("ab") as raw:
        raw.write(torn)
    loaded = load_rollout(writer.path)
    assert loaded.torn_tail
    assert len(loaded.lines) == 4
    again = RolloutWriter.reopen(writer.path, next_ordinal=loaded.next_ordinal)
    for event in events[3:]:
        again.append_event(event)
    again.close()
    data = writer.path.read_bytes()
    assert torn + b"\n" in data  # kept byte for byte, on a line of its own
    reread = load_rollout(writer.path)
    assert not reread.torn_tail
    assert reread.bad_lines == [5]
    turns = build_turns(reread.lines, interrupt_stale=True)
    assert [dump_dict(turn) for turn in turns] == captured_thread_read("plain")["turns"]


def test_unknown_line_types_are_kept(tmp_path: Path) -> None:
    writer = _new_writer(tmp_path)
    writer.close()
    future = b'{"timestamp":"2030-01-01T00:00:00.000Z","ordinal":1,"type":"hologram","payload":{"x":1}}\n'
    with writer.path.open("ab") as raw:
        raw.write(future)
    loaded = load_rollout(writer.path)
    assert isinstance(loaded.lines[1], core.UnknownRolloutLine)
    assert core.dump_rollout_line(loaded.lines[1]) + b"\n" == future


def test_a_failed_write_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = _new_writer(tmp_path)
    events = _events("plain")
    writer.append_event(events[0])
    before = writer.path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        real_write(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(StorageError) as raised:
        writer.append_event(events[1])
    assert "No space left on device" in str(raised.value)
    assert writer.path.read_bytes() == before
    monkeypatch.setattr(os, "write", real_write)
    writer.append_event(events[1])  # the writer goes on once the disk has room again
    writer.close()
    loaded = load_rollout(writer.path)
    assert not loaded.torn_tail
    assert not loaded.bad_lines
    assert len(loaded.lines) == 3


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_directory_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions").chmod(0o500)
    try:
        with pytest.raises(StorageError) as raised:
            _new_writer(tmp_path)
        assert "Permission denied" in str(raised.value)
    finally:
        (tmp_path / "sessions").chmod(0o700)


def test_a_directory_in_the_way_is_a_storage_error(tmp_path: Path) -> None:
    # (works as root too): sessions/ is a file, so nothing can be created under it
    (tmp_path / "sessions").write_text("not a directory")
    with pytest.raises(StorageError) as raised:
        _new_writer(tmp_path)
    assert raised.value.errno is not None
    assert str(tmp_path / "sessions") in str(raised.value)


def test_two_writers_on_one_file_interleave_whole_lines(tmp_path: Path) -> None:
    first = _new_writer(tmp_path)
    second = RolloutWriter.reopen(first.path, next_ordinal=1000)
    events = _events("shell")
    barrier = threading.Barrier(2)

    def run(writer: RolloutWriter) -> None:
        barrier.wait(timeout=60)
        for _ in range(50):
            for event in events:
                writer.append_event(event)

    workers = [threading.Thread(target=run, args=(w,)) for w in (first, second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    first.close()
    second.close()
    loaded = load_rollout(first.path)
    assert not loaded.torn_tail
    assert not loaded.bad_lines
    assert len(loaded.lines) == 1 + 2 * 50 * len(events)


def test_two_bridges_on_one_home_write_their_own_threads(tmp_path: Path) -> None:
    other = "01a229f2-8bc4-7672-b5c6-4900240ba28c"
    one, two = _new_writer(tmp_path), _new_writer(tmp_path, other)
    for event in _events("plain"):
        one.append_event(event)
        two.append_event(event)
    one.close()
    two.close()
    threads = ThreadCatalog(CodexHome(tmp_path)).threads()
    assert sorted(thread.thread_id for thread in threads) == sorted([THREAD, other])
