"""Normalise two servers' messages and compare them one by one.

Role: the judge of a conformance run. :func:`normalise_stream` turns what a client received into
comparable units: notifications ``{"method", "params"}``, server requests ``{"request",
"params"}`` and responses ``{"response": <request method>, "result" | "error"}``, with runs of
deltas of one item merged into one unit whose ``delta`` is their concatenation (chunking is not
behaviour; the text is). Only what must differ between two runs is rewritten:

- generated ids: thread, turn and item ids -> ``<thread:N>``, ``<turn:N>``, ``<item:N>``
  numbered per kind by first appearance in each stream (the same id in two places must stay
  the same id); ``processId`` -> ``<process:N>``; any other UUID -> ``<uuid>``;
- times (``emittedAtMs``, ``startedAt``, ``completedAtMs``, ``createdAt``, ``durationMs``, a
  goal's ``timeUsedSeconds``, ...)
  -> ``<time>`` unless null;
- scratch paths (the run's cwd, CODEX_HOME, scratch root) -> ``<cwd>``, ``<home>``,
  ``<scratch>``, and the time in a rollout file's path (``sessions/<date>/rollout-<time>-...``);
  ``userAgent`` -> ``<user-agent>``.

:func:`compare` aligns the two unit lists (``difflib``) and counts equal units; every unequal
pair is described by the JSON paths where it differs. :func:`thread_read_units` splits a
``thread/read`` answer into its thread header, each turn header and each item.

Boundary: pure functions on JSON values.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

__all__ = [
    "Comparison",
    "Difference",
    "Normaliser",
    "compare",
    "delta_checks",
    "diff_paths",
    "merge_deltas",
    "normalise_stream",
    "stream_units",
    "thread_read_units",
    "turn_units",
]

JsonObject = dict[str, Any]

_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ROLLOUT_TIME: Final = re.compile(
    r"sessions/\d{4}/\d{2}/\d{2}/rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-"
)
"""The date directories and creation time in a rollout file's path (``Thread.path``)."""
TIME_KEYS: Final = frozenset(
    {
        "emittedAtMs",
        "startedAtMs",
        "completedAtMs",
        "startedAt",
        "completedAt",
        "createdAt",
        "updatedAt",
        "recencyAt",
        "durationMs",
        "sectionEnteredAt",
        "timeUsedSeconds",
    }
)
ID_KEYS: Final = frozenset({"processId"})
DELTA_METHODS: Final = frozenset(
    {
        "item/agentMessage/delta",
        "item/reasoning/summaryTextDelta",
        "item/reasoning/textDelta",
        "item/plan/delta",
        "item/commandExecution/outputDelta",
    }
)


_THREAD_KEYS: Final = frozenset({"threadId", "sessionId", "forkedFromId", "parentThreadId"})
_TURN_KEYS: Final = frozenset({"turnId", "rootTurnId"})
_ITEM_KEYS: Final = frozenset({"itemId", "callId"})
# the object an ``id`` key belongs to, by the key that holds the object
_ID_OWNERS: Final = {"thread": "thread", "turn": "turn", "item": "item"}


