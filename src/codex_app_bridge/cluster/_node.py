"""``ClusterNode``: one bridge server's membership of a cluster over NATS JetStream.

It is the server's ``SharedThreads`` (``server._shared``) and makes its source
(``ClusterSource``, ``_follow``):

* **A thread's core events are its log.** The node that plays a thread's turns (its owner: the
  node it was started or loaded on from storage) taps its runtime (``ThreadRuntime.tap``: every
  event its listener is given, deltas included, in order) and publishes each ``{id, msg}``
  envelope to ``codex.thread.<id>.events`` in the ``CODEX_THREADS`` stream (file storage). The
  tap only appends to the thread's buffer; one publisher task encodes what is buffered and
  publishes it as messages of up to ``BATCH`` envelopes (JSON lines), without awaiting each
  acknowledgement (``publish_async``: acknowledgements are
  checked as they come, a failed one is logged and counted in ``failed_publishes``).
* **Metadata** (settings, preview, timestamps, name) goes to the ``codex_threads`` KV bucket when
  the thread is loaded and whenever a turn starts or ends.
* **Another node** that is asked for the thread (``thread/resume``: ``find``) reads the metadata
  and the log up to its last sequence (the history), then follows the log from the next
  sequence (``FollowerSession``), so its clients get the same ordered stream through the same
  listener and mapper.
* **Control**: the owner answers ``codex.thread.<id>.control``: the submissions of the other
  nodes' clients (``_control``).

Boundary: NATS I/O and the server's hook; what a submission does is ``_control``'s, how a
followed thread's session behaves ``_follow``'s.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self

import anyio
import anyio.abc

from codex_app_bridge.cluster._control import apply_submission
from codex_app_bridge.cluster._follow import ClusterSource, FollowerSession, control_error
from codex_app_bridge.cluster._meta import meta_of_record, shared_thread
from codex_app_bridge.cluster._options import ClusterOptions, ClusterUnavailable
from codex_app_bridge.cluster._subjects import (
    EVENT_HEADER,
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
from codex_app_bridge.server._runtime import HISTORY_EVENT_TYPES
from codex_app_bridge.sources import TURN_END_TYPES, TURN_START_TYPES

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription
    from nats.js.client import JetStreamContext
    from nats.js.kv import KeyValue

    from codex_app_bridge.server._shared import SharedThread
    from codex_app_bridge.server._threads import ThreadRecord
    from codex_app_bridge.sources import EventSource, TurnSource

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
"""Seconds before events the stream did not answer for are sent again."""
_META_TYPES: Final = TURN_START_TYPES | TURN_END_TYPES


@dataclass(slots=True)
class _Unacked:
    subject: str
    data: bytes
    msg_id: str
    first: int
    """The number of its first event in the thread's log."""
    future: asyncio.Future[Any] | None = None


