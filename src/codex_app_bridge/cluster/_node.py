"""``ClusterNode``: one bridge server's membership of a cluster over NATS JetStream.

It is the server's ``SharedThreads`` (``server._shared``) and makes its source
(``ClusterSource``, ``_follow``):

* **A thread's core events are its log.** The node that plays a thread's turns (its owner: the
  node it was started or loaded on from storage) taps its runtime (``ThreadRuntime.tap``: every
  event its listener is given, deltas included, in order) and publishes each ``{id, msg}``
  envelope to ``codex.thread.<id>.events`` in the ``CODEX_THREADS`` stream (file storage). The
  tap only appends to the thread's buffer; the thread's publisher task encodes what is buffered
  and publishes it as messages of up to ``BATCH`` envelopes (JSON lines), one at a time (what
  piles up meanwhile goes in the next), each numbered (``Codex-Event``) and expecting the log's
  last sequence: a node that took the thread over writes a fence (an empty message) first, and
  the stream refuses a former owner's message after it (``_fence``, ``_lose``).
* **Leases**: an owner renews its thread's lease (a KV entry with the bucket's TTL); a node that
  follows a thread whose lease lapsed takes it, reads the log to its end, fences it and ends
  the turn that was in flight (``_take_over``).
* **Metadata** (settings, preview, timestamps, name) goes to the ``codex_threads`` KV bucket when
  the thread is loaded and whenever a turn starts or ends, expecting the entry's revision the
  owner wrote or read: a name or archive state another node wrote meanwhile is read and kept.
  A name or archive state another node changed is told to this server's clients
  (``attach``: every initialized connection, as the real server tells them).
* **Another node** that is asked for the thread (``thread/resume``: ``find``) reads the metadata
  and the log up to its last sequence (the history), then follows the log from the next
  sequence (``FollowerSession``), so its clients get the same ordered stream through the same
  listener and mapper.
* **Lists and reads**: every node keeps the bucket's entries (``ThreadIndex``, fed by a consumer
  of the bucket's stream) for ``thread/list`` (``rows``, ``listed``); ``thread/read`` of a
  thread not loaded here reads its entry and its log (``read``: nothing followed).
* **Control**: the owner answers ``codex.thread.<id>.control``: the submissions of the other
  nodes' clients (``_control``).

Boundary: NATS I/O and the server's hook; what a submission does is ``_control``'s, how a
followed thread's session behaves ``_follow``'s.
"""

from __future__ import annotations

import logging
import ssl
import uuid
from collections.abc import Awaitable, Callable, Hashable
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, cast

import anyio
import anyio.abc
import orjson

from codex_app_bridge.cluster._answers import (
    ANSWER_HEADER,
    ANSWERED,
    answer_line,
    is_answer,
    parse_answer,
)
from codex_app_bridge.cluster._control import apply_submission
from codex_app_bridge.cluster._follow import (
    ClusterSource,
    FollowerSession,
    control_error,
)
from codex_app_bridge.cluster._index import ThreadIndex
from codex_app_bridge.cluster._meta import meta_of_record, shared_thread
from codex_app_bridge.cluster._options import ClusterOptions, ClusterUnavailable
from codex_app_bridge.cluster._subjects import (
    EVENT_HEADER,
    INDEX_BUCKET,
    INDEX_OBJECT,
    LEASE_BUCKET,
    META_BUCKET,
    STREAM,
    STREAM_SUBJECTS,
    control_subject,
    error_reply,
    events_subject,
    ok_reply,
    unseen,
)
from codex_app_bridge.protocol.core import (
    SUBMISSION_ADAPTER,
    EventEnvelope,
    dump_event_envelope,
    parse_event_envelope,
)
from codex_app_bridge.protocol.jsonrpc import right_sized
from codex_app_bridge.server._runtime import HISTORY_EVENT_TYPES
from codex_app_bridge.sources import TURN_END_TYPES, TURN_START_TYPES

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription
    from nats.js.client import JetStreamContext
    from nats.js.kv import KeyValue
    from nats.js.object_store import ObjectStore

    from codex_app_bridge.server._shared import SharedThread
    from codex_app_bridge.server._threads import ThreadRecord
    from codex_app_bridge.sources import EventSource, TurnSource
    from codex_app_bridge.storage import RowFilter, ThreadRow

__all__ = ["ClusterNode"]

logger = logging.getLogger(__name__)

HISTORY_READ_TIMEOUT: Final = 30.0
"""Seconds a node waits for a thread's log to be read back (``find``)."""
FOLLOW_HEARTBEAT: Final = 1.0
"""Seconds between the heartbeats of a followed thread's consumer."""
BATCH: Final = 256
"""Most events in one message of the log (the events a runtime gave its listener in a row, as
JSON lines: one message, one acknowledgement for all of them)."""
_RETRY_AFTER: Final = 0.25
"""Seconds before a message the stream did not take is sent again."""
_META_TYPES: Final = TURN_START_TYPES | TURN_END_TYPES
EXPECTED_LAST: Final = "Nats-Expected-Last-Subject-Sequence"
STORE_TIMEOUT: Final = 5.0
"""Seconds a message of the log waits for the stream's answer before it is sent again."""
FENCE_TRIES: Final = 5
"""Times a node taking a thread over writes its fence, reading what the former owner wrote
meanwhile between tries."""
SNAPSHOT_EVERY: Final = 10.0
"""Seconds between a node's looks at the index's head in the object store (``_keep_snapshot``)."""
SNAPSHOT_CHANGES: Final = 500
"""Bucket messages the head may lag behind a node's index before the node writes it again
(a joining node reads at most about that many entries before its first page)."""
BACKFILL_BATCH: Final = 256
"""Entries a node reads at a time after a head (``_backfill``)."""
SNAPSHOT_TIMEOUT: Final = 5.0
"""Seconds a joining node waits for the head (else it reads the whole bucket first)."""
WRONG_LAST_SEQUENCE: Final = 10071
"""JetStream's error code for a message whose expected last subject sequence is not the last."""


