"""A thread's pending server -> client requests (``server._pending_requests``): what they keep."""

from __future__ import annotations

import tracemalloc

from codex_app_bridge.listener import ListenerHub
from codex_app_bridge.protocol.core import Submission
from codex_app_bridge.rpc import ServerRequests
from codex_app_bridge.server._pending_requests import PendingRequests
from tests.listener.support import THREAD, RecordingOutbox, envelope, task_started

APPROVAL = {"type": "exec_approval_request", "call_id": "c", "command": ["ls"], "cwd": "/"}


def _no_source(submission: Submission) -> None:
    raise AssertionError(f"nothing is answered here: {submission}")


def test_a_pending_request_keeps_its_bytes_at_their_own_size() -> None:
    """An approval may wait for hours with its encoded request kept for replay: it is kept in an
    allocation of its length, not in orjson's buffer of at least 4 KiB (4,025 bytes held for a
    334-byte request before)."""
    hub = ListenerHub()
    outbox = RecordingOutbox(1)
    hub.add_connection(outbox)
    listener = hub.create_thread(THREAD)
    listener.subscribe(outbox)
    requests = PendingRequests(listener, ServerRequests(), _no_source)
    requests.feed(envelope(task_started()))
    tracemalloc.start()
    try:
        requests.feed(envelope(APPROVAL))
        [index] = [i for i, m in enumerate(outbox.received) if "id" in m and "method" in m]
        size = len(outbox.raw[index])
        requests.clean_up()  # the request's last reference is now the outbox's
        before, _ = tracemalloc.get_traced_memory()
        outbox.raw[index] = b""
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(requests) == 0
    assert before - after < size + 64, (before - after, size)