class Normaliser:
    """Rewrites one stream's run-specific values (see the module docstring). One per stream.

    Thread, turn and item ids are numbered per kind in order of first appearance
    (``<thread:1>``, ``<turn:2>``, ``<item:1>``), so the same id in two places must still be
    the same id, and an extra id of another kind on one side does not shift the numbering of
    the rest. Any other UUID (revisions, installation ids, cursors) becomes ``<uuid>``.
    """

    def __init__(self, paths: Mapping[str, str]) -> None:
        # longest first, so a path inside another is replaced by its own name
        self._paths = sorted(paths.items(), key=lambda kv: len(kv[0]), reverse=True)
        self._ids: dict[str, dict[str, str]] = {}
        self._kind_of: dict[str, str] = {}

    def _id(self, kind: str, value: str) -> str:
        known = self._kind_of.get(value)
        if known is not None:
            return self._ids[known][value]
        table = self._ids.setdefault(kind, {})
        self._kind_of[value] = kind
        return table.setdefault(value, f"<{kind}:{len(table) + 1}>")

    def text(self, value: str) -> str:
        for path, name in self._paths:
            if path and path in value:
                value = value.replace(path, name)
        value = _ROLLOUT_TIME.sub("sessions/<date>/rollout-<time>-", value)
        return _UUID.sub(lambda m: self._known_or_uuid(m.group(0)), value)

    def _key_name(self, key: str) -> str:
        return self._known_or_uuid(key) if _UUID.fullmatch(key) else key

    def _known_or_uuid(self, value: str) -> str:
        kind = self._kind_of.get(value)
        return self._ids[kind][value] if kind is not None else "<uuid>"

    def _kind(self, key: str | None, owner: str | None) -> str | None:
        if key in _THREAD_KEYS:
            return "thread"
        if key in _TURN_KEYS:
            return "turn"
        if key in _ITEM_KEYS:
            return "item"
        if key == "id" and owner is not None:
            return _ID_OWNERS.get(owner)
        return None

    def value(self, value: object, key: str | None = None, owner: str | None = None) -> object:
        """``value`` normalised. The ids it holds under id keys are numbered first (in each
        object its own ``id`` before the other keys), so that the numbering does not depend on
        a server's key order and an id quoted in a string before its own key (a cursor before
        the thread) is still recognised."""
        self._register(value, key, owner)
        return self._value(value, key, owner)

    def _register(self, value: object, key: str | None, owner: str | None) -> None:
        if key in TIME_KEYS or key in ID_KEYS:
            return
        if isinstance(value, str):
            kind = self._kind(key, owner)
            if kind is not None and value:
                self._id(kind, value)
        elif isinstance(value, dict):
            here = key if key is not None else owner
            # an object's own id first: servers order keys differently (ours alphabetically,
            # so a thread's ``forkedFromId`` would otherwise be numbered before its ``id``)
            items = sorted(cast(dict[str, object], value).items(), key=lambda kv: kv[0] != "id")
            for k, v in items:
                self._register(v, k, here)
        elif isinstance(value, list):
            element_owner = "item" if key == "items" else ("turn" if key == "turns" else owner)
            for v in cast(list[object], value):
                self._register(v, None, element_owner)

    def _value(self, value: object, key: str | None = None, owner: str | None = None) -> object:
        if key in TIME_KEYS and value is not None:
            return "<time>"
        if key == "userAgent" and isinstance(value, str):
            return "<user-agent>"
        if key in ID_KEYS and value is not None:
            return self._id("process", str(value))
        if isinstance(value, str):
            kind = self._kind(key, owner)
            if kind is not None and value:
                return self._id(kind, value)
            return self.text(value)
        if isinstance(value, dict):
            here = key if key is not None else owner
            items = cast(dict[str, object], value).items()
            # a key that is an id (``readStates`` by thread id) is renamed as the id is
            return {self._key_name(k): self._value(v, k, here) for k, v in items}
        if isinstance(value, list):
            # a list's elements belong to the list's owner ("items": [...] holds items)
            element_owner = "item" if key == "items" else ("turn" if key == "turns" else owner)
            return [self._value(v, None, element_owner) for v in cast(list[object], value)]
        return value


def merge_deltas(units: Iterable[JsonObject]) -> list[JsonObject]:
    """Consecutive delta notifications of one method and item become one (``delta`` joined)."""
    out: list[JsonObject] = []
    for unit in units:
        method = unit.get("method")
        if method in DELTA_METHODS and out:
            last = out[-1]
            params = cast(JsonObject, unit.get("params") or {})
            last_params = cast(JsonObject, last.get("params") or {})
            same = last.get("method") == method and all(
                last_params.get(k) == params.get(k)
                for k in ("itemId", "summaryIndex", "contentIndex", "threadId", "turnId")
            )
            if same:
                merged = dict(last_params)
                merged["delta"] = str(last_params.get("delta", "")) + str(params.get("delta", ""))
                out[-1] = {**last, "params": merged}
                continue
        out.append(unit)
    return out