class _Log:
    """An owned thread's log as this node writes it: what its runtime gave its listener and
    is not published yet, and where the log stands."""

    __slots__ = ("buffer", "busy", "last_sequence", "record", "sent", "stored", "subject", "wake")

    def __init__(self, record: ThreadRecord, sent: int, last_sequence: int) -> None:
        self.record = record
        self.subject = events_subject(record.id)
        self.buffer: list[EventEnvelope | bytes] = []
        """Events, and answers' lines (``_answers``), in order."""
        self.sent = sent
        """Events of the thread's log before the buffer (the next is number ``sent + 1``)."""
        self.stored = sent
        """Events of the log up to its message ``last_sequence`` (the stream has them)."""
        self.last_sequence = last_sequence
        """The stream sequence of the log's last message (``0``: none): the next one is
        published expecting it (``Nats-Expected-Last-Subject-Sequence``)."""
        self.busy = False
        """A message of the log is being published."""
        self.wake: anyio.Event | None = None
        """Set when the buffer gets an event (``ClusterNode._publish`` waits on it)."""

    def append(self, envelope: EventEnvelope | bytes) -> None:
        buffer = self.buffer
        buffer.append(envelope)
        if len(buffer) == 1 and self.wake is not None:
            self.wake.set()


_WARM_ENVELOPE: Final = b'{"id":"warm","msg":{"type":"agent_message_delta","delta":"."}}'


def _warm_up() -> None:
    """What a node's first requests would otherwise load, loaded as it joins: the envelope's
    validator and serializer (about 0.1 s, once; else in the first turn whose events it
    publishes or follows), and the thread registry, which every request of a node needs (it
    holds the threads other nodes share: even a first ``thread/list`` builds it) and whose
    import was most of a fresh node's first ``thread/list`` (11 ms of 23 on a quiet machine,
    about 40 at load 10; a server without a cluster lists without it)."""
    import codex_app_bridge.server._registry  # noqa: F401  # pyright: ignore[reportUnusedImport]

    dump_event_envelope(parse_event_envelope(_WARM_ENVELOPE))


def _apply_entry(index: ThreadIndex, prefix: str, msg: Msg) -> int:
    """Apply a message of the metadata bucket's stream to the index; its sequence."""
    sequence = msg.metadata.sequence.stream
    thread_id = msg.subject[len(prefix) :]
    operation = (msg.headers or {}).get("KV-Operation")
    if operation in ("DEL", "PURGE") or not msg.data:
        index.remove(thread_id, sequence)
    else:
        index.put(thread_id, msg.data, sequence)
    return sequence


def _archived(entry: bytes) -> bool:
    try:
        return bool(orjson.loads(entry).get("archived"))
    except (orjson.JSONDecodeError, AttributeError):
        return False


def _tls_context(options: ClusterOptions) -> ssl.SSLContext | None:
    if not options.uses_tls:
        return None
    context = ssl.create_default_context(cafile=options.tls_ca)
    if options.tls_cert is not None:
        context.load_cert_chain(options.tls_cert, options.tls_key)
    return context


