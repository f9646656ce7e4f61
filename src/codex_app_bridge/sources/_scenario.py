"""``serve --scenario FILE``: fake turns in a few lines, chosen by what the user typed.

A scenario is JSON Lines, one *rule* per line (blank lines and lines starting with ``#`` are
skipped). A rule says which turns it answers and what the turn does::

    {"match": "hello", "reply": "Hi! How can I help?"}
    {"regex": "^run (.+)$", "command": "\\1", "output": "done\\n"}
    {"match": "deploy", "approval": "make deploy", "output": "deployed\\n", "reply": "Deployed."}
    {"match": "plan", "plan": ["read the code", "write the fix"], "reply": "Planned."}
    {"match": "break", "fail": "the model is overloaded"}
    {"reply": "first unmatched turn"}
    {"reply": "second unmatched turn"}
    {"loop": true}
    {"default": true, "reply": "I have no rule for that."}

Choosing: a turn's input text is tried against the ``match`` (substring, any case) and
``regex`` (``re.search``) rules in file order; the first that matches plays (a regex rule may
use its groups as ``\\1`` or ``\\g<name>`` in its texts). Otherwise the thread's next *sequence*
rule plays (a rule with no matcher; one per unmatched turn, in file order); when the sequence is
used up it starts again if the file has a ``{"loop": true}`` line, else the ``default`` rule
plays; with none of these, the turn fails saying so.

What a turn does: the steps of ``"steps": [{...}, ...]`` in that order, or the step keys on the
rule itself in this order: ``delay`` (seconds of real time before the rest), ``reasoning``
(a reasoning item with that summary), ``plan`` (steps as strings, or ``{"step", "status"}``:
``turn/plan/updated``), ``command`` (a command execution item with ``output`` and
``exit_code``, default ``""`` and 0), ``approval`` (a command, or ``true`` beside ``command``:
the client is asked first; accepted, it runs; declined, the item is ``declined``; cancelled,
the turn is interrupted), ``patch`` (``{"path": "content", ...}`` added files, a
``fileChange`` item; with ``"approval": true`` the client is asked first), ``reply`` (an agent
message streamed word by word), ``fail`` (the turn fails with that message). Every turn opens
with ``task_started`` and the user message, and ends with ``task_complete``.

The steps become the core events Codex core emits for them (``item_started`` / deltas /
``item_completed``, ``exec_approval_request``, ``plan_update``, ``error``), so a client sees
exactly what the mapper makes of them. ``parse_scenario`` checks every line and reports every
problem at once (``ScenarioError.problems``: ``(line, message)``), which ``check`` prints.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final, cast

import anyio
import orjson

from codex_app_bridge.protocol.core import (
    AgentMessageContentDeltaEvent,
    AgentMessageItem,
    ApplyPatchApprovalRequestEvent,
    CommandExecutionItem,
    Duration,
    EventMsg,
    ExecApprovalOp,
    ExecApprovalRequestEvent,
    ExecCommandOutputDeltaEvent,
    FileChange,
    FileChangeAdd,
    FileChangeItem,
    ItemCompletedEvent,
    ItemStartedEvent,
    ParsedCommand,
    ParsedCommandUnknown,
    PatchApprovalOp,
    PlanItemArg,
    PlanUpdateEvent,
    ReasoningContentDeltaEvent,
    ReasoningItem,
    TaskCompleteEvent,
    TextAgentMessageContent,
    UserMessageItem,
)
from codex_app_bridge.protocol.jsonrpc import now_ms
from codex_app_bridge.sources._base import (
    SourceDefaults,
    TurnRequest,
    aborted_turn,
    failed_turn,
    input_text,
    task_started_event,
    user_message_events,
)

__all__ = [
    "STEP_KEYS",
    "Scenario",
    "ScenarioError",
    "ScenarioSource",
    "Step",
    "load_scenario",
    "looks_like_scenario",
    "parse_scenario",
]

_WORD = re.compile(r"\S+\s*|\s+")
STEP_KEYS: Final = ("delay", "reasoning", "plan", "command", "approval", "patch", "reply", "fail")
"""The step keys, in the order they play when written on a rule itself."""
_MATCH_KEYS: Final = ("match", "regex", "default")
_STEP_FIELDS: Final = frozenset({*STEP_KEYS, "output", "exit_code"})
_PLAN_STATUSES: Final = frozenset({"pending", "in_progress", "completed"})


class ScenarioError(ValueError):
    """A scenario that cannot be used; ``problems`` lists ``(line number, message)``."""

    def __init__(self, name: str, problems: list[tuple[int, str]]) -> None:
        self.name = name
        self.problems = problems
        shown = "; ".join(f"line {n}: {m}" for n, m in problems[:3])
        more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
        super().__init__(f"{name}: {shown}{more}")


@dataclass(frozen=True, slots=True)
class Step:
    kind: str
    """One of ``STEP_KEYS``, ``approval`` meaning an asked command."""
    text: str = ""
    output: str = ""
    exit_code: int = 0
    seconds: float = 0.0
    ask: bool = False
    plan: tuple[tuple[str, str], ...] = ()
    files: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    line: int
    steps: tuple[Step, ...]
    match: str | None = None
    regex: re.Pattern[str] | None = None
    default: bool = False


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    matched: tuple[Rule, ...]
    sequence: tuple[Rule, ...]
    default: Rule | None
    loop: bool

    def choose(self, text: str, position: int) -> tuple[Rule | None, re.Match[str] | None, bool]:
        """The rule for a turn's input ``text`` when ``position`` sequence rules were used on
        its thread: ``(rule, regex match, whether it took a sequence rule)``."""
        folded = text.casefold()
        for rule in self.matched:
            if rule.match is not None and rule.match.casefold() in folded:
                return rule, None, False
            if rule.regex is not None and (found := rule.regex.search(text)) is not None:
                return rule, found, False
        if self.sequence and (position < len(self.sequence) or self.loop):
            return self.sequence[position % len(self.sequence)], None, True
        return self.default, None, False


def looks_like_scenario(line: object) -> bool:
    """Whether a decoded JSON line is a scenario rule (not an event envelope or rollout line)."""
    if not isinstance(line, dict):
        return False
    keys = set(cast(dict[str, Any], line))
    return not ({"msg", "payload"} & keys) and bool(
        keys & {*_MATCH_KEYS, *_STEP_FIELDS, "steps", "loop"}
    )


def _string(value: object, key: str, problems: list[str]) -> str:
    if isinstance(value, str):
        return value
    problems.append(f"{key!r} must be a string, not {orjson.dumps(value).decode()}")
    return ""


def _plan(value: object, problems: list[str]) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list) or not value:
        problems.append("'plan' must be a non-empty list of steps (strings or {step, status})")
        return ()
    steps: list[tuple[str, str]] = []
    for index, entry in enumerate(cast(list[object], value)):
        if isinstance(entry, str):
            steps.append((entry, "completed" if index == 0 else "pending"))
            continue
        item = cast(dict[str, object], entry) if isinstance(entry, dict) else {}
        step, status = item.get("step"), item.get("status", "pending")
        if not isinstance(step, str) or status not in _PLAN_STATUSES:
            problems.append(
                f"'plan' step {index + 1} must be a string or {{step, status}} with status "
                "pending, in_progress or completed"
            )
            continue
        steps.append((step, cast(str, status)))
    return tuple(steps)


def _files(value: object, problems: list[str]) -> tuple[tuple[str, str], ...]:
    if isinstance(value, str):
        return ((value, ""),)
    if isinstance(value, dict) and value:
        entries = cast(dict[str, object], value)
        if all(isinstance(v, str) for v in entries.values()):
            return tuple((k, cast(str, v)) for k, v in entries.items())
    problems.append("'patch' must be a path or a non-empty {path: content} object")
    return ()


def _steps_of(body: dict[str, Any], problems: list[str]) -> list[Step]:
    """The steps written on one object (a rule or one entry of ``steps``), in play order."""
    steps: list[Step] = []
    approval = body.get("approval")
    if ("output" in body or "exit_code" in body) and (
        "command" not in body and not isinstance(approval, str)
    ):
        problems.append("'output' and 'exit_code' belong to a 'command' or an 'approval'")
    exit_code = body.get("exit_code", 0)
    if not isinstance(exit_code, int) or isinstance(exit_code, bool):
        problems.append("'exit_code' must be an integer")
        exit_code = 0
    output = _string(body.get("output", ""), "output", problems)
    if approval is not None and not isinstance(approval, str | bool):
        problems.append("'approval' must be a command (string) or true")
    for key in STEP_KEYS:
        if key not in body:
            continue
        value = body[key]
        if key == "delay":
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                problems.append("'delay' must be seconds >= 0")
            else:
                steps.append(Step("delay", seconds=float(value)))
        elif key in ("reasoning", "reply", "fail"):
            steps.append(Step(key, text=_string(value, key, problems)))
        elif key == "plan":
            steps.append(Step("plan", plan=_plan(value, problems)))
        elif key == "command":
            text = _string(value, key, problems)
            steps.append(Step("command", text, output, exit_code, ask=approval is True))
        elif key == "approval" and isinstance(value, str):
            if "command" in body:
                problems.append("'approval' beside 'command' must be true")
            steps.append(Step("command", value, output, exit_code, ask=True))
        elif key == "approval" and value is True and "command" not in body and "patch" not in body:
            problems.append("'approval': true asks for a 'command' or a 'patch' on the same rule")
        elif key == "patch":
            steps.append(Step("patch", files=_files(value, problems), ask=approval is True))
    return steps


def _rule(line: dict[str, Any], number: int, problems: list[str]) -> Rule | None:
    unknown = sorted(set(line) - {*_MATCH_KEYS, *_STEP_FIELDS, "steps", "loop"})
    if unknown:
        problems.append(
            f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
            f"(a rule has match / regex / default, and steps or {', '.join(STEP_KEYS)})"
        )
    matchers = [k for k in _MATCH_KEYS if k in line]
    if len(matchers) > 1:
        problems.append(f"a rule has one matcher, not {' and '.join(matchers)}")
    match = line.get("match")
    if match is not None and (not isinstance(match, str) or not match):
        problems.append("'match' must be a non-empty string")
    pattern: re.Pattern[str] | None = None
    if "regex" in line:
        try:
            pattern = re.compile(_string(line["regex"], "regex", problems))
        except re.error as exc:
            problems.append(f"'regex' does not compile: {exc}")
    if "default" in line and line["default"] is not True:
        problems.append("'default' must be true")
    if "steps" in line:
        if set(line) & _STEP_FIELDS:
            problems.append("write the steps either in 'steps' or on the rule, not both")
        entries = line["steps"]
        steps: list[Step] = []
        if not isinstance(entries, list) or not entries:
            problems.append("'steps' must be a non-empty list of step objects")
        else:
            for index, entry in enumerate(cast(list[object], entries)):
                if not isinstance(entry, dict):
                    problems.append(f"steps[{index}] must be an object")
                    continue
                body = cast(dict[str, Any], entry)
                extra = sorted(set(body) - _STEP_FIELDS)
                if extra:
                    problems.append(f"steps[{index}]: unknown key {extra[0]!r}")
                steps.extend(_steps_of(body, problems))
    else:
        steps = _steps_of(line, problems)
    if not steps and not unknown:
        problems.append(
            f"this rule's turn does nothing a client would see: give it one of {', '.join(STEP_KEYS)}"
        )
    if problems:
        return None
    return Rule(
        number,
        tuple(steps),
        match=match if isinstance(match, str) else None,
        regex=pattern,
        default=line.get("default") is True,
    )


def parse_scenario(data: bytes, *, name: str = "<scenario>") -> Scenario:
    """A scenario from its bytes; ``ScenarioError`` with every problem of every line."""
    problems: list[tuple[int, str]] = []
    matched: list[Rule] = []
    sequence: list[Rule] = []
    defaults: list[Rule] = []
    loop = False
    for number, raw in enumerate(data.splitlines(), start=1):
        text = raw.strip()
        if not text or text.startswith(b"#"):
            continue
        try:
            line = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            problems.append((number, f"not JSON: {exc}"))
            continue
        if not isinstance(line, dict):
            problems.append((number, "a rule is a JSON object"))
            continue
        fields = cast(dict[str, Any], line)
        if "loop" in fields:
            if fields != {"loop": True}:
                problems.append((number, 'a loop line is {"loop": true} alone'))
            loop = True
            continue
        found: list[str] = []
        rule = _rule(fields, number, found)
        problems.extend((number, problem) for problem in found)
        if rule is None:
            continue
        if rule.default:
            defaults.append(rule)
        elif rule.match is not None or rule.regex is not None:
            matched.append(rule)
        else:
            sequence.append(rule)
    for extra in defaults[1:]:
        problems.append(
            (extra.line, f"a second default rule (the first is line {defaults[0].line})")
        )
    if loop and not sequence:
        problems.append((0, '{"loop": true} loops the rules without a matcher, and there are none'))
    if not (matched or sequence or defaults) and not problems:
        problems.append((0, "the scenario has no rules"))
    if problems:
        raise ScenarioError(name, sorted(problems))
    default = defaults[0] if defaults else None
    return Scenario(name, tuple(matched), tuple(sequence), default, loop)


def load_scenario(path: str | Path) -> Scenario:
    """``parse_scenario`` of a file (``ScenarioError`` if it cannot be read)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ScenarioError(str(path), [(0, f"cannot read it: {exc.strerror or exc}")]) from None
    return parse_scenario(data, name=str(path))