def normalise_stream(
    received: Sequence[JsonObject],
    sent: Sequence[JsonObject],
    paths: Mapping[str, str],
    *,
    upto: int | None = None,
) -> list[JsonObject]:
    """The comparable units of ``received[:upto]`` (module docstring)."""
    normaliser = Normaliser(paths)
    units = stream_units(received, sent, upto=upto)
    return [cast(JsonObject, normaliser.value(u)) for u in merge_deltas(units)]


def stream_units(
    received: Sequence[JsonObject], sent: Sequence[JsonObject], *, upto: int | None = None
) -> list[JsonObject]:
    """What a client received as units, not normalised: notifications ``{"method", "params"}``,
    server requests ``{"request", "params"}``, answers ``{"response": <request method>,
    "result" | "error"}`` (``sent`` names the method of each answered request)."""
    request_methods = {m["id"]: m["method"] for m in sent if "id" in m and "method" in m}
    units: list[JsonObject] = []
    for message in received[:upto]:
        method = message.get("method")
        if method is not None and "id" in message:
            units.append({"request": method, "params": message.get("params")})
        elif method is not None:
            units.append({"method": method, "params": message.get("params")})
        elif "id" in message:
            unit: JsonObject = {"response": request_methods.get(message["id"], "?")}
            if "error" in message:
                unit["error"] = message["error"]
            else:
                unit["result"] = message.get("result")
            units.append(unit)
    return units


_DELTA_OF_ITEM: Final = {
    "agentMessage": "item/agentMessage/delta",
    "plan": "item/plan/delta",
    "commandExecution": "item/commandExecution/outputDelta",
}


def _completed_text(item: JsonObject) -> str | None:
    if item.get("type") == "commandExecution":
        output = item.get("aggregatedOutput")
        return output if isinstance(output, str) else None
    text = item.get("text")
    return text if isinstance(text, str) else None


def delta_checks(units: Sequence[JsonObject]) -> list[JsonObject]:
    """One unit per completed item that was streamed: do its deltas, concatenated, equal the
    completed item's text? (A rollout carries no deltas: this is how a replay keeps them
    honest.)"""
    streamed: dict[tuple[str, object], str] = {}
    for unit in units:
        method = unit.get("method")
        params = cast(JsonObject, unit.get("params") or {})
        if method in DELTA_METHODS:
            key = (str(method), params.get("itemId"))
            streamed[key] = streamed.get(key, "") + str(params.get("delta", ""))
    checks: list[JsonObject] = []
    for unit in units:
        if unit.get("method") != "item/completed":
            continue
        item = cast(JsonObject, cast(JsonObject, unit.get("params") or {}).get("item") or {})
        method = _DELTA_OF_ITEM.get(str(item.get("type")))
        joined = streamed.get((method or "", item.get("id")))
        if method is None or joined is None:
            continue
        checks.append(
            {
                "check": "deltas == completed text",
                "item": item.get("id"),
                "equal": joined == _completed_text(item),
            }
        )
    return checks


def thread_read_units(answer: JsonObject, paths: Mapping[str, str]) -> list[JsonObject]:
    """A ``thread/read`` answer as units: the thread without turns, each turn without items,
    each item (tagged with its turn's position)."""
    normaliser = Normaliser(paths)
    value = cast(JsonObject, normaliser.value(answer))
    if "error" in value:
        return [{"read": "error", "error": value["error"]}]
    result = cast(JsonObject, value.get("result") or {})
    thread = dict(cast(JsonObject, result.get("thread") or {}))
    turns = cast(list[JsonObject], thread.pop("turns", None) or [])
    rest = {k: v for k, v in result.items() if k != "thread"}
    return [{"read": "thread", "thread": thread, "rest": rest}, *_turn_units(turns)]