class ClusterNode:
    """This server's part of the cluster (see the module docstring). Use it as an async
    context manager around the ``BridgeServer`` it is given to (``shared=node``)."""

    def __init__(self, options: ClusterOptions) -> None:
        self.options = options
        self.name = options.name or "codex-app-bridge"
        self.failed_publishes = 0
        self.fenced = 0
        """Messages the stream refused because another node had written the log since."""
        self.published = 0
        self.lost_events = 0
        """Events the log lacked between what a followed thread had and a message after it."""
        self.duplicate_events = 0
        """Events of the log a followed thread had already (dropped, not applied twice)."""
        self._lease_ttl = options.lease_ttl
        self.retried = 0
        """Messages sent again (NATS away, or its JetStream recovering: the stream drops a
        copy it stored already)."""
        self._sent = 0
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._meta: KeyValue | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._idle: anyio.Event | None = None
        """Set when no owned thread has anything left to publish (``flush``)."""
        self._owned: dict[str, ThreadRecord] = {}
        self._logs: dict[str, _Log] = {}
        self._control: dict[str, Subscription] = {}
        self._after: dict[str, int] = {}
        """Followed threads -> the last sequence of the log this node has (read or taken)."""
        self._events: dict[str, int] = {}
        """Followed threads -> how many events of their log this node has applied."""
        self._consumers: dict[str, Subscription] = {}
        self.holder = f"{self.name}/{uuid.uuid4().hex[:12]}"
        """This process in the lease bucket (a restarted node is another holder)."""
        self._leases_kv: KeyValue | None = None
        self._leases: dict[str, int] = {}
        """Owned threads -> the revision of their lease this node last wrote."""
        self._following: dict[str, ThreadRecord] = {}
        """Followed threads loaded here: this node has interest and may take them over."""
        self._sessions: dict[str, FollowerSession] = {}
        self._caught_up: dict[str, tuple[int, anyio.Event]] = {}
        self._index = ThreadIndex()
        """Every thread's metadata entry, as the bucket's stream delivered it (``thread/list``)."""
        self._index_waiters: list[tuple[int, anyio.Event]] = []
        self._snapshots: ObjectStore | None = None
        self.snapshot_sequence: int | None = None
        """The bucket sequence of the index's head this node last read or wrote."""
        self._revisions: dict[str, int] = {}
        """Owned threads -> the revision of the metadata entry this node last wrote or read:
        the next is written expecting it (``_put_meta``), so that a name or archive state
        another node wrote meanwhile is kept, not overwritten."""
        self._archived: dict[str, bool] = {}
        """Owned threads -> their archive state as their entry last read has it."""
        self._ours: dict[str, bytes] = {}
        """Thread id -> the entry this node last wrote (its own change is no news to it), kept
        at its own size (``right_sized``: orjson's buffer is at least 4 KiB a thread)."""
        self._notify: Callable[[str, dict[str, Any]], None] | None = None
        self._complete = anyio.Event()
        self._backfilling = False
        """Set when the index holds every entry (read after a head: ``_backfill``)."""

    # --- life ---------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        import nats
        from nats.js.api import KeyValueConfig, StorageType
        from nats.js.errors import NotFoundError

        options = self.options
        credentials: dict[str, Any] = {}
        if options.creds is not None:
            credentials["user_credentials"] = options.creds
        if options.nkey_seed is not None:
            credentials["nkeys_seed"] = options.nkey_seed
        tls = _tls_context(options)
        if tls is not None:
            credentials["tls"] = tls
        try:
            # nats-py retries the first connection for ever (it reconnects for ever later)
            with anyio.fail_after(options.connect_timeout):
                nc = await self._connect(nats.connect, credentials)  # pyright: ignore[reportUnknownMemberType]
            js = self._js = nc.jetstream()  # pyright: ignore[reportUnknownMemberType]
            await self._ensure_stream(js)
        except ClusterUnavailable:
            raise
        except Exception as exc:
            reason = str(exc) or type(exc).__name__
            raise ClusterUnavailable(
                f"cannot join the cluster at {', '.join(options.servers)}: {reason} (is "
                "nats-server running there, with JetStream: -js?)"
            ) from exc
        self._nc = nc
        try:
            self._meta = await js.key_value(META_BUCKET)
        except NotFoundError:
            self._meta = await js.create_key_value(  # pyright: ignore[reportUnknownMemberType]
                KeyValueConfig(bucket=META_BUCKET, storage=StorageType.FILE, history=1)
            )
        try:
            self._leases_kv = await js.key_value(LEASE_BUCKET)
        except NotFoundError:
            self._leases_kv = await js.create_key_value(  # pyright: ignore[reportUnknownMemberType]
                KeyValueConfig(
                    bucket=LEASE_BUCKET,
                    storage=StorageType.FILE,
                    history=1,
                    ttl=options.lease_ttl,
                )
            )
        self._lease_ttl = (await self._leases_kv.status()).ttl or options.lease_ttl
        await self._load_snapshot()
        await self._watch_meta()
        _warm_up()
        group = self._task_group = anyio.create_task_group()
        await group.__aenter__()
        group.start_soon(self._lease_loop, name="cluster leases")
        group.start_soon(self._keep_snapshot, name="cluster index head")
        logger.info("cluster: node %s joined %s", self.name, ", ".join(options.servers))
        return self

    async def _connect(self, connect: Any, credentials: dict[str, Any]) -> Client:
        options = self.options
        client: Client = await connect(
            servers=list(options.servers),
            name=self.name,
            connect_timeout=int(max(1, options.connect_timeout)),
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.25,
            allow_reconnect=True,
            error_cb=self._nats_error,
            **credentials,
        )
        return client

    async def _ensure_stream(self, js: JetStreamContext) -> None:
        from nats.js.api import StorageType, StreamConfig
        from nats.js.errors import BadRequestError, NotFoundError

        config = StreamConfig(name=STREAM, subjects=list(STREAM_SUBJECTS), storage=StorageType.FILE)
        try:
            await js.stream_info(STREAM)
        except NotFoundError:
            try:
                await js.add_stream(config)  # pyright: ignore[reportUnknownMemberType]
            except BadRequestError:  # another node created it meanwhile
                await js.stream_info(STREAM)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group = self._task_group
        assert group is not None
        self._task_group = None
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await self.flush()
            await self._release_leases()
            await self._save_snapshot(0)
        group.cancel_scope.cancel()
        try:
            return await group.__aexit__(exc_type, exc, tb)
        finally:
            nc = self._nc
            if nc is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await nc.close()

    async def _nats_error(self, exc: Exception) -> None:
        logger.warning("cluster: %s", exc)

    def source(
        self,
        source: EventSource | TurnSource | None,
        factory: Callable[[], EventSource | TurnSource] | None,
    ) -> ClusterSource:
        """The node's source around the server's own (given, or made by ``factory`` on first
        use, else the built-in agent)."""

        def inner() -> EventSource | TurnSource:
            if source is not None:
                return source
            if factory is not None:
                return factory()
            from codex_app_bridge.sources import DefaultAgent

            return DefaultAgent()

        return ClusterSource(self, inner)

    @property
    def _group(self) -> anyio.abc.TaskGroup:
        if self._task_group is None:
            raise RuntimeError("the cluster node is not running (use it as a context manager)")
        return self._task_group

    # --- SharedThreads --------------------------------------------------------------------------

    def attach(self, notify: Callable[[str, dict[str, Any]], None]) -> None:
        self._notify = notify

    def loaded(self, record: ThreadRecord) -> None:
        runtime = record.runtime
        assert runtime is not None
        runtime.requests.relay = partial(self._relay, record.id)
        if record.id in self._after:
            self._following[record.id] = record
            runtime.follow()
            return
        if record.ephemeral:
            return  # nothing of it outlives this process: not shared
        self._owned[record.id] = record
        self._tap(record, 0, 0)
        self._group.start_soon(self._own, record)

    def _tap(self, record: ThreadRecord, sent: int, last_sequence: int) -> None:
        """Publish what an owned thread's runtime gives its listener, numbered from
        ``sent + 1``, after the log's message ``last_sequence``."""
        assert record.runtime is not None
        log = self._logs[record.id] = _Log(record, sent, last_sequence)
        record.runtime.tap = log.append
        self._group.start_soon(self._publish, log, name=f"cluster log {record.id}")

    def owns(self, thread_id: str) -> bool:
        """Whether this node holds the thread's lease (plays its turns, writes its log)."""
        return thread_id in self._leases

    def log_length(self, thread_id: str) -> int | None:
        """How many events of the thread's log this node has published (owned) or applied
        (followed); ``None``: neither."""
        log = self._logs.get(thread_id)
        if log is not None:
            return log.sent + len(log.buffer)
        return self._events.get(thread_id)

    def follows(self, thread_id: str) -> bool:
        return thread_id in self._after

    async def find(self, thread_id: str) -> SharedThread | None:
        from nats.js.errors import KeyNotFoundError

        assert self._meta is not None
        assert self._js is not None
        try:
            entry = await self._meta.get(thread_id)
        except KeyNotFoundError:
            return None
        if entry.value is None or _archived(entry.value):
            return None  # archived: resumed once unarchived, as a stored thread
        last = await self._last_sequence(thread_id)
        history, self._events[thread_id] = await self._read_log(thread_id, last)
        self._after[thread_id] = last
        return shared_thread(entry.value, history)

    async def read(self, thread_id: str, *, history: bool) -> SharedThread | None:
        """``thread/read`` of a thread this node has not loaded: its metadata entry, and with
        ``history`` its log read to the end (nothing followed); ``playing`` while its lease is
        held (a turn left open is in progress there, not cut)."""
        from nats.js.errors import KeyNotFoundError

        assert self._meta is not None
        assert self._leases_kv is not None
        try:
            entry = await self._meta.get(thread_id)
        except KeyNotFoundError:
            return None
        if entry.value is None:
            return None
        if not history:
            return shared_thread(entry.value, [])
        events, _ = await self._read_log(thread_id, await self._last_sequence(thread_id))
        try:
            playing = (await self._leases_kv.get(thread_id)).value is not None
        except KeyNotFoundError:
            playing = False
        return shared_thread(entry.value, events, playing=playing)

    async def _last_sequence(self, thread_id: str) -> int:
        """The stream sequence of the thread's log's last message (``0``: none)."""
        from nats.js.errors import NotFoundError

        assert self._js is not None
        try:
            return (await self._js.get_last_msg(STREAM, events_subject(thread_id))).seq or 0
        except NotFoundError:
            return 0

    async def _read_log(self, thread_id: str, last: int) -> tuple[list[EventEnvelope], int]:
        """The thread's history events in its log, up to sequence ``last``, and how many events
        that is (each message's numbers checked: none applied twice, a gap counted)."""
        history: list[EventEnvelope] = []
        have = 0
        if not last:
            return history, have
        assert self._js is not None
        sub = await self._js.subscribe(events_subject(thread_id), ordered_consumer=True)
        try:
            with anyio.fail_after(HISTORY_READ_TIMEOUT):
                while True:
                    msg = await sub.next_msg(timeout=HISTORY_READ_TIMEOUT)
                    lines, have = self._unseen(thread_id, msg, have)
                    for line in lines:
                        if is_answer(line):
                            continue
                        envelope = parse_event_envelope(line)
                        if envelope.msg.type in HISTORY_EVENT_TYPES:
                            history.append(envelope)
                    if msg.metadata.sequence.stream >= last:
                        return history, have
        finally:
            await sub.unsubscribe()

    def _unseen(self, thread_id: str, msg: Msg, have: int) -> tuple[list[bytes], int]:
        """A log message: the events in it after the ``have`` events already applied, and how
        many are applied with them; a gap before them is logged and counted."""
        lines = msg.data.split(b"\n") if msg.data else []  # a fence holds none
        number = (msg.headers or {}).get(EVENT_HEADER)
        fresh, lost = unseen(lines, None if number is None else int(number), have)
        if lost:
            self.lost_events += lost
            logger.error(
                "cluster: thread %s: the log lacks events %d to %d",
                thread_id,
                have + 1,
                have + lost,
            )
        self.duplicate_events += len(lines) - len(fresh)
        return fresh, have + lost + len(fresh)

    # --- thread/list ----------------------------------------------------------------------------

    async def _load_snapshot(self) -> None:
        """Start the index from the nodes' head of it (one fetch), if there is one."""
        from nats.js.api import ObjectStoreConfig, StorageType
        from nats.js.errors import NotFoundError, ObjectNotFoundError

        js = self._js
        assert js is not None
        try:
            self._snapshots = await js.object_store(INDEX_BUCKET)
        except NotFoundError:
            self._snapshots = await js.create_object_store(  # pyright: ignore[reportUnknownMemberType]
                INDEX_BUCKET, ObjectStoreConfig(storage=StorageType.FILE)
            )
        try:
            with anyio.fail_after(SNAPSHOT_TIMEOUT):
                found = await self._snapshots.get(INDEX_OBJECT)
            self._index.load_head(found.data or b"")
        except ObjectNotFoundError:
            return
        except Exception as exc:  # replaced while read, unreadable: read the bucket instead
            logger.warning("cluster: thread index head not read: %s", exc)
            return
        self.snapshot_sequence = self._index.sequence

    async def _keep_snapshot(self) -> None:
        """Write the index's head again now and then, once it lags ``SNAPSHOT_CHANGES``
        messages behind what this node has read (every node does; the first one wins)."""
        while True:
            await anyio.sleep(SNAPSHOT_EVERY)
            await self._save_snapshot(SNAPSHOT_CHANGES)

    async def _save_snapshot(self, lag: int) -> None:
        """Write the index's head if the stored one lags more than ``lag`` messages behind
        this node's index (or there is none), once the index is complete."""
        from nats.js.api import ObjectMeta
        from nats.js.errors import ObjectNotFoundError

        store = self._snapshots
        index = self._index
        sequence = index.sequence
        if store is None or not sequence or not index.complete or not len(index):
            return
        try:
            try:
                stored = int((await store.get_info(INDEX_OBJECT)).description or 0)
            except ObjectNotFoundError:
                stored = 0
            self.snapshot_sequence = stored
            if sequence - stored <= lag or sequence <= stored:
                return
            meta = ObjectMeta(name=INDEX_OBJECT, description=str(sequence))
            await store.put(INDEX_OBJECT, index.head(), meta=meta)
            self.snapshot_sequence = sequence
        except Exception as exc:  # NATS away: the next look writes it
            logger.warning("cluster: thread index head not written: %s", exc)

    async def _watch_meta(self) -> None:
        """Keep every thread's metadata entry in the index: the bucket's stream, last value per
        key first, then each change, by an ordered consumer (made again from where it was after
        a NATS restart, like a followed thread's). After a head (``_load_snapshot``), that
        consumer starts past the head's sequence, and another reads the rest of the bucket
        (``_backfill``)."""
        from nats.js.api import ConsumerConfig, DeliverPolicy

        assert self._js is not None
        prefix = f"$KV.{META_BUCKET}."
        index = self._index

        async def on_entry(msg: Msg) -> None:
            thread_id = msg.subject[len(prefix) :]
            before = index.row(thread_id)
            sequence = _apply_entry(index, prefix, msg)
            index.sequence = max(index.sequence, sequence)
            row = index.row(thread_id)
            record = self._owned.get(thread_id) or self._following.get(thread_id)
            if record is not None and row is not None and row.name is not None:
                record.name = row.name  # a name set on another node (``renamed``)
            if before is not None and row is not None and self._ours.get(thread_id) != msg.data:
                self._changed(before, row)
            if self._index_waiters:
                waiting = [w for w in self._index_waiters if index.sequence >= w[0]]
                for w in waiting:
                    self._index_waiters.remove(w)
                    w[1].set()

        head = index.sequence
        start = (
            ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=head + 1)
            if head
            else ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT)
        )
        await self._js.subscribe(  # pyright: ignore[reportUnknownMemberType]
            f"{prefix}>",
            stream=f"KV_{META_BUCKET}",
            cb=on_entry,
            ordered_consumer=True,
            config=start,
            idle_heartbeat=FOLLOW_HEARTBEAT,
        )

    async def _backfill(self) -> None:
        """Read the bucket's entries a head left out (last value per key) by a pull consumer
        of its own, ``BACKFILL_BATCH`` at a time, until nothing is pending: the index is then
        ``complete``. In batches, so that the answers the node's other requests wait for
        (on the same connection) do not queue behind the whole bucket."""
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        js = self._js
        index = self._index
        assert js is not None
        prefix = f"$KV.{META_BUCKET}."
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=HISTORY_READ_TIMEOUT,
        )
        while not index.complete:
            try:
                sub = await js.pull_subscribe(
                    f"{prefix}>", stream=f"KV_{META_BUCKET}", config=config
                )
                try:
                    while True:
                        batch = await sub.fetch(BACKFILL_BATCH, timeout=HISTORY_READ_TIMEOUT)
                        for msg in batch:
                            _apply_entry(index, prefix, msg)
                        if not batch or batch[-1].metadata.num_pending == 0:
                            break
                finally:
                    await sub.unsubscribe()
            except Exception as exc:  # NATS away, the bucket empty: once again from its start
                from nats.errors import TimeoutError as FetchTimeout

                if isinstance(exc, FetchTimeout):
                    break  # nothing to deliver: an empty bucket
                logger.warning("cluster: thread metadata not read: %s", exc)
                await anyio.sleep(_RETRY_AFTER)
                continue
            break
        index.complete = True
        self._complete.set()

    def _changed(self, before: ThreadRow, row: ThreadRow) -> None:
        """Another node changed a thread's name or archive state: this server's clients are
        told as the real server tells its clients of a change (every initialized connection;
        the node that made it told its own)."""
        notify = self._notify
        if notify is None:
            return
        thread_id = row.thread_id
        if row.name is not None and row.name != before.name:
            notify("thread/name/updated", {"threadId": thread_id, "threadName": row.name})
        if row.archived != before.archived:
            method = "thread/archived" if row.archived else "thread/unarchived"
            notify(method, {"threadId": thread_id})

    async def _index_caught_up(self) -> None:
        """Wait until the index holds everything the bucket had when asked (what a node wrote
        before is listed by every node after): one round trip when it does already."""
        assert self._js is not None
        try:
            last = (await self._js.stream_info(f"KV_{META_BUCKET}")).state.last_seq
        except Exception as exc:  # NATS away: list what the index has
            logger.warning("cluster: thread metadata not checked: %s", exc)
            return
        if self._index.sequence >= last:
            return
        event = anyio.Event()
        waiter = (last, event)
        self._index_waiters.append(waiter)
        with anyio.move_on_after(HISTORY_READ_TIMEOUT):
            await event.wait()
        if waiter in self._index_waiters:
            self._index_waiters.remove(waiter)

    async def rows(
        self,
        where: RowFilter,
        *,
        by_updated: bool,
        descending: bool,
        after: tuple[int, str | None] | None,
        limit: int,
        skip: frozenset[str],
    ) -> list[ThreadRow]:
        """The cluster's threads as ``thread/list`` filters and sorts them (``ThreadIndex``;
        from a head, what it settles, else once the rest of the bucket is read)."""
        await self._index_caught_up()
        index = self._index
        found = index.rows(
            where, by_updated=by_updated, descending=descending, after=after, limit=limit, skip=skip
        )
        if not index.complete and not self._backfilling:
            # the rest is read once the first page is answered (not as the node joins: the
            # first page would wait behind it)
            self._backfilling = True
            self._group.start_soon(self._backfill, name="cluster index backfill")
        if found is None:  # the head does not settle it: wait for the rest of the bucket
            with anyio.move_on_after(HISTORY_READ_TIMEOUT):
                await self._complete.wait()
            index.complete = True  # (NATS away that long: list what the index has)
            found = index.rows(
                where,
                by_updated=by_updated,
                descending=descending,
                after=after,
                limit=limit,
                skip=skip,
            )
            assert found is not None
        return found

    async def renamed(self, thread_id: str, name: str) -> bool:
        """Write a thread's new name into its metadata entry; every node that has the thread
        loaded renames its record as its index reads the entry (``_watch_meta``), and the
        owner's next entry keeps it (``_put_meta``)."""
        return await self._edit_entry(thread_id, "name", name) is not None

    async def set_archived(self, thread_id: str, archived: bool) -> bool:
        """Write a thread's archive state into its metadata entry (``thread/list``'s
        ``archived`` filter on every node; an archived thread is not resumed: ``find``);
        ``False``: no entry, or the thread was in that state already."""
        return await self._edit_entry(thread_id, "archived", archived) is True

    def is_archived(self, thread_id: str) -> bool:
        row = self._index.row(thread_id)
        return row is not None and row.archived

    async def _edit_entry(self, thread_id: str, field: str, value: object) -> bool | None:
        """Set one field of a thread's metadata entry: read, changed, written expecting the
        revision read, again if another write came between. ``None``: no entry; ``False``: the
        field had that value already."""
        from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

        kv = self._meta
        assert kv is not None
        for _ in range(FENCE_TRIES):
            try:
                entry = await kv.get(thread_id)
            except KeyNotFoundError:
                return None
            if entry.value is None:
                return None
            meta: dict[str, Any] = orjson.loads(entry.value)
            if isinstance(value, bool) and bool(meta.get(field)) == value:
                return False
            meta[field] = value
            data = self._ours[thread_id] = right_sized(orjson.dumps(meta))
            try:
                await kv.update(thread_id, data, last=entry.revision)
            except KeyWrongLastSequenceError:
                continue
            return True
        logger.warning(
            "cluster: thread %s: %s not shared (the entry kept changing)", thread_id, field
        )
        return True

    @property
    def indexed(self) -> int:
        """How many threads' metadata entries this node holds (``thread/list``)."""
        return len(self._index)

    def listed(self, thread_id: str) -> SharedThread | None:
        data = self._index.get(thread_id)
        return None if data is None else shared_thread(data, [], listing=True)

    # --- the owner ----------------------------------------------------------------------------

    async def _own(self, record: ThreadRecord) -> None:
        """Take an owned thread's lease and announce it: its metadata, and an answer on its
        control subject."""
        from nats.js.errors import KeyWrongLastSequenceError

        assert self._leases_kv is not None
        if record.id not in self._leases:
            try:
                self._leases[record.id] = await self._leases_kv.create(
                    record.id, self.holder.encode()
                )
            except KeyWrongLastSequenceError:
                logger.warning("cluster: thread %s is held by another node", record.id)
        await self._announce(record)

    async def _announce(self, record: ThreadRecord) -> None:
        assert self._nc is not None
        await self._put_meta(record)

        async def on_control(msg: Msg) -> None:
            await self._on_control(record, msg)

        self._control[record.id] = await self._nc.subscribe(  # pyright: ignore[reportUnknownMemberType]
            control_subject(record.id), cb=on_control
        )

    async def _put_meta(self, record: ThreadRecord) -> None:
        """Write an owned thread's entry, expecting the revision this node last wrote or read:
        when another node wrote one since (a name, the archive state), that entry is read, its
        name and archive state kept, and this one written again."""
        from nats.js.errors import KeyWrongLastSequenceError

        kv = self._meta
        assert kv is not None
        thread_id = record.id
        for _ in range(FENCE_TRIES):
            revision = self._revisions.get(thread_id)
            archived = self._archived.get(thread_id, False)
            data = meta_of_record(record, self.name, archived=archived)
            data = self._ours[thread_id] = right_sized(data)
            try:
                if revision is None:
                    written = await kv.create(thread_id, data)
                else:
                    written = await kv.update(thread_id, data, last=revision)
            except KeyWrongLastSequenceError:
                await self._adopt_entry(record)
                continue
            except Exception as exc:  # NATS away: the next turn writes it again
                logger.warning("cluster: thread %s: metadata not written: %s", thread_id, exc)
                return
            self._revisions[thread_id] = written
            return
        logger.warning("cluster: thread %s: metadata not written (it kept changing)", thread_id)

    async def _adopt_entry(self, record: ThreadRecord) -> None:
        """Take what other nodes write into an owned thread's entry (its name, its archive
        state) from the entry as it is, and its revision (none: written anew)."""
        from nats.js.errors import KeyNotFoundError

        assert self._meta is not None
        try:
            entry = await self._meta.get(record.id)
        except KeyNotFoundError:  # deleted meanwhile
            self._revisions.pop(record.id, None)
            return
        self._revisions[record.id] = entry.revision or 0
        if not entry.value:
            return
        try:
            meta: dict[str, Any] = orjson.loads(entry.value)
        except orjson.JSONDecodeError:
            return  # not an entry of ours: replaced
        if meta.get("name") is not None:
            record.name = meta["name"]
        self._archived[record.id] = bool(meta.get("archived"))

    def _relay(self, thread_id: str, key: Hashable, answer: Any) -> None:
        """A client of this node answered a request of the thread: the owner writes the answer
        into the log, a follower sends it to the owner (``_answers``)."""
        line = answer_line(key, answer)
        log = self._logs.get(thread_id)
        if log is not None:
            log.append(line)
            return
        session = self._sessions.get(thread_id)
        if session is not None:
            session.relay(line)  # before the Op the session forwards next

    def _answered_elsewhere(self, record: ThreadRecord, line: bytes) -> str | None:
        """Resolve here a request another node's client answered (``None``, or why not)."""
        try:
            key, answer = parse_answer(line)
        except ValueError as exc:
            return str(exc)
        if record.runtime is not None:
            record.runtime.requests.answered_elsewhere(key, answer)
        return None

    async def _on_control(self, record: ThreadRecord, msg: Msg) -> None:
        if msg.headers and ANSWER_HEADER in msg.headers:
            error = self._answered_elsewhere(record, msg.data)
            log = self._logs.get(record.id)
            if error is None and log is not None:
                log.append(msg.data)  # the other followers resolve it from the log
            await msg.respond(ok_reply() if error is None else error_reply(error))
            return
        try:
            submission = SUBMISSION_ADAPTER.validate_json(msg.data)
        except ValueError as exc:
            await msg.respond(error_reply(f"not a submission: {exc}"))
            return
        error = apply_submission(record, submission)
        await msg.respond(ok_reply() if error is None else error_reply(error))

    async def _publish(self, log: _Log) -> None:
        """Publish what an owned thread's runtime buffered, in order, as messages of up to
        ``BATCH`` events, one at a time: each expects the log's last sequence, so that once
        another node took the thread over (and fenced the log: ``_fence``) the stream refuses
        this one's. What piles up while a message is on its way goes in the next."""
        thread_id = log.record.id
        dump = dump_event_envelope
        while self._logs.get(thread_id) is log:
            if not log.buffer:
                log.wake = anyio.Event()
                self._check_idle()
                await log.wake.wait()
                continue
            batch, log.buffer = log.buffer[:BATCH], log.buffer[BATCH:]
            self._sent += 1
            first = log.sent + 1
            log.sent += len(batch)
            log.busy = True
            data = b"\n".join([e if isinstance(e, bytes) else dump(e) for e in batch])
            stored = await self._store(log, data, f"{self.holder}:{self._sent}", first)
            if stored:
                log.stored = log.sent
            else:
                log.busy = False
                self.fenced += 1
                self._lose(thread_id, "another node has written its log since")
                break
            if any(not isinstance(e, bytes) and e.msg.type in _META_TYPES for e in batch):
                await self._put_meta(log.record)
            log.busy = False
        self._check_idle()
        if self._task_group is not None:  # lost (else the node is leaving)
            self._follow_lost(log)

    async def _store(self, log: _Log, data: bytes, msg_id: str, first: int) -> bool:
        """Publish one message of a thread's log until the stream has it (``True``) or refuses
        it because the log's last message is another node's (``False``). While NATS is away,
        or its JetStream recovering the stream, the same message goes again (the stream drops
        a copy it stored already: ``Nats-Msg-Id``)."""
        from nats.errors import Error as NatsError

        nc = self._nc
        assert nc is not None
        while True:
            headers = {
                "Nats-Msg-Id": msg_id,
                EVENT_HEADER: str(first),
                EXPECTED_LAST: str(log.last_sequence),
            }
            try:
                reply = await nc.request(log.subject, data, timeout=STORE_TIMEOUT, headers=headers)
                answer: dict[str, Any] = orjson.loads(reply.data)
            except (NatsError, TimeoutError, orjson.JSONDecodeError) as exc:
                logger.info("cluster: thread %s: sending again (%s)", log.record.id, exc)
                self.retried += 1
                await anyio.sleep(_RETRY_AFTER)
                continue
            error: dict[str, Any] | None = answer.get("error")
            if error is None:
                log.last_sequence = int(answer["seq"])
                self.published += 1
                return True
            if error.get("err_code") == WRONG_LAST_SEQUENCE:
                stored = await self._stored_as(log.subject, msg_id)
                if stored is None:
                    return False
                log.last_sequence = stored  # a copy sent before reached the stream
                self.published += 1
                return True
            if error.get("code") == 503:  # JetStream not ready yet
                self.retried += 1
                await anyio.sleep(_RETRY_AFTER)
                continue
            self.failed_publishes += 1  # the followers see the gap (``lost_events``)
            logger.warning("cluster: thread %s: events not stored: %s", log.record.id, error)
            return True

    async def _stored_as(self, subject: str, msg_id: str) -> int | None:
        """The sequence of the log's last message if it is ``msg_id``, else ``None``."""
        from nats.js.errors import NotFoundError

        assert self._js is not None
        try:
            last = await self._js.get_last_msg(STREAM, subject)
        except NotFoundError:
            return None
        headers = cast("dict[str, str]", last.headers or {})  # pyright: ignore[reportUnknownMemberType]
        return last.seq if headers.get("Nats-Msg-Id") == msg_id else None

    def _check_idle(self) -> None:
        if self._idle is not None and not any(
            log.buffer or log.busy for log in self._logs.values()
        ):
            self._idle.set()
            self._idle = None

    async def flush(self) -> None:
        """Wait until everything tapped so far is published and acknowledged (and the
        metadata a turn's start or end changed is written)."""
        while any(log.buffer or log.busy for log in self._logs.values()):
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()

    # --- leases -------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        """Renew the owned threads' leases; take over a followed thread whose lease lapsed."""
        while True:
            await anyio.sleep(self._lease_ttl / 3)
            await self._renew()
            await self._claim()

    async def _renew(self) -> None:
        from nats.js.errors import KeyWrongLastSequenceError

        kv = self._leases_kv
        assert kv is not None
        for thread_id, revision in list(self._leases.items()):
            try:
                self._leases[thread_id] = await kv.update(
                    thread_id, self.holder.encode(), last=revision
                )
            except KeyWrongLastSequenceError:
                await self._hold_again(thread_id)
            except Exception as exc:  # NATS away: the lease may lapse, renewed when it is back
                logger.warning("cluster: thread %s: lease not renewed: %s", thread_id, exc)

    async def _hold_again(self, thread_id: str) -> None:
        """An owned thread's lease lapsed (this node was too busy, or cut off, to renew it in
        time: a node streaming turns on a loaded machine): taken again if no other node holds
        it, so that the node neither fences its own log nor cuts its own turn. A node that
        took the thread meanwhile and let it go fenced the log, which then refuses this node's
        next message (``_publish``)."""
        from nats.js.errors import KeyWrongLastSequenceError

        kv = self._leases_kv
        assert kv is not None
        try:
            self._leases[thread_id] = await kv.create(thread_id, self.holder.encode())
        except KeyWrongLastSequenceError:
            self._lose(thread_id, "its lease lapsed")
            return
        except Exception as exc:  # NATS away: tried again at the next renewal
            logger.warning("cluster: thread %s: lease not taken again: %s", thread_id, exc)
            return
        logger.warning(
            "cluster: thread %s: its lease lapsed; node %s holds it again", thread_id, self.name
        )

    def _lose(self, thread_id: str, why: str) -> None:
        """Another node took the thread (this one was cut off or paused longer than a lease):
        stop publishing and answering for it, so that the log has one writer; once the message
        on its way is answered, follow the log (``_follow_lost``)."""
        log = self._logs.pop(thread_id, None)
        if log is None:
            return
        if log.wake is not None:
            log.wake.set()  # its publisher ends
        logger.error("cluster: thread %s: %s; node %s no longer owns it", thread_id, why, self.name)
        self._leases.pop(thread_id, None)
        sub = self._control.pop(thread_id, None)
        if sub is not None:
            self._group.start_soon(sub.unsubscribe)
        record = self._owned.pop(thread_id, None)
        if record is not None and record.runtime is not None:
            record.runtime.tap = None

    def _follow_lost(self, log: _Log) -> None:
        """Follow a thread this node lost from the last message it wrote to the log, as any
        node with clients of the thread does: the node that took it ends the turn that was
        playing here, this node's clients see that end and what comes after, and their
        submissions go to that node."""
        record = log.record
        if record.runtime is None or record.id in self._logs:
            return
        self._after[record.id] = log.last_sequence
        self._events[record.id] = log.stored
        self._following[record.id] = record
        record.runtime.follow_elsewhere()

    async def _claim(self) -> None:
        from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError

        kv = self._leases_kv
        assert kv is not None
        for thread_id, record in list(self._following.items()):
            try:
                await kv.get(thread_id)
                continue  # held
            except KeyNotFoundError:
                pass
            except Exception as exc:
                logger.warning("cluster: thread %s: lease not read: %s", thread_id, exc)
                continue
            try:
                revision = await kv.create(thread_id, self.holder.encode())
            except KeyWrongLastSequenceError:
                continue  # another node was first
            except Exception as exc:
                logger.warning("cluster: thread %s: lease not taken: %s", thread_id, exc)
                continue
            await self._take_over(record, revision)

    async def _take_over(self, record: ThreadRecord, revision: int) -> None:
        """This node owns a followed thread now: read the log to its end, end the turn that was
        in flight, publish from here on and answer the control subject."""
        thread_id = record.id
        logger.warning(
            "cluster: thread %s: its owner is gone; node %s takes it", thread_id, self.name
        )
        self._leases[thread_id] = revision
        self._following.pop(thread_id, None)
        await self._catch_up(thread_id)
        fence = await self._fence(thread_id)
        if fence is None:
            self._leases.pop(thread_id, None)
            self._following[thread_id] = record  # still its follower; it may try again
            return
        self._after.pop(thread_id, None)
        runtime = record.runtime
        if runtime is None:
            return
        self._owned[thread_id] = record
        self._tap(record, self._events.pop(thread_id, 0), fence)
        session = self._sessions.pop(thread_id, None)
        if session is not None:
            session.take_over(runtime.history)
        await self._announce(record)

    async def _fence(self, thread_id: str) -> int | None:
        """Close the log to its former owner: an empty message expecting the last sequence
        this node has read, so that a message the former owner sends later (it was paused or
        cut off, not dead), expecting an earlier one, is refused. The fence's sequence, or
        ``None`` when it could not be written."""
        from nats.js.errors import APIError

        js = self._js
        assert js is not None
        for _ in range(FENCE_TRIES):
            headers = {
                EVENT_HEADER: str(self._events.get(thread_id, 0) + 1),
                EXPECTED_LAST: str(self._after.get(thread_id, 0)),
                "Nats-Msg-Id": f"{self.holder}:fence",
            }
            try:
                ack = await js.publish(events_subject(thread_id), b"", headers=headers)
            except APIError as exc:
                if exc.err_code != WRONG_LAST_SEQUENCE:
                    logger.warning("cluster: thread %s: log not fenced: %s", thread_id, exc)
                    return None
                await self._catch_up(thread_id)  # the former owner wrote after what was read
                continue
            except Exception as exc:
                logger.warning("cluster: thread %s: log not fenced: %s", thread_id, exc)
                return None
            return ack.seq
        return None

    async def _catch_up(self, thread_id: str) -> None:
        """Wait until the followed thread's consumer has delivered the log's last event."""
        from nats.js.errors import NotFoundError

        assert self._js is not None
        try:
            last = (await self._js.get_last_msg(STREAM, events_subject(thread_id))).seq or 0
        except NotFoundError:
            return
        if self._after.get(thread_id, 0) >= last or thread_id not in self._consumers:
            return
        event = anyio.Event()
        self._caught_up[thread_id] = (last, event)
        with anyio.move_on_after(HISTORY_READ_TIMEOUT):
            await event.wait()
        self._caught_up.pop(thread_id, None)

    async def _release_leases(self) -> None:
        """Leaving: let other nodes take this node's threads at once."""
        kv = self._leases_kv
        if kv is None:
            return
        for thread_id in list(self._leases):
            try:
                await kv.delete(thread_id)
            except Exception as exc:
                logger.warning("cluster: thread %s: lease not released: %s", thread_id, exc)
        self._leases.clear()

    # --- the follower -------------------------------------------------------------------------

    async def consume(
        self, thread_id: str, receive: Callable[[list[bytes]], Awaitable[None]]
    ) -> None:
        """Deliver the thread's log after what this node has, in order, to ``receive`` (the
        events of each message, as JSON lines; none twice)."""
        from nats.js.api import ConsumerConfig, DeliverPolicy

        assert self._js is not None

        async def on_event(msg: Msg) -> None:
            if thread_id in self._logs:
                return  # taken over (its fence delivered late): this node writes the log now
            sequence = self._after[thread_id] = msg.metadata.sequence.stream
            lines, self._events[thread_id] = self._unseen(
                thread_id, msg, self._events.get(thread_id, 0)
            )
            if ANSWERED in msg.data:
                lines = self._answers_in(thread_id, lines)
            if lines:
                await receive(lines)
            waiting = self._caught_up.get(thread_id)
            if waiting is not None and sequence >= waiting[0]:
                waiting[1].set()

        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=self._after.get(thread_id, 0) + 1,
        )
        self._consumers[thread_id] = await self._js.subscribe(
            events_subject(thread_id),
            cb=on_event,
            ordered_consumer=True,
            config=config,
            # a stalled consumer (NATS restarted) is noticed and made again from the last
            # sequence it delivered after two missed heartbeats
            idle_heartbeat=FOLLOW_HEARTBEAT,
        )

    def _answers_in(self, thread_id: str, lines: list[bytes]) -> list[bytes]:
        """Apply the answers among a followed thread's log lines; the events."""
        record = self._following.get(thread_id)
        events: list[bytes] = []
        for line in lines:
            if not is_answer(line):
                events.append(line)
            elif record is not None:
                self._answered_elsewhere(record, line)
        return events

    def opened(self, session: FollowerSession) -> None:
        self._sessions[session.thread_id] = session

    def stop_consuming(self, thread_id: str) -> None:
        sub = self._consumers.pop(thread_id, None)
        if sub is not None and self._task_group is not None:
            self._task_group.start_soon(sub.unsubscribe)

    async def send_control(
        self, thread_id: str, data: bytes, seconds: float, *, answer: bool = False
    ) -> str | None:
        """Send a submission (``answer``: an answer's line) to the thread's owner; ``None``
        once taken, else why not."""
        from nats.errors import Error as NatsError

        assert self._nc is not None
        headers = {ANSWER_HEADER: "1"} if answer else None
        try:
            reply = await self._nc.request(
                control_subject(thread_id), data, timeout=seconds, headers=headers
            )
        except NatsError as exc:
            return str(exc) or type(exc).__name__
        return control_error(reply.data)
