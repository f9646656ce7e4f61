"""``codex-app-bridge map``: core events in, the notifications one subscribed client receives out.

Input (JSONL, ``FILE`` or ``-`` for stdin), one of, line by line:

* event envelopes ``{"id": <turn id>, "msg": <EventMsg>}``;
* rollout lines ``{"timestamp", "type", "payload", ...}`` (a Codex ``rollout-*.jsonl``):
  ``event_msg`` payloads are events, with the envelope id taken from the event's own ``turn_id``
  when it carries one, else the current turn (the last ``task_started``); ``session_meta`` gives
  the thread id unless ``--thread-id`` is set; ``response_item`` lines are described below; every
  other line kind (``turn_context``, ``world_state``, ...) carries no event and is passed over.

``response_item`` lines (these rules are ``sources.RolloutReader``'s, which ``--script`` rollout
replay shares). A 0.163.0 rollout persists each visible item twice, as a
``response_item`` and as an ``item_completed`` event; the event is what the live server maps, so
there the response item only becomes the ``raw_response_item`` event (seen by ``--raw-events``
clients, as ``rawResponseItem/completed``). An older rollout has no ``item_completed`` events; in
a turn that recorded no ``item_started``/``item_completed`` event at all, each response item is
therefore recorded the way Codex core records one (``ThreadListener.record_response_item``: the
raw event plus ``item/started`` and ``item/completed`` for the items ``parse_turn_item``
recognises). To apply that rule the lines of a turn are buffered until it is decided: at the
turn's first item event (0.163.0 rollouts; later lines go as they come) or at its end
(``task_complete``/``turn_aborted``), so output for an older rollout arrives turn by turn.

The input is streamed (memory flat in its length); while it is read and stderr is a terminal, a
progress bar shows the bytes read.

Output: the JSONL notifications exactly as the server writes them to one initialized,
subscribed client (``{"method","params","emittedAtMs"}``; ``--no-timestamps`` leaves
``emittedAtMs`` out for diffing). ``--raw-events`` opts that client in to the raw events.
``--stateless`` bypasses the listener: one line per input event with the stateless mapper's
notification, or ``null`` where it gives none (rollout lines that are not events give no line).

Server requests (approvals, questions, elicitations, dynamic tool calls) are what a live client
gets (the server's ``PendingRequests``, which the thread runtime feeds every event through):
the notifications that precede the request (the status flag, the request's own
``item/started``) and then the request as a line of its own (``{"method","id","params"}``, ids
from 0 as the server numbers them). Offline nobody answers: core's later ``item_started`` of
an approved command is not sent again, and a request still pending when its turn ends is
resolved then (``serverRequest/resolved``), as for a live client that never answers.

Bad lines (not JSON, not an envelope or rollout line, a malformed event) are reported on stderr
with their line number; the rest is still processed and the exit status is 1. Events the
listener skips on purpose (unknown event types, a request whose payload does not convert) are
noted on stderr without changing the exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

import orjson
from pydantic import ValidationError

from codex_app_bridge.cli._common import (
    EXIT_BAD_INPUT,
    describe_validation_error,
    report_bad_line,
    run_async,
    with_input,
)
from codex_app_bridge.cli._input import InputFile, numbered, warn
from codex_app_bridge.listener import REQUEST_EVENT_TYPES, ListenerHub, ThreadListener
from codex_app_bridge.mapping import item_event_to_server_notification
from codex_app_bridge.protocol.core import (
    EventEnvelope,
    EventMsg,
    Submission,
    UnknownEventMsg,
    parse_event_envelope,
)
from codex_app_bridge.protocol.jsonrpc import RequestId
from codex_app_bridge.rpc import ServerRequests
from codex_app_bridge.rpc.outbox import EncodedParams, OutboundNotification
from codex_app_bridge.server._pending_requests import PendingRequests
from codex_app_bridge.sources import RolloutEntry, RolloutLineError, RolloutReader, is_rollout_line

__all__ = ["DEFAULT_THREAD_ID", "MapOptions", "map_lines", "register"]

_COMMAND = "map"

DEFAULT_THREAD_ID = "00000000-0000-0000-0000-000000000000"
"""Thread id used when neither ``--thread-id`` nor a rollout ``session_meta`` names one."""

_CONNECTION_ID = 1


@dataclass(frozen=True, slots=True)
class MapOptions:
    thread_id: str | None = None
    raw_events: bool = False
    stateless: bool = False
    timestamps: bool = True


class _WriterOutbox:
    """The one client: an ``Outbox`` that writes each notification as a JSONL line."""

    def __init__(self, out: BinaryIO, *, timestamps: bool) -> None:
        self._out = out
        self._timestamps = timestamps
        self._reader_gone = False

    @property
    def connection_id(self) -> int:
        return _CONNECTION_ID

    @property
    def closed(self) -> bool:
        """True once the reader of the output went away (``map ... | head``)."""
        return self._reader_gone

    def wants(self, method: str) -> bool:
        return True

    congested = False

    async def wait_writable(self) -> None:
        return None

    async def send_notification(self, notification: OutboundNotification) -> bool:
        return self.offer_notification(notification)

    def offer_notification(self, notification: OutboundNotification) -> bool:
        data = notification.data
        if not self._timestamps:
            decoded: dict[str, Any] = orjson.loads(data)
            decoded.pop("emittedAtMs", None)
            data = orjson.dumps(decoded)
        return self.offer(data)

    def offer(self, data: bytes) -> bool:
        """One line (a server request as a client gets it: it carries no timestamp)."""
        try:
            self._out.write(data + b"\n")
        except BrokenPipeError:
            self._reader_gone = True
            return False
        return True

    async def send_server_request(
        self, request_id: RequestId, method: str, params: EncodedParams
    ) -> bool:
        return False


def _no_source(submission: Submission) -> None:
    """What a live runtime would submit to its source (the answer to a request that cannot be
    raised): offline there is no source to tell."""


@dataclass(slots=True)
class _Mapper:
    """The state of one ``map`` run: thread, the rollout rules (``sources.RolloutReader``)."""

    options: MapOptions
    out: BinaryIO
    bad: int = 0
    thread_id: str | None = None
    reader: RolloutReader = field(default_factory=RolloutReader)
    hub: ListenerHub | None = None
    listener: ThreadListener | None = None
    requests: PendingRequests | None = None
    outbox: _WriterOutbox | None = None

    def __post_init__(self) -> None:
        self.thread_id = self.options.thread_id
        self.reader = RolloutReader(stateless=self.options.stateless)

    def check_output(self) -> None:
        """Stop the run once nobody reads the output any more (the CLI exits quietly, 141)."""
        if self.outbox is not None and self.outbox.closed:
            raise BrokenPipeError("the reader of the output went away")

    def bad_line(self, number: int, reason: str) -> None:
        self.bad += 1
        report_bad_line(_COMMAND, number, reason)

    def _listener(self) -> ThreadListener:
        if self.listener is None:
            self.thread_id = self.thread_id or DEFAULT_THREAD_ID
            self.hub = ListenerHub()
            outbox = self.outbox = _WriterOutbox(self.out, timestamps=self.options.timestamps)
            self.hub.add_connection(outbox)
            self.listener = self.hub.create_thread(self.thread_id)
            self.listener.subscribe(outbox, raw_events=self.options.raw_events)
            # the live path of every event, server requests included; no source to answer
            self.requests = PendingRequests(self.listener, ServerRequests(), _no_source)
        return self.listener

    # --- one line ---------------------------------------------------------------------------

    async def line(self, number: int, raw: bytes) -> None:
        try:
            value: object = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            self.bad_line(number, f"not JSON: {exc}")
            return
        if not isinstance(value, dict):
            self.bad_line(number, "not a JSON object")
            return
        obj = cast("dict[str, Any]", value)
        if "msg" in obj and "id" in obj:
            await self.flush()
            try:
                envelope = parse_event_envelope(raw)
            except ValidationError as exc:
                self.bad_line(number, f"invalid event envelope: {describe_validation_error(exc)}")
                return
            await self.event(number, envelope)
            return
        if is_rollout_line(obj):
            try:
                entries = self.reader.feed(number, obj)
            except RolloutLineError as exc:
                self.bad_line(number, str(exc))
                return
            if self.thread_id is None and self.listener is None:
                self.thread_id = self.reader.thread_id
            await self.play(entries)
            return
        self.bad_line(number, "neither an event envelope {id, msg} nor a rollout line")

    async def flush(self) -> None:
        """Process the buffered rollout turn (see ``sources.RolloutReader``)."""
        await self.play(self.reader.flush())

    async def play(self, entries: list[RolloutEntry]) -> None:
        for entry in entries:
            if entry.envelope is not None:
                await self.event(entry.number, entry.envelope)
            elif entry.item is not None:
                listener = self._listener()
                before = listener.skipped_events
                await listener.record_response_item(entry.item, turn_id=entry.turn_id)
                self._check_skipped(entry.number, before)

    # --- one event --------------------------------------------------------------------------

    async def event(self, number: int, envelope: EventEnvelope) -> None:
        if self.options.stateless:
            self.stateless(number, envelope)
            return
        listener = self._listener()
        assert self.requests is not None
        before = listener.skipped_events
        self.requests.feed(envelope)
        if listener.congested:
            await listener.wait_writable()
        self._check_skipped(number, before, envelope.msg)

    def _check_skipped(self, number: int, before: int, msg: EventMsg | None = None) -> None:
        listener = self.listener
        if listener is None or listener.skipped_events == before:
            return
        reason = listener.last_skip_reason or "skipped"
        if isinstance(msg, UnknownEventMsg) or (
            msg is not None and msg.type in REQUEST_EVENT_TYPES
        ):
            warn(f"{_COMMAND}: line {number}: note: event skipped ({reason})")
        else:
            self.bad_line(number, f"event skipped ({reason})")

    def stateless(self, number: int, envelope: EventEnvelope) -> None:
        thread_id = self.thread_id or DEFAULT_THREAD_ID
        try:
            notification = item_event_to_server_notification(envelope.msg, thread_id, envelope.id)
        except Exception as exc:  # the mapper rejects a malformed event of a supported kind
            self.bad_line(number, f"{envelope.msg.type}: {exc}")
            notification = None
        if notification is None:
            self.out.write(b"null\n")
            return
        self.out.write(
            orjson.dumps(
                {
                    "method": notification.method,
                    "params": orjson.Fragment(
                        notification.params.__pydantic_serializer__.to_json(
                            notification.params, by_alias=True
                        )
                    ),
                }
            )
            + b"\n"
        )


async def map_lines(lines: Iterable[tuple[int, bytes]], options: MapOptions, out: BinaryIO) -> int:
    """Map numbered JSONL lines to ``out``; the number of bad lines."""
    mapper = _Mapper(options, out)
    for number, raw in lines:
        await mapper.line(number, raw)
        mapper.check_output()
    await mapper.flush()
    mapper.check_output()
    return mapper.bad


def _run(args: argparse.Namespace) -> int:
    options = MapOptions(
        thread_id=args.thread_id,
        raw_events=args.raw_events,
        stateless=args.stateless,
        timestamps=not args.no_timestamps,
    )
    out = sys.stdout.buffer

    def body(given: InputFile) -> int:
        try:
            bad = run_async(
                lambda: map_lines(numbered(given.lines(progress=_COMMAND)), options, out)
            )
        finally:
            out.flush()
        return EXIT_BAD_INPUT if bad else 0

    return with_input(_COMMAND, args.file, body)


def register(subparsers: Any) -> None:
    """Add the ``map`` command."""
    parser = subparsers.add_parser(
        _COMMAND,
        help="map core events (envelopes or a rollout) to the notifications a client receives",
        description=(
            "Read JSONL core event envelopes {id, msg} or rollout lines and write the JSONL "
            "notifications one subscribed client would receive. Bad lines are reported on "
            "stderr with their line number, the rest is still processed, and the exit status "
            "is 1."
        ),
    )
    parser.add_argument("file", nargs="?", default="-", metavar="FILE", help="input, - for stdin")
    parser.add_argument(
        "--thread-id",
        default=None,
        metavar="ID",
        help=f"thread id of the notifications (default: the rollout's, else {DEFAULT_THREAD_ID})",
    )
    parser.add_argument(
        "--raw-events",
        action="store_true",
        help="the client opted in to rawResponseItem/completed and rawResponse/completed",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="only the stateless mapper: one line per event, null where it gives none",
    )
    parser.add_argument(
        "--no-timestamps",
        action="store_true",
        help="leave emittedAtMs out of each notification (stable output for diffing)",
    )
    parser.set_defaults(handler=_run)