def turn_units(turns: Sequence[JsonObject], paths: Mapping[str, str]) -> list[JsonObject]:
    """Turns (a ``thread/read`` answer's, or rebuilt from a rollout) as units: each turn without
    its items, then each item."""
    normaliser = Normaliser(paths)
    return _turn_units(cast(list[JsonObject], normaliser.value(list(turns), "turns")))


def _turn_units(turns: Sequence[JsonObject]) -> list[JsonObject]:
    units: list[JsonObject] = []
    for index, turn in enumerate(turns):
        header = {k: v for k, v in turn.items() if k != "items"}
        units.append({"read": "turn", "turn": index, "header": header})
        units.extend(
            {"read": "item", "turn": index, "item": item}
            for item in cast(list[JsonObject], turn.get("items") or [])
        )
    return units


def diff_paths(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON values differ: ``path: a != b`` lines (a missing key shows as ``<absent>``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        da, db = cast(dict[str, object], a), cast(dict[str, object], b)
        out: list[str] = []
        for key in [*da, *(k for k in db if k not in da)]:
            sub = f"{path}.{key}" if path else key
            if key not in db:
                out.append(f"{sub}: only in real ({_short(da[key])})")
            elif key not in da:
                out.append(f"{sub}: only in bridge ({_short(db[key])})")
            else:
                out.extend(diff_paths(da[key], db[key], sub))
        return out
    if isinstance(a, list) and isinstance(b, list):
        la, lb = cast(list[object], a), cast(list[object], b)
        if len(la) != len(lb):
            return [f"{path}: {len(la)} elements in real, {len(lb)} in bridge"]
        return [
            p
            for i, (x, y) in enumerate(zip(la, lb, strict=True))
            for p in diff_paths(x, y, f"{path}[{i}]")
        ]
    if a != b:
        left, right = _short(cast(object, a)), _short(cast(object, b))
        return [f"{path or '<value>'}: real {left} != bridge {right}"]
    return []


def _short(value: object, limit: int = 80) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unit_label(unit: JsonObject) -> str:
    for key in ("method", "request", "response"):
        if key in unit:
            label = f"{key if key != 'method' else ''} {unit[key]}".strip()
            params = unit.get("params")
            item = cast(JsonObject, params).get("item") if isinstance(params, dict) else None
            if isinstance(item, dict):
                label += f" ({cast(JsonObject, item).get('type')})"
            return label
    if "check" in unit:
        return f"check {unit['check']}"
    if "read" in unit:
        item = unit.get("item")
        kind = cast(JsonObject, item).get("type") if isinstance(item, dict) else None
        return f"thread/read {unit['read']}" + (f" ({kind})" if kind else "")
    return "?"


@dataclass(frozen=True, slots=True)
class Difference:
    kind: str
    """``changed`` (a pair differs), ``missing`` (only the real one has it), ``extra``."""
    label: str
    details: tuple[str, ...] = ()


@dataclass
class Comparison:
    compared: int = 0
    equal: int = 0
    differences: list[Difference] = field(default_factory=list[Difference])

    def add(self, other: Comparison) -> None:
        self.compared += other.compared
        self.equal += other.equal
        self.differences.extend(other.differences)

    @property
    def percent(self) -> float:
        return 100.0 * self.equal / self.compared if self.compared else 100.0

    def to_json(self) -> JsonObject:
        """The comparison as a results file stores it."""
        return {
            "compared": self.compared,
            "equal": self.equal,
            "differences": [
                {"kind": d.kind, "label": d.label, "details": list(d.details)}
                for d in self.differences
            ],
        }


def _key(unit: JsonObject) -> str:
    return json.dumps(unit, sort_keys=True)


def compare(real: Sequence[JsonObject], bridge: Sequence[JsonObject]) -> Comparison:
    """Align the two unit lists; ``compared`` is the longer list's length, ``equal`` the units
    found equal in order. Unequal units are paired by label where possible."""
    ka, kb = [_key(u) for u in real], [_key(u) for u in bridge]
    matcher = difflib.SequenceMatcher(a=ka, b=kb, autojunk=False)
    result = Comparison(compared=max(len(real), len(bridge)))
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            result.equal += i2 - i1
            continue
        left, right = list(real[i1:i2]), list(bridge[j1:j2])
        for a in left:
            label = unit_label(a)
            partner = next((b for b in right if unit_label(b) == label), None)
            if partner is None:
                result.differences.append(Difference("missing", label))
                continue
            right.remove(partner)
            result.differences.append(Difference("changed", label, tuple(diff_paths(a, partner))))
        result.differences.extend(Difference("extra", unit_label(b)) for b in right)
    return result


def where_they_differ(
    real: Sequence[JsonObject], other: Sequence[JsonObject], context: int = 3
) -> list[str]:
    """The two unit lists' labels as a unified diff: where a unit went missing, came extra or
    moved (a moved unit is one missing and one extra, whose places only this shows)."""
    return list(
        difflib.unified_diff(
            [unit_label(u) for u in real],
            [unit_label(u) for u in other],
            "real",
            "other",
            n=context,
            lineterm="",
        )
    )


_RACING: Final = frozenset({"warning", "thread/settings/updated"})
"""Notifications that race the answer to the request that caused them: the real binary sends
the model-catalogue ``warning`` of a turn, and the ``thread/settings/updated`` of a turn that
changes the collaboration mode, before or after the ``turn/start`` answer, run to run
(probed); the model-catalogue ``warning`` of a new thread also comes before the
``thread/start`` answer or after its ``thread/started``, run to run (model mode, probed)."""


def _raced(unit: JsonObject) -> bool:
    return "response" in unit or unit.get("method") == "thread/started"


_TURN_BEGUN: Final = frozenset({"thread/status/changed", "turn/started"})
"""What a turn's start sends beside the ``turn/start`` answer: 0.163.0 answers from the request
and begins the turn on its session's task, and on a busy machine the thread's ``active`` status
and ``turn/started`` came before the answer (seen once, on a resumed thread after a restart,
in a fresh clone's suite beside two CPU burners and another pytest-xdist worker), and once
the item the turn begins with as well (``auto_compact``: its ``contextCompaction`` item starts
with no model request before it); the canonical order is the answer first, as the binary
sends it otherwise."""


def _answered_id(unit: JsonObject, method: str, key: str) -> object:
    """The id of the object ``key`` of the answer to ``method`` (``turn/start``'s ``turn``,
    ``thread/fork``'s ``thread``); ``None``: not such an answer."""
    if unit.get("response") != method:
        return None
    result = unit.get("result")
    value = cast(dict[str, object], result).get(key) if isinstance(result, dict) else None
    return cast(dict[str, object], value).get("id") if isinstance(value, dict) else None


def _begins_turn(unit: JsonObject, turn_id: object) -> bool:
    """Whether ``unit`` is one of what the start of turn ``turn_id`` sends, which can overtake
    its answer: the status change or ``turn/started`` (:data:`_TURN_BEGUN`), or a notification
    of that turn (its ``turnId``)."""
    if unit.get("method") in _TURN_BEGUN:
        return True
    params = unit.get("params")
    return (
        turn_id is not None
        and isinstance(params, dict)
        and cast(dict[str, object], params).get("turnId") == turn_id
    )


def _resolved_status_race(before: JsonObject, status: JsonObject, after: JsonObject) -> bool:
    """``serverRequest/resolved``, ``thread/status/changed``, ``item/completed``: the status a
    thread goes back to once its approval is answered races the item the answer completed (a
    declined command's ``item/completed``): 0.163.0 sends either first, run to run (probed on a
    busy machine, 1 run in 6); the canonical order is the item first."""
    return (
        before.get("method") == "serverRequest/resolved"
        and status.get("method") == "thread/status/changed"
        and after.get("method") == "item/completed"
    )


_FORK_TAIL: Final = ("thread/tokenUsage/updated", "thread/started")
"""What 0.163.0 sends a fork's client after the ``thread/fork`` answer, in this order: the
parent's token usage replayed for the new thread, then its ``thread/started``. The fork handler
(``thread_fork`` in ``codex-rs/app-server``'s thread request processor, upstream source) sends
the answer, then awaits the usage replay (read back from the rollout) and the goal snapshot
before it sends ``thread/started``; the client, answered, already starts a turn on the new
thread, and that request is handled beside it. On a busy machine the tail came last: after the
turn's model-catalogue ``warning``, its answer, its ``active`` status and ``turn/started`` (once
in 60 runs of ``revert_fork`` beside four CPU burners; the binary's ``emittedAtMs`` in that
order too). A CI run beside two burners had the fork's ``warning`` once missing and once extra,
which is the tail overtaken by the warning alone. The canonical order is the tail right after
the answer, as the binary sends it otherwise; only what the next request on the new thread
sends is passed over, so a tail that comes late behind anything else is still a difference."""


def _thread_of(unit: JsonObject) -> object:
    """The thread a notification is about: its ``threadId``, or the id of the thread a
    ``thread/started`` announces."""
    params = unit.get("params")
    if not isinstance(params, dict):
        return None
    params = cast(dict[str, object], params)
    if unit.get("method") == "thread/started":
        thread = params.get("thread")
        return cast(dict[str, object], thread).get("id") if isinstance(thread, dict) else None
    return params.get("threadId")


def _fork_tail_first(out: list[JsonObject]) -> None:
    """Move each fork's tail (:data:`_FORK_TAIL`) back to right after its answer, over what the
    client's next request on the new thread sends: a notification about that thread (not its
    ``thread/started``) or a ``turn/start`` answer. Anything else keeps the tail where it
    came."""
    for i, unit in enumerate(out):
        forked = _answered_id(unit, "thread/fork", "thread")
        if forked is None:
            continue
        at = i + 1
        for method in _FORK_TAIL:
            j = at
            while j < len(out):
                candidate = out[j]
                if candidate.get("method") == method and _thread_of(candidate) == forked:
                    out.insert(at, out.pop(j))
                    at += 1
                    break
                passable = candidate.get("response") == "turn/start" or (
                    candidate.get("method") != "thread/started" and _thread_of(candidate) == forked
                )
                if not passable:
                    break
                j += 1


def canonical_order(units: list[JsonObject]) -> list[JsonObject]:
    """A fork's token-usage replay and ``thread/started`` that came after what the next turn on
    the new thread sends are put back right after the ``thread/fork`` answer; a ``turn/start``
    answer that came after its turn's status change, ``turn/started`` or notifications is put
    before them; a racing notification right after an answer (or a ``thread/started``) is put
    before it, and a thread's status after an answered approval after the item it completed
    (both sides alike). Idempotent: a stream already in this order stays as it is."""
    out = list(units)
    _fork_tail_first(out)
    for i in range(1, len(out)):
        if out[i].get("response") != "turn/start":
            continue
        turn_id = _answered_id(out[i], "turn/start", "turn")
        j = i
        while j > 0 and _begins_turn(out[j - 1], turn_id):
            out[j - 1], out[j] = out[j], out[j - 1]
            j -= 1
    for i in range(1, len(out)):
        j = i
        while j > 0 and out[j].get("method") in _RACING and _raced(out[j - 1]):
            out[j - 1], out[j] = out[j], out[j - 1]
            j -= 1
    for i in range(1, len(out) - 1):
        if _resolved_status_race(out[i - 1], out[i], out[i + 1]):
            out[i], out[i + 1] = out[i + 1], out[i]
    return out