class _Log:
    """What an owned thread has given its listener and is not published yet."""

    __slots__ = ("buffer", "node", "record", "sent", "subject")

    def __init__(self, node: ClusterNode, record: ThreadRecord, sent: int = 0) -> None:
        self.node = node
        self.record = record
        self.subject = events_subject(record.id)
        self.buffer: list[EventEnvelope] = []
        self.sent = sent
        """Events of the thread's log before the buffer (the next is number ``sent + 1``)."""

    def append(self, envelope: EventEnvelope) -> None:
        buffer = self.buffer
        buffer.append(envelope)
        if len(buffer) == 1:
            self.node.dirty(self)


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
        self.published = 0
        self.lost_events = 0
        """Events the log lacked between what a followed thread had and a message after it."""
        self.duplicate_events = 0
        """Events of the log a followed thread had already (dropped, not applied twice)."""
        self._lease_ttl = options.lease_ttl
        self._sent = 0
        self._unacked: dict[str, _Unacked] = {}
        """Events published and not acknowledged yet, in the order they were published."""
        self._online = True
        self._back_online: anyio.Event | None = None
        """Set while NATS is reachable (made in ``__aenter__``: an event needs the loop)."""
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._meta: KeyValue | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._dirty: dict[str, _Log] = {}
        self._wake: anyio.Event | None = None
        self._publishing = False
        self._idle: anyio.Event | None = None
        """Set when the publisher has nothing left to publish (``flush``)."""
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
        self._back_online = anyio.Event()
        self._back_online.set()
        group = self._task_group = anyio.create_task_group()
        await group.__aenter__()
        group.start_soon(self._publish_loop, name="cluster publisher")
        group.start_soon(self._lease_loop, name="cluster leases")
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
            disconnected_cb=self._disconnected,
            reconnected_cb=self._reconnected,
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

    def loaded(self, record: ThreadRecord) -> None:
        runtime = record.runtime
        assert runtime is not None
        if record.id in self._after:
            self._following[record.id] = record
            runtime.follow()
            return
        if record.ephemeral:
            return  # nothing of it outlives this process: not shared
        self._owned[record.id] = record
        self._tap(record, 0)
        self._group.start_soon(self._own, record)

    def _tap(self, record: ThreadRecord, sent: int) -> None:
        """Publish what an owned thread's runtime gives its listener, numbered from ``sent + 1``."""
        assert record.runtime is not None
        log = self._logs[record.id] = _Log(self, record, sent)
        record.runtime.tap = log.append

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
        from nats.js.errors import KeyNotFoundError, NotFoundError

        assert self._meta is not None
        assert self._js is not None
        try:
            entry = await self._meta.get(thread_id)
        except KeyNotFoundError:
            return None
        if entry.value is None:
            return None
        try:
            last = (await self._js.get_last_msg(STREAM, events_subject(thread_id))).seq or 0
        except NotFoundError:
            last = 0
        self._events[thread_id] = 0
        history = await self._read_log(thread_id, last)
        self._after[thread_id] = last
        return shared_thread(entry.value, history)

    async def _read_log(self, thread_id: str, last: int) -> list[EventEnvelope]:
        """The thread's history events in its log, up to sequence ``last``."""
        history: list[EventEnvelope] = []
        if not last:
            return history
        assert self._js is not None
        sub = await self._js.subscribe(events_subject(thread_id), ordered_consumer=True)
        try:
            with anyio.fail_after(HISTORY_READ_TIMEOUT):
                while True:
                    msg = await sub.next_msg(timeout=HISTORY_READ_TIMEOUT)
                    for line in self._unseen(thread_id, msg):
                        envelope = parse_event_envelope(line)
                        if envelope.msg.type in HISTORY_EVENT_TYPES:
                            history.append(envelope)
                    if msg.metadata.sequence.stream >= last:
                        return history
        finally:
            await sub.unsubscribe()

    def _unseen(self, thread_id: str, msg: Msg) -> list[bytes]:
        """A followed thread's log message: the events in it this node has not applied yet
        (counted as applied now); a gap before them is logged and counted."""
        lines = msg.data.split(b"\n")
        number = (msg.headers or {}).get(EVENT_HEADER)
        have = self._events.get(thread_id, 0)
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
        self._events[thread_id] = have + lost + len(fresh)
        return fresh

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
        assert self._meta is not None
        try:
            await self._meta.put(record.id, meta_of_record(record, self.name))
        except Exception as exc:  # NATS away: the next turn writes it again
            logger.warning("cluster: thread %s: metadata not written: %s", record.id, exc)

    async def _on_control(self, record: ThreadRecord, msg: Msg) -> None:
        try:
            submission = SUBMISSION_ADAPTER.validate_json(msg.data)
        except ValueError as exc:
            await msg.respond(error_reply(f"not a submission: {exc}"))
            return
        error = apply_submission(record, submission)
        await msg.respond(ok_reply() if error is None else error_reply(error))

    def dirty(self, log: _Log) -> None:
        self._dirty[log.record.id] = log
        if self._wake is not None:
            self._wake.set()

    async def _publish_loop(self) -> None:
        js = self._js
        nc = self._nc
        assert js is not None
        assert nc is not None
        while True:
            if not self._dirty:
                wake = self._wake = anyio.Event()
                await wake.wait()
            dirty, self._dirty = self._dirty, {}
            self._publishing = True
            for log in dirty.values():
                events, log.buffer = log.buffer, []
                announce = False
                for start in range(0, len(events), BATCH):
                    batch = events[start : start + BATCH]
                    if not (self._online and nc.is_connected):
                        # nothing new goes out before what a NATS restart may have lost is
                        # sent again (``_reconnected``): the log keeps the owner's order
                        await self._offline().wait()
                    self._sent += 1
                    data = b"\n".join([dump_event_envelope(e) for e in batch])
                    entry = _Unacked(log.subject, data, f"{self.holder}:{self._sent}", log.sent + 1)
                    log.sent += len(batch)
                    self._unacked[entry.msg_id] = entry
                    await self._send(js, entry)
                    if not announce and any(e.msg.type in _META_TYPES for e in batch):
                        announce = True
                if announce:
                    await self._put_meta(log.record)
            self._publishing = False
            if not self._dirty and self._idle is not None:
                self._idle.set()
                self._idle = None

    async def _send(self, js: JetStreamContext, entry: _Unacked) -> None:
        # the stream drops a copy it already stored
        headers = {"Nats-Msg-Id": entry.msg_id, EVENT_HEADER: str(entry.first)}
        future = await js.publish_async(entry.subject, entry.data, headers=headers)  # pyright: ignore[reportUnknownMemberType]
        entry.future = future
        future.add_done_callback(partial(self._acked, entry))

    def _acked(self, entry: _Unacked, future: asyncio.Future[Any]) -> None:
        from nats.js.errors import NoStreamResponseError

        if future is not entry.future:
            return  # sent again since (``_reconnected``)
        if not future.cancelled() and isinstance(future.exception(), NoStreamResponseError):
            # NATS is back but its JetStream not yet (recovering the stream): hold new
            # events and send the unacknowledged again shortly, in order
            if self._online and self._task_group is not None:
                self._offline()
                self._task_group.start_soon(self._retry)
            return
        self._unacked.pop(entry.msg_id, None)
        if future.cancelled() or future.exception() is not None:
            self.failed_publishes += 1
            logger.warning(
                "cluster: an event was not stored: %s",
                "cancelled" if future.cancelled() else future.exception(),
            )
        else:
            self.published += 1

    def _offline(self) -> anyio.Event:
        """NATS is away: the event set once it is back and the unacknowledged are sent."""
        self._online = False
        if self._back_online is None or self._back_online.is_set():
            self._back_online = anyio.Event()
        return self._back_online

    async def _retry(self) -> None:
        await anyio.sleep(_RETRY_AFTER)
        await self._reconnected()

    async def _disconnected(self) -> None:
        self._offline()

    async def _reconnected(self) -> None:
        """NATS is back: what was sent and not acknowledged goes again, in order, under the
        same message ids (the stream's duplicate window drops what it had stored), before
        anything new."""
        js = self._js
        assert js is not None
        self._online = False
        pending = list(self._unacked.values())
        if pending:
            logger.info("cluster: sending %d unacknowledged events again", len(pending))
        for entry in pending:
            old = entry.future
            await self._send(js, entry)
            if old is not None:
                old.cancel()
        self._online = True
        if self._back_online is not None:
            self._back_online.set()

    async def flush(self) -> None:
        """Wait until everything tapped so far is published and acknowledged."""
        js = self._js
        assert js is not None
        while self._dirty or self._publishing:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()
        await js.publish_async_completed()

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
                self._lose(thread_id)
            except Exception as exc:  # NATS away: the lease may lapse, renewed when it is back
                logger.warning("cluster: thread %s: lease not renewed: %s", thread_id, exc)

    def _lose(self, thread_id: str) -> None:
        """Another node took the thread (this one was cut off longer than a lease): stop
        publishing and answering for it, so that the log has one writer."""
        logger.error(
            "cluster: thread %s: lease lost to another node; no longer its owner", thread_id
        )
        self._leases.pop(thread_id, None)
        self._logs.pop(thread_id, None)
        record = self._owned.pop(thread_id, None)
        if record is not None and record.runtime is not None:
            record.runtime.tap = None
        sub = self._control.pop(thread_id, None)
        if sub is not None:
            self._group.start_soon(sub.unsubscribe)

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
        self._after.pop(thread_id, None)
        runtime = record.runtime
        if runtime is None:
            return
        self._owned[thread_id] = record
        self._tap(record, self._events.pop(thread_id, 0))
        session = self._sessions.pop(thread_id, None)
        if session is not None:
            session.take_over()
        await self._announce(record)

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
            sequence = self._after[thread_id] = msg.metadata.sequence.stream
            lines = self._unseen(thread_id, msg)
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

    def opened(self, session: FollowerSession) -> None:
        self._sessions[session.thread_id] = session

    def stop_consuming(self, thread_id: str) -> None:
        sub = self._consumers.pop(thread_id, None)
        if sub is not None and self._task_group is not None:
            self._task_group.start_soon(sub.unsubscribe)

    async def send_control(self, thread_id: str, data: bytes, seconds: float) -> str | None:
        """Send a submission to the thread's owner; ``None`` once taken, else why not."""
        from nats.errors import Error as NatsError

        assert self._nc is not None
        try:
            reply = await self._nc.request(control_subject(thread_id), data, timeout=seconds)
        except NatsError as exc:
            return str(exc) or type(exc).__name__
        return control_error(reply.data)