def _deltas(text: str) -> list[str]:
    return _WORD.findall(text)


@dataclass
class _Turn:
    """The events of one scenario turn, built step by step."""

    request: TurnRequest
    expand: Callable[[str], str]
    pace: float
    counter: int = 0
    last_message: str | None = None
    failed: str | None = None
    aborted: bool = False
    emitted: list[EventMsg] = field(default_factory=list[EventMsg])

    @property
    def thread_id(self) -> str:
        return self.request.thread_id

    @property
    def turn_id(self) -> str:
        return self.request.turn_id

    def item_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.request.turn_id.replace('-', '')}_{self.counter}"


class ScenarioSource:
    """Plays a ``Scenario`` (see the module docstring); ``pace``: seconds before each streamed
    delta (real time; a seeded clock still stands still)."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        pace: float = 0.0,
        model: str = "codex-app-bridge-scenario",
        model_provider: str = "codex-app-bridge",
    ) -> None:
        self.scenario = scenario
        self.pace = pace
        self._defaults = SourceDefaults(model=model, model_provider=model_provider)
        self._positions: dict[str, int] = {}

    @property
    def defaults(self) -> SourceDefaults:
        return self._defaults

    async def turn(self, request: TurnRequest) -> AsyncIterator[EventMsg]:
        thread_id, turn_id = request.thread_id, request.turn_id
        started = request.started_at_ms
        yield task_started_event(turn_id, started)
        if request.input:
            user = UserMessageItem(id=request.user_message_id, content=list(request.input))
            for event in user_message_events(thread_id, turn_id, user, now_ms()):
                yield event
        text = input_text(request.input)
        position = self._positions.get(thread_id, 0)
        rule, found, sequenced = self.scenario.choose(text, position)
        if sequenced:
            self._positions[thread_id] = position + 1
        if rule is None:
            message = (
                f"codex-app-bridge: the scenario {self.scenario.name} has no rule for "
                f"{text!r} (no match, "
                + ("its sequence is used up and " if self.scenario.sequence else "")
                + "no default rule)"
            )
            for event in failed_turn(
                turn_id, message, started_at_ms=started, completed_at_ms=now_ms()
            ):
                yield event
            return
        turn = _Turn(request, found.expand if found is not None else _same, self.pace)
        for step in rule.steps:
            async for event in self._step(turn, step):
                yield event
            if turn.aborted:
                yield aborted_turn(turn_id, started, now_ms())
                return
            if turn.failed is not None:
                for event in failed_turn(
                    turn_id, turn.failed, started_at_ms=started, completed_at_ms=now_ms()
                ):
                    yield event
                return
        completed = now_ms()
        yield TaskCompleteEvent(
            root_turn_id=turn_id,
            turn_id=turn_id,
            last_agent_message=turn.last_message,
            started_at=started // 1000,
            completed_at=completed // 1000,
            duration_ms=max(0, completed - started),
        )

    async def _pause(self, seconds: float) -> None:
        if seconds > 0:
            await anyio.sleep(seconds)

    async def _step(self, turn: _Turn, step: Step) -> AsyncIterator[EventMsg]:
        if step.kind == "delay":
            await self._pause(step.seconds)
        elif step.kind == "reply":
            text = turn.expand(step.text)
            item_id = turn.item_id("msg")
            done = AgentMessageItem(id=item_id, content=[TextAgentMessageContent(text=text)])
            started = AgentMessageItem(id=item_id, content=[])
            delta = partial(
                AgentMessageContentDeltaEvent,
                thread_id=turn.thread_id,
                turn_id=turn.turn_id,
                item_id=item_id,
            )
            async for event in self._streamed(turn, started, done, text, delta):
                yield event
            turn.last_message = text
        elif step.kind == "reasoning":
            text = turn.expand(step.text)
            item_id = turn.item_id("rs")
            done = ReasoningItem(id=item_id, summary_text=[text], raw_content=[])
            started = ReasoningItem(id=item_id, summary_text=[], raw_content=[])
            delta = partial(
                ReasoningContentDeltaEvent,
                thread_id=turn.thread_id,
                turn_id=turn.turn_id,
                item_id=item_id,
                summary_index=0,
            )
            async for event in self._streamed(turn, started, done, text, delta):
                yield event
        elif step.kind == "plan":
            plan = [PlanItemArg(step=turn.expand(s), status=status) for s, status in step.plan]
            yield PlanUpdateEvent(plan=plan)
        elif step.kind == "command":
            async for event in self._command(turn, step):
                yield event
        elif step.kind == "patch":
            async for event in self._patch(turn, step):
                yield event
        elif step.kind == "fail":
            turn.failed = turn.expand(step.text)

    async def _streamed(
        self,
        turn: _Turn,
        started: AgentMessageItem | ReasoningItem,
        done: AgentMessageItem | ReasoningItem,
        text: str,
        delta: Callable[..., EventMsg],
    ) -> AsyncIterator[EventMsg]:
        """An item started empty, ``text`` streamed as ``delta(delta=piece)`` events (paced),
        then the item completed as ``done``."""
        at = now_ms()
        thread_id, turn_id = turn.thread_id, turn.turn_id
        yield ItemStartedEvent(thread_id=thread_id, turn_id=turn_id, item=started, started_at_ms=at)
        for piece in _deltas(text):
            await self._pause(turn.pace)
            yield delta(delta=piece)
        yield ItemCompletedEvent(
            thread_id=thread_id,
            turn_id=turn_id,
            item=done,
            started_at_ms=at,
            completed_at_ms=now_ms(),
        )

    async def _command(self, turn: _Turn, step: Step) -> AsyncIterator[EventMsg]:
        request = turn.request
        command = turn.expand(step.text)
        argv = ["/bin/bash", "-lc", command]
        call_id = turn.item_id("call")
        parsed: list[ParsedCommand] = [ParsedCommandUnknown(cmd=command)]
        at = now_ms()
        status = "completed" if step.exit_code == 0 else "failed"
        if step.ask:
            asking = ExecApprovalRequestEvent(
                call_id=call_id,
                turn_id=request.turn_id,
                started_at_ms=at,
                command=argv,
                cwd=request.cwd,
                reason=f"the scenario asks to run {command}",
                parsed_cmd=parsed,
            )
            yield asking
            answer = await request.replies.wait_for(asking)
            name = _decision(answer.decision if isinstance(answer, ExecApprovalOp) else None)
            if name == "abort":
                turn.aborted = True
                return
            if name == "denied":
                status = "declined"
        cwd = request.cwd if request.cwd.startswith("file://") else "file://" + request.cwd
        item = CommandExecutionItem(
            id=call_id,
            process_id="1000",
            command=argv,
            cwd=cwd,
            parsed_cmd=parsed,
            source="unified_exec_startup",
            status="in_progress",
        )
        if status != "declined":
            yield ItemStartedEvent(
                thread_id=turn.thread_id, turn_id=turn.turn_id, item=item, started_at_ms=at
            )
            output = turn.expand(step.output)
            if output:
                yield ExecCommandOutputDeltaEvent.from_bytes(call_id, "stdout", output.encode())
            done = item.model_copy(
                update={
                    "status": status,
                    "aggregated_output": output,
                    "exit_code": step.exit_code,
                    "duration": Duration.from_millis(0),
                }
            )
        else:
            done = item.model_copy(update={"status": "declined"})
        yield ItemCompletedEvent(
            thread_id=turn.thread_id,
            turn_id=turn.turn_id,
            item=done,
            started_at_ms=at,
            completed_at_ms=now_ms(),
        )

    async def _patch(self, turn: _Turn, step: Step) -> AsyncIterator[EventMsg]:
        request = turn.request
        call_id = turn.item_id("call")
        changes: dict[str, FileChange] = {
            turn.expand(path): FileChangeAdd(content=turn.expand(content))
            for path, content in step.files
        }
        at = now_ms()
        accepted = True
        if step.ask:
            asking = ApplyPatchApprovalRequestEvent(
                call_id=call_id, turn_id=request.turn_id, started_at_ms=at, changes=changes
            )
            yield asking
            answer = await request.replies.wait_for(asking)
            name = _decision(answer.decision if isinstance(answer, PatchApprovalOp) else None)
            if name == "abort":
                turn.aborted = True
                return
            accepted = name.startswith("approved")
        item = FileChangeItem(id=call_id, changes=changes)
        if not step.ask:
            yield ItemStartedEvent(
                thread_id=turn.thread_id, turn_id=turn.turn_id, item=item, started_at_ms=at
            )
        done = item.model_copy(update={"status": "completed" if accepted else "declined"})
        yield ItemCompletedEvent(
            thread_id=turn.thread_id,
            turn_id=turn.turn_id,
            item=done,
            started_at_ms=at,
            completed_at_ms=now_ms(),
        )


def _decision(decision: object) -> str:
    """A review decision's name (``approved``, ``denied``, ``abort``, an amendment's key)."""
    if isinstance(decision, str):
        return decision
    if isinstance(decision, dict) and decision:
        return str(next(iter(cast(dict[str, object], decision))))
    return "denied"


def _same(text: str) -> str:
    return text
