"""What one rollout file says about its thread, folded line by line and kept as it grows.

:class:`RolloutFacts` is a fold over a file's own lines (its history bases are not followed): the
first ``session_meta`` (without its large ``base_instructions``; ``history_base`` apart), the
first user message (``preview``), the newest model and reasoning effort (``turn_context``,
``thread_settings_applied``), the last ``turn_context``'s approval policy, reviewer and sandbox
mode, the first
and last turn that ended (``task_complete``: the read state) and the ordinal the next appended
line gets. A fold has no memory of the lines it saw beyond these values, so a file that grew is
read from where the last fold stopped (``scanned``, always a line boundary): rollouts are
append-only. A file that shrank, or changed without growing, is folded again from its start.

Lines follow the reader's rules (``_reader``): a line that is not a JSON object with a string
``type`` is skipped; a last line without its newline counts only while it parses, and is never
part of ``scanned`` (``tail``): a writer may still be writing it, or died in it.

:func:`scan` reads a file (everything, or only until the list fields are known:
``until_listed``); :meth:`RolloutFacts.fold_bytes` folds bytes a writer just appended, so the
index follows the server's own writes without reading them back.

Boundary: one file's bytes; which files make a thread, and what is kept between processes, are
``_index``'s and ``_catalog``'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, cast

import orjson

__all__ = ["RolloutFacts", "meta_history_base", "scan"]

_CHUNK: Final = 1 << 20
_HEAD: Final = 64 << 10
"""What a scan ``until_listed`` reads first: the fields a list shows are in a rollout's first
lines (its ``session_meta``, with 0.163.0's system prompt, and the first user message), and a
long rollout is megabytes; each further read is four times larger, up to :data:`_CHUNK`."""
_META_KEPT: Final = frozenset(
    {
        "id",
        "session_id",
        "timestamp",
        "cwd",
        "originator",
        "cli_version",
        "source",
        "model_provider",
        "forked_from_id",
        "git",
        "history_base",
        "agent_nickname",
        "agent_role",
    }
)
"""The ``session_meta`` fields the index keeps (not the system prompt 0.163.0 writes there)."""


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _user_text(item: Mapping[str, Any]) -> str | None:
    """The text of a ``UserMessage`` item (its text pieces, one per line)."""
    content = item.get("content")
    if not isinstance(item.get("id"), str) or not isinstance(content, list):
        return None
    parts: list[str] = []
    for piece in cast("list[Any]", content):
        if not isinstance(piece, dict):
            return None
        entry = cast("dict[str, Any]", piece)
        if entry.get("type") == "text":
            text = entry.get("text")
            if not isinstance(text, str):
                return None
            parts.append(text)
    return "\n".join(parts)


def _reasoning_effort(settings: Mapping[str, Any], current: str | None) -> str | None:
    if "reasoning_effort" in settings:
        return _str_or_none(settings["reasoning_effort"])
    mode = settings.get("collaboration_mode")
    if isinstance(mode, Mapping):
        inner = cast("Mapping[str, Any]", mode).get("settings")
        if isinstance(inner, Mapping):
            return _str_or_none(cast("Mapping[str, Any]", inner).get("reasoning_effort"))
    return current


_SANDBOX_MODES: Final = frozenset({"read-only", "workspace-write", "danger-full-access"})
_DONT_NOTIFY: Final = "<decision>DONT_NOTIFY</decision>"


def _session_meta(payload: object) -> dict[str, Any] | None:
    """A ``session_meta`` payload the reader would accept, with the fields the index keeps."""
    if not isinstance(payload, dict):
        return None
    meta = cast("dict[str, Any]", payload)
    for key in ("id", "timestamp", "cwd", "originator", "cli_version"):
        if not isinstance(meta.get(key), str):
            return None
    for key in ("session_id", "forked_from_id", "model_provider"):
        if meta.get(key) is not None and not isinstance(meta.get(key), str):
            return None
    return {key: value for key, value in meta.items() if key in _META_KEPT}


def meta_history_base(meta: Mapping[str, Any]) -> tuple[str, int] | None:
    """``(rollout id, end ordinal exclusive)`` of a ``session_meta``'s ``history_base``."""
    raw = meta.get("history_base")
    if not isinstance(raw, Mapping):
        return None
    base = cast("Mapping[str, Any]", raw)
    rollout_id, end = base.get("thread_id"), base.get("end_ordinal_exclusive")
    if isinstance(rollout_id, str) and isinstance(end, int) and not isinstance(end, bool):
        return rollout_id, end
    return None


@dataclass(slots=True)
class RolloutFacts:
    """The fold of one rollout file's lines (see the module docstring)."""

    size: int = 0
    """The file's size when it was last read (or written by this process)."""
    mtime_ns: int = 0
    """Its modification time then."""
    scanned: int = 0
    """Bytes folded: the end of the last whole line seen."""
    kept: int = 0
    """Lines folded (the reader's positions, for lines without an ordinal)."""
    next_ordinal: int = 0
    """One past the highest ordinal (or position) folded: what the next appended line gets."""
    meta: dict[str, Any] | None = None
    """The first ``session_meta`` payload (the fields of :data:`_META_KEPT`)."""
    meta_ordinal: int = 0
    history_base: tuple[str, int] | None = None
    """``(rollout id, end ordinal exclusive)`` of the ``session_meta``'s ``history_base``."""
    preview: str | None = None
    model: str | None = None
    effort: str | None = None
    approval_policy: str | None = None
    approvals_reviewer: str | None = None
    sandbox_mode: str | None = None
    """The last ``turn_context``'s ``sandbox_policy.type`` (``read-only``, ``workspace-write``,
    ``danger-full-access``)."""
    first_completed: str | None = None
    """The first ended turn's id (``""`` when it named none): the read state's first unread."""
    last_completed: str | None = None
    """The last ended turn's id: the read state's revision."""
    goal_turn: str | None = None
    """``"goal"`` while the last started turn is a goal-continuation turn."""
    pending: str | None = None
    """A goal turn's end that counts as activity unless the next turn continues the goal (the
    listener's ``read_state_of_history`` rule, folded here from the lines)."""
    tail: bytes = b""
    """A last line without its newline that parses (folded in :meth:`view`, never here)."""
    torn: int = 0
    """The length of a last line without its newline that does not parse (skipped)."""

    # ------------------------------------------------------------------ keeping

    def encode(self) -> bytes:
        """The facts as the index stores them (a JSON array; an unterminated last line is not
        kept: it is read again from ``scanned``)."""
        size = self.size if self.whole and not self.tail and not self.torn else self.scanned
        return orjson.dumps(
            [
                size,
                self.mtime_ns,
                self.scanned,
                self.kept,
                self.next_ordinal,
                self.meta,
                self.meta_ordinal,
                self.preview,
                self.model,
                self.effort,
                self.approval_policy,
                self.approvals_reviewer,
                self.sandbox_mode,
                self.first_completed,
                self.last_completed,
                self.goal_turn,
                self.pending,
            ]
        )

    @classmethod
    def decode(cls, data: bytes | str) -> RolloutFacts:
        """Facts stored by :meth:`encode` (``ValueError`` if they are not)."""
        try:
            values = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValueError(str(exc)) from None
        if not isinstance(values, list) or len(cast("list[object]", values)) != 17:
            raise ValueError("not stored facts")
        (
            size,
            mtime_ns,
            scanned,
            kept,
            next_ordinal,
            meta,
            meta_ordinal,
            *texts,
        ) = cast("list[object]", values)
        ints = (size, mtime_ns, scanned, kept, next_ordinal, meta_ordinal)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
            raise ValueError("not stored facts")
        if meta is not None and not isinstance(meta, dict):
            raise ValueError("not stored facts")
        if not all(v is None or isinstance(v, str) for v in texts):
            raise ValueError("not stored facts")
        strings = cast("list[str | None]", texts)
        facts = cls(
            size=cast("int", size),
            mtime_ns=cast("int", mtime_ns),
            scanned=cast("int", scanned),
            kept=cast("int", kept),
            next_ordinal=cast("int", next_ordinal),
            meta=cast("dict[str, Any] | None", meta),
            meta_ordinal=cast("int", meta_ordinal),
            preview=strings[0],
            model=strings[1],
            effort=strings[2],
            approval_policy=strings[3],
            approvals_reviewer=strings[4],
            sandbox_mode=strings[5],
            first_completed=strings[6],
            last_completed=strings[7],
            goal_turn=strings[8],
            pending=strings[9],
        )
        if facts.meta is not None:
            facts.history_base = meta_history_base(facts.meta)
        return facts

    # ------------------------------------------------------------------ state

    @property
    def listed(self) -> bool:
        """Whether what ``thread/list`` filters on is known (it cannot change as the file
        grows): the ``session_meta`` and the preview."""
        return self.meta is not None and self.preview is not None

    def matches(self, size: int, mtime_ns: int) -> bool:
        return self.size == size and self.mtime_ns == mtime_ns

    @property
    def whole(self) -> bool:
        """Whether every line of the file as last seen is folded (the tail in :meth:`view`)."""
        return self.scanned + len(self.tail) + self.torn == self.size

    def view(self) -> RolloutFacts:
        """The facts with the unterminated last line folded in, if there is one."""
        if not self.tail:
            return self
        facts = replace(self, tail=b"")
        record = _record(self.tail)
        if record is not None:
            facts.fold(record)
        return facts

    # ------------------------------------------------------------------ folding

    def fold(self, record: dict[str, Any]) -> None:
        """Fold one rollout line (a JSON object with a string ``type``)."""
        ordinal = record.get("ordinal")
        position = self.kept
        self.kept += 1
        if isinstance(ordinal, int) and not isinstance(ordinal, bool):
            position = ordinal
        self.next_ordinal = max(self.next_ordinal, position + 1)
        kind = record["type"]
        payload = record.get("payload")
        if kind == "event_msg":
            if isinstance(payload, dict):
                self._event(cast("dict[str, Any]", payload))
        elif kind == "turn_context":
            if isinstance(payload, dict):
                self._turn_context(cast("dict[str, Any]", payload))
        elif kind == "session_meta" and self.meta is None:
            meta = _session_meta(payload)
            if meta is not None:
                self.meta = meta
                self.meta_ordinal = ordinal if isinstance(ordinal, int) else 0
                self.history_base = meta_history_base(meta)

    def _event(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "item_completed":
            item = msg.get("item")
            if self.preview is None and isinstance(item, dict):
                entry = cast("dict[str, Any]", item)
                if entry.get("type") == "UserMessage":
                    self.preview = _user_text(entry)
        elif kind in ("task_started", "turn_started"):
            attribution = msg.get("turn_attribution")
            trigger = (
                cast("dict[str, Any]", attribution).get("turn_trigger")
                if isinstance(attribution, dict)
                else None
            )
            if self.pending is not None and trigger != "goal":
                self._ended(self.pending)
            self.pending = None
            self.goal_turn = "goal" if trigger == "goal" else None
        elif kind == "thread_goal_updated" and msg.get("turnId") is None and self.pending:
            self._ended(self.pending)  # a goal set anew: the run before it ended
            self.pending = None
        elif kind in ("task_complete", "turn_complete"):
            self._turn_complete(msg)
        elif kind == "user_message":
            if self.preview is None and isinstance(msg.get("message"), str):
                self.preview = msg["message"]
        elif kind == "thread_settings_applied":
            settings = msg.get("thread_settings")
            if isinstance(settings, dict):
                values = cast("dict[str, Any]", settings)
                if isinstance(values.get("model"), str):
                    self.model = values["model"]
                self.effort = _reasoning_effort(values, self.effort)

    def _turn_complete(self, msg: dict[str, Any]) -> None:
        """A turn's end, if it is unread activity (the listener's ``is_activity``: failed, or a
        final message that is not blank and asks to be noticed; a goal turn's end waits for
        what follows it)."""
        turn_id = msg.get("turn_id")
        if not isinstance(turn_id, str):
            return
        failed = msg.get("error") is not None
        final = msg.get("last_agent_message")
        if not failed and not (
            isinstance(final, str) and final.strip() and _DONT_NOTIFY not in final
        ):
            return
        if self.goal_turn is not None and not failed:
            self.pending = turn_id
        else:
            self._ended(turn_id)

    def read_turns(self) -> tuple[str | None, str | None]:
        """The first and last turns whose end is unread activity, a goal turn that ended the
        file's last goal run included."""
        if self.pending is None:
            return self.first_completed, self.last_completed
        return self.first_completed or self.pending, self.pending

    def _ended(self, turn_id: str) -> None:
        self.first_completed = self.first_completed or turn_id
        self.last_completed = turn_id

    def _turn_context(self, context: dict[str, Any]) -> None:
        model = context.get("model")
        if not isinstance(model, str) or not isinstance(context.get("cwd"), str):
            return  # not a turn_context the reader accepts
        self.model = model
        effort = context.get("effort")
        if isinstance(effort, str):
            self.effort = effort
        self.approval_policy = _str_or_none(context.get("approval_policy"))
        self.approvals_reviewer = _str_or_none(context.get("approvals_reviewer"))
        policy = context.get("sandbox_policy")
        kind = cast("dict[str, Any]", policy).get("type") if isinstance(policy, dict) else None
        self.sandbox_mode = kind if kind in _SANDBOX_MODES else None

    def fold_bytes(self, data: bytes, *, until_listed: bool = False) -> int:
        """Fold the whole lines of ``data`` (which starts at ``scanned``); returns how many
        bytes were consumed (up to the end of the last whole line folded). With
        ``until_listed``, stops after the line that made :attr:`listed` true."""
        at = 0
        end = len(data)
        while at < end:
            newline = data.find(b"\n", at)
            if newline < 0:
                break
            if newline > at:
                record = _record(data[at:newline])
                if record is not None:
                    self.fold(record)
            at = newline + 1
            if until_listed and self.listed:
                break
        self.scanned += at
        return at


def _record(raw: bytes) -> dict[str, Any] | None:
    if not raw.strip():
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    record = cast("dict[str, Any]", value)
    return record if isinstance(record.get("type"), str) else None


def scan(path: str, facts: RolloutFacts | None, *, until_listed: bool = False) -> RolloutFacts:
    """The facts of the file at ``path`` as it is now (``OSError`` if it cannot be read).

    ``facts`` (what an earlier scan or the writer knew) is continued from its ``scanned``
    offset unless the file shrank below it or changed without growing, and returned as is when
    the file did not change and already says enough; it is never modified. ``until_listed``
    reads only until :attr:`RolloutFacts.listed` holds."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        size, mtime_ns = stat.st_size, stat.st_mtime_ns
        if (
            facts is not None
            and facts.matches(size, mtime_ns)
            and (facts.whole or (until_listed and facts.listed))
        ):
            return facts
        if (
            facts is None
            or size < facts.scanned
            or (size == facts.size and mtime_ns != facts.mtime_ns)
        ):
            facts = RolloutFacts()
        else:
            facts = replace(facts, tail=b"", torn=0)
        facts.size, facts.mtime_ns = size, mtime_ns
        pending = b""
        offset = facts.scanned
        step = _HEAD if until_listed else _CHUNK
        while offset < size:
            chunk = os.pread(fd, min(step, size - offset), offset)
            if not chunk:
                break
            offset += len(chunk)
            step = min(step * 4, _CHUNK)
            data = pending + chunk
            used = facts.fold_bytes(data, until_listed=until_listed)
            pending = data[used:]
            if until_listed and facts.listed:
                return facts
        if _record(pending) is not None:
            facts.tail = pending
        else:
            facts.torn = len(pending)
        facts.size = facts.scanned + len(pending)  # the file may have been cut meanwhile
        return facts
    finally:
        os.close(fd)
