"""Event sources: where EventMsg streams come from: the built-in agent, recorded scripts and
rollouts, producer processes, all behind the same contract.

The contract is Codex core's own pair of queues (``_session``): per thread, a ``CoreSession``
takes ``Submission`` s (Codex ``Op`` s: user turns, steering input, interrupts, approval
decisions, shutdown) and gives back ``EventEnvelope`` s for the whole thread. Sources that
produce one turn at a time (``TurnSource``: ``turn(TurnRequest)`` yields the turn's events) are
played by ``TurnPlayer``, which does what core does with the ops. Sources never touch
connections.

* ``DefaultAgent``: the built-in deterministic agent (``codex-app-bridge serve`` with no flags).
* ``ScriptSource`` / ``load_script``: ``--script FILE``, recorded turns replayed with live ids.
* ``RolloutSource`` / ``RolloutReader``: a Codex rollout replayed turn by turn (``--script``
  takes one), and the rollout-to-events rules ``map`` applies.
* ``InjectedSource``: a test harness pushes envelopes into a running bridge's threads and reads
  the ``Op`` s they received (in process).
* ``ProducerSource``: ``--producer CMD``, a process per thread speaking submissions and event
  envelopes as JSONL on its stdin and stdout.
"""

from codex_app_bridge.sources._base import (
    DEFAULT_CONTEXT_WINDOW,
    TURN_END_TYPES,
    TURN_START_TYPES,
    SourceDefaults,
    TurnRequest,
    aborted_turn,
    failed_task_complete,
    failed_turn,
    input_text,
    task_started_event,
    user_message_events,
)
from codex_app_bridge.sources._default import (
    DEFAULT_MODEL,
    DEFAULT_MODEL_PROVIDER,
    DefaultAgent,
    answer_for,
    split_deltas,
)
from codex_app_bridge.sources._goals import (
    GOAL_CONTEXT_OPEN,
    UNSET,
    GoalError,
    ThreadGoals,
    goal_budget_limit_text,
    goal_continuation_text,
)
from codex_app_bridge.sources._inject import (
    InjectableSource,
    InjectedSession,
    InjectedSource,
    UnknownEventError,
)
from codex_app_bridge.sources._load import load_script
from codex_app_bridge.sources._producer import (
    ProducerError,
    ProducerSession,
    ProducerSource,
)
from codex_app_bridge.sources._replies import Replies
from codex_app_bridge.sources._rollout import (
    RolloutEntry,
    RolloutIndex,
    RolloutLineError,
    RolloutReader,
    RolloutSource,
    index_rollout,
    is_rollout_line,
    recorded_item_events,
)
from codex_app_bridge.sources._scenario import (
    Scenario,
    ScenarioError,
    ScenarioSource,
    load_scenario,
    looks_like_scenario,
    parse_scenario,
)
from codex_app_bridge.sources._script import (
    RECORDED,
    RecordedEvent,
    RecordedTurn,
    ScriptError,
    ScriptIndex,
    ScriptPacing,
    ScriptSource,
    TurnSpan,
    index_script,
    parse_script,
)
from codex_app_bridge.sources._session import (
    EVENT_HIGH_WATER,
    CoreSession,
    EventSource,
    ParkableSession,
    SessionConfig,
    TurnPlayer,
    TurnSource,
    open_session,
)

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MODEL",
    "DEFAULT_MODEL_PROVIDER",
    "EVENT_HIGH_WATER",
    "GOAL_CONTEXT_OPEN",
    "RECORDED",
    "TURN_END_TYPES",
    "TURN_START_TYPES",
    "UNSET",
    "CoreSession",
    "DefaultAgent",
    "EventSource",
    "GoalError",
    "InjectableSource",
    "InjectedSession",
    "InjectedSource",
    "ParkableSession",
    "ProducerError",
    "ProducerSession",
    "ProducerSource",
    "RecordedEvent",
    "RecordedTurn",
    "Replies",
    "RolloutEntry",
    "RolloutIndex",
    "RolloutLineError",
    "RolloutReader",
    "RolloutSource",
    "Scenario",
    "ScenarioError",
    "ScenarioSource",
    "ScriptError",
    "ScriptIndex",
    "ScriptPacing",
    "ScriptSource",
    "SessionConfig",
    "SourceDefaults",
    "ThreadGoals",
    "TurnPlayer",
    "TurnRequest",
    "TurnSource",
    "TurnSpan",
    "UnknownEventError",
    "aborted_turn",
    "answer_for",
    "failed_task_complete",
    "failed_turn",
    "goal_budget_limit_text",
    "goal_continuation_text",
    "index_rollout",
    "index_script",
    "input_text",
    "is_rollout_line",
    "load_scenario",
    "load_script",
    "looks_like_scenario",
    "open_session",
    "parse_scenario",
    "parse_script",
    "recorded_item_events",
    "split_deltas",
    "task_started_event",
    "user_message_events",
]
