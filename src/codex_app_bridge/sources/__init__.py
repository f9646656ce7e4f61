"""Event sources: where EventMsg streams come from. Implemented: the built-in agent and recorded
scripts; rollouts, producer processes and test-harness injection are to plug in behind the same
contract.

The contract (``EventSource``, ``TurnRequest``) is in ``_base``: a source yields the core events of
one turn; the server's turn runner feeds them to the thread's listener and owns interrupts,
steering and the guarantee that every turn ends. Sources never touch connections.

* ``DefaultAgent``: the built-in deterministic agent (``codex-app-bridge serve`` with no flags).
* ``ScriptSource`` / ``load_script``: ``--script FILE``, recorded turns replayed with live ids.
"""

from codex_app_bridge.sources._base import (
    DEFAULT_CONTEXT_WINDOW,
    TURN_END_TYPES,
    TURN_START_TYPES,
    EventSource,
    SourceDefaults,
    TurnRequest,
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
from codex_app_bridge.sources._script import (
    RECORDED,
    RecordedEvent,
    RecordedTurn,
    ScriptError,
    ScriptPacing,
    ScriptSource,
    load_script,
    parse_script,
)

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MODEL",
    "DEFAULT_MODEL_PROVIDER",
    "RECORDED",
    "TURN_END_TYPES",
    "TURN_START_TYPES",
    "DefaultAgent",
    "EventSource",
    "RecordedEvent",
    "RecordedTurn",
    "ScriptError",
    "ScriptPacing",
    "ScriptSource",
    "SourceDefaults",
    "TurnRequest",
    "answer_for",
    "failed_task_complete",
    "input_text",
    "load_script",
    "parse_script",
    "split_deltas",
    "task_started_event",
    "user_message_events",
]
