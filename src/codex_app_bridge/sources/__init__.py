"""Event sources: where EventMsg streams come from. Implemented: the built-in agent and recorded
scripts; rollouts, producer processes and test-harness injection plug in behind the same
contract.

The contract is Codex core's own pair of queues (``_session``): per thread, a ``CoreSession``
takes ``Submission`` s (Codex ``Op`` s: user turns, steering input, interrupts, approval
decisions, shutdown) and gives back ``EventEnvelope`` s for the whole thread. Sources that
produce one turn at a time (``TurnSource``: ``turn(TurnRequest)`` yields the turn's events) are
played by ``TurnPlayer``, which does what core does with the ops. Sources never touch
connections.

* ``DefaultAgent``: the built-in deterministic agent (``codex-app-bridge serve`` with no flags).
* ``ScriptSource`` / ``load_script``: ``--script FILE``, recorded turns replayed with live ids.
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
from codex_app_bridge.sources._producer import (
    ProducerError,
    ProducerSession,
    ProducerSource,
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
    load_script,
    parse_script,
)
from codex_app_bridge.sources._session import (
    EVENT_HIGH_WATER,
    CoreSession,
    EventSource,
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
    "RECORDED",
    "TURN_END_TYPES",
    "TURN_START_TYPES",
    "CoreSession",
    "DefaultAgent",
    "EventSource",
    "ProducerError",
    "ProducerSession",
    "ProducerSource",
    "RecordedEvent",
    "RecordedTurn",
    "ScriptError",
    "ScriptIndex",
    "ScriptPacing",
    "ScriptSource",
    "SessionConfig",
    "SourceDefaults",
    "TurnPlayer",
    "TurnRequest",
    "TurnSource",
    "TurnSpan",
    "aborted_turn",
    "answer_for",
    "failed_task_complete",
    "index_script",
    "input_text",
    "load_script",
    "open_session",
    "parse_script",
    "split_deltas",
    "task_started_event",
    "user_message_events",
]
