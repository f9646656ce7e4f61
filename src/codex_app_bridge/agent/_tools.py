"""The tools a model is offered and the one table that answers its calls.

Role: :func:`tool_specs` is the ``tools`` array of a request, in the order and shape 0.163.0
offers the fallback model (spec/model-turn.md §5.1: ``exec_command``, ``write_stdin``,
``request_user_input``, ``view_image``, the ``multi_agent_v1`` namespace, the goal tools, the
thread's dynamic tools, ``web_search``). Names, parameter schemas and flags are the binary's;
every description is the project's own wording. :data:`TOOL_HANDLERS` maps a tool name to the
coroutine that answers a call; a name with no handler gets the answer core gives a tool it
cannot run (``unsupported call: <name>``), so the model always gets an output and the turn
goes on.

The contract other packages plug into (``machine/`` adds ``exec_command``, ``write_stdin``,
``apply_patch`` ...)::

    async def handler(call: ToolCall, ctx: ToolContext) -> ToolOutput: ...
    register_tool("exec_command", handler)        # or TOOL_HANDLERS["exec_command"] = handler

* ``call``: the model's call (name, namespace, call id, raw ``arguments`` / custom ``input``
  text, the output item as received);
* ``ctx``: the thread and turn (ids, cwd, the effective config), ``ctx.emit(event)`` to send
  core events (item started/completed, exec output deltas ...) in order with the turn's other
  events, ``await ctx.ask(event)`` to emit an event that asks the client (an approval, a
  question) and wait for the answering ``Op``;
* the result: :class:`ToolOutput` (``output``: the text, or content items, recorded as the
  ``function_call_output`` / ``custom_tool_call_output`` the model reads next).

A handler is cancelled when the turn is interrupted (an ``anyio`` cancellation at any
``await``); the turn then records core's ``aborted`` output for it itself.

Boundary: no HTTP, no JSON-RPC; handlers live elsewhere and are looked up by name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from codex_app_bridge.protocol.core import EventMsg, Op

__all__ = [
    "FALLBACK_FAMILY",
    "MODEL_FAMILIES",
    "TOOL_HANDLERS",
    "ModelFamily",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolHandler",
    "ToolOutput",
    "model_family",
    "register_tool",
    "tool_specs",
    "unsupported_output",
    "web_search_mode",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model made (a ``function_call`` or ``custom_tool_call`` output item)."""

    kind: Literal["function", "custom"]
    name: str
    call_id: str
    arguments: str
    """``arguments`` of a function call (JSON text, unparsed) or ``input`` of a custom one."""
    namespace: str | None = None
    item: Mapping[str, Any] | None = None
    """The output item as the provider sent it."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What the model is told: ``output`` is the text (or a list of content items)."""

    output: str | list[dict[str, Any]]
    success: bool | None = None


class ToolError(Exception):
    """Raised by a handler: ``text`` is what the model is told (e.g. core's
    ``failed to parse function arguments: ...``); the turn goes on."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class ToolContext(Protocol):
    """What a handler may use of the running turn."""

    @property
    def thread_id(self) -> str: ...

    @property
    def turn_id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def config(self) -> Any:
        """The thread's ``config.EffectiveConfig`` for this turn."""
        ...

    def emit(self, event: EventMsg) -> None:
        """Send a core event now, in order with the turn's other events."""
        ...

    async def ask(self, event: EventMsg) -> Op:
        """Emit an event that asks the client and wait for the ``Op`` that answers it."""
        ...


ToolHandler = Callable[[ToolCall, ToolContext], Awaitable[ToolOutput]]

TOOL_HANDLERS: Final[dict[str, ToolHandler]] = {}
"""Tool name (namespaced tools: ``namespace.name``) -> handler. The one table of tool dispatch."""


def register_tool(name: str, handler: ToolHandler) -> None:
    """Answer calls to ``name`` with ``handler`` (replaces an earlier one)."""
    TOOL_HANDLERS[name] = handler


def unsupported_output(call: ToolCall) -> str:
    """What core answers a call it has no tool for (spec/model-turn.md §5.3)."""
    if call.kind == "custom":
        return f"unsupported custom tool call: {call.name}"
    return f"unsupported call: {call.name}"


# --- the specs ---------------------------------------------------------------------------------


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]):
    return {
        "type": "function",
        "name": name,
        "description": description,
        "strict": False,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }


def _p(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **extra}


def _input_items() -> dict[str, Any]:
    return _p(
        "array",
        "Structured input to hand over instead of, or with, a plain message.",
        items={
            "type": "object",
            "properties": {
                "audio_url": _p("string", "An audio URL, for audio input."),
                "image_url": _p("string", "An image URL, for image input."),
                "name": _p("string", "Display name, for skill or mention input."),
                "path": _p("string", "A file path, for local images, skills or mentions."),
                "text": _p("string", "The text, for text input."),
                "type": _p("string", "What the item is: text, image, local_image, skill, ..."),
            },
            "additionalProperties": False,
        },
    )


def _exec_command() -> dict[str, Any]:
    return _function(
        "exec_command",
        "Run a shell command in a pseudo-terminal and return what it printed so far.",
        {
            "cmd": _p("string", "The command line to run."),
            "justification": _p(
                "string", "Why the command needs more than the sandbox allows (with escalation)."
            ),
            "login": _p("boolean", "Start the shell as a login shell (default true)."),
            "max_output_tokens": _p(
                "number", "Cut the returned output after about this many tokens."
            ),
            "prefix_rule": _p(
                "array",
                "A command prefix the user may approve for the rest of the session.",
                items={"type": "string"},
            ),
            "sandbox_permissions": _p(
                "string",
                "use_default runs in the sandbox; require_escalated asks to run outside it.",
                enum=["use_default", "require_escalated"],
            ),
            "shell": _p("string", "The shell binary to use (default: the user's shell)."),
            "tty": _p("boolean", "Give the process a TTY (for interactive programs)."),
            "workdir": _p("string", "Directory to run in (default: the turn's cwd)."),
            "yield_time_ms": _p("number", "How long to wait for output before returning."),
        },
        ["cmd"],
    )


def _write_stdin() -> dict[str, Any]:
    return _function(
        "write_stdin",
        "Send characters to a running exec_command session and return its new output.",
        {
            "chars": _p("string", "What to write (empty: just poll for output)."),
            "max_output_tokens": _p(
                "number", "Cut the returned output after about this many tokens."
            ),
            "session_id": _p("number", "The session id exec_command returned."),
            "yield_time_ms": _p("number", "How long to wait for output before returning."),
        },
        ["session_id"],
    )


def _request_user_input() -> dict[str, Any]:
    option = {
        "type": "object",
        "properties": {
            "description": _p("string", "One sentence on what choosing it means."),
            "label": _p("string", "The short label shown."),
        },
        "required": ["label", "description"],
        "additionalProperties": False,
    }
    question = {
        "type": "object",
        "properties": {
            "header": _p("string", "A very short heading for the question."),
            "id": _p("string", "A stable id, in snake_case."),
            "options": _p(
                "array", "Two or three choices, the recommended one first.", items=option
            ),
            "question": _p("string", "The question, in one sentence."),
        },
        "required": ["id", "header", "question", "options"],
        "additionalProperties": False,
    }
    return _function(
        "request_user_input",
        "Ask the user one to three short questions and wait for the answers.",
        {"questions": _p("array", "The questions to ask.", items=question)},
        ["questions"],
    )


def _view_image(*, detail: bool = False) -> dict[str, Any]:
    properties = {"path": _p("string", "Path of the image file.")}
    if detail:
        properties = {
            "detail": _p(
                "string",
                "high (the default) may scale a large image down; original keeps every pixel.",
                enum=["high", "original"],
            ),
            **properties,
        }
    return _function(
        "view_image", "Look at an image file on the local filesystem.", properties, ["path"]
    )


_PATCH_GRAMMAR: Final = r"""start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
"""
"""The freeform tool's input schema, a lark grammar of the patch language (spec §3.1): like the
function tools' parameter schemas, the binary's, since it is what the model must produce."""


def _apply_patch() -> dict[str, Any]:
    return {
        "type": "custom",
        "name": "apply_patch",
        "description": "Edit files with a patch. Freeform: send the patch text itself, not JSON.",
        "format": {"type": "grammar", "syntax": "lark", "definition": _PATCH_GRAMMAR},
    }


def _tool_search() -> dict[str, Any]:
    return {
        "type": "tool_search",
        "execution": "client",
        "description": (
            "Find tools that are not listed up front (here: the multi-agent tools, to start and "
            "manage helper agents) by searching their descriptions; the matches are offered on "
            "the next call."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "limit": _p("number", "How many tools to return at most (default 8)."),
                "query": _p("string", "What to search for."),
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    }


def _multi_agent() -> dict[str, Any]:
    return {
        "type": "namespace",
        "name": "multi_agent_v1",
        "description": "Start and coordinate helper agents.",
        "tools": [
            _function(
                "close_agent",
                "Stop a helper agent that is no longer needed.",
                {"target": _p("string", "The agent to close.")},
                ["target"],
            ),
            _function(
                "resume_agent",
                "Reopen a closed helper agent.",
                {"id": _p("string", "The agent id.")},
                ["id"],
            ),
            _function(
                "send_input",
                "Send a message to a helper agent.",
                {
                    "interrupt": _p("boolean", "Stop the agent's current work first."),
                    "items": _input_items(),
                    "message": _p("string", "The message text."),
                    "target": _p("string", "The agent to send to."),
                },
                ["target"],
            ),
            {
                **_function(
                    "spawn_agent",
                    "Start a helper agent on a well-scoped piece of work.",
                    {
                        "fork_context": _p("boolean", "Give the agent this conversation so far."),
                        "items": _input_items(),
                        "message": _p("string", "The task for the agent."),
                        "model": _p("string", "A model for the agent (default: this one)."),
                        "reasoning_effort": _p("string", "A reasoning effort for the agent."),
                    },
                    [],
                ),
            },
            _function(
                "wait_agent",
                "Wait until one of the given helper agents finishes or the timeout passes.",
                {
                    "targets": _p("array", "The agents to wait for.", items={"type": "string"}),
                    "timeout_ms": _p("number", "How long to wait at most."),
                },
                ["targets"],
            ),
        ],
    }


def _goal_tools() -> list[dict[str, Any]]:
    return [
        _function("get_goal", "Read the thread's current goal, if any.", {}, []),
        _function(
            "create_goal",
            "Set a goal for the thread when the user asks for one.",
            {
                "objective": _p("string", "What the goal is, concretely."),
                "token_budget": _p("integer", "An optional token budget for reaching it."),
            },
            ["objective"],
        ),
        _function(
            "update_goal",
            "Mark the thread's goal complete, blocked or paused.",
            {
                "status": _p(
                    "string",
                    "The goal's new status.",
                    enum=["complete", "blocked", "paused"],
                )
            },
            ["status"],
        ),
    ]


def _without_required(spec: dict[str, Any]) -> dict[str, Any]:
    # spawn_agent's parameters have no "required" list in the binary's spec
    parameters = dict(spec["parameters"])
    parameters.pop("required", None)
    return {**spec, "parameters": parameters}


def _fix_spawn(namespace: dict[str, Any]) -> dict[str, Any]:
    tools = [_without_required(t) if t["name"] == "spawn_agent" else t for t in namespace["tools"]]
    return {**namespace, "tools": tools}


def dynamic_tool_spec(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A thread/start ``dynamicTools`` entry as a function tool."""
    return {
        "type": "function",
        "name": tool.get("name", ""),
        "description": tool.get("description", ""),
        "strict": False,
        "parameters": tool.get("inputSchema", {"type": "object", "properties": {}}),
    }


@dataclass(frozen=True, slots=True)
class ModelFamily:
    """What a model's metadata (core's ``ModelInfo``) changes in its requests: the tool list,
    and the verbosity sent when the config names none."""

    freeform_apply_patch: bool = False
    """``apply_patch_tool_type: freeform``: a custom ``apply_patch`` tool whose input is the
    patch itself (a lark grammar); without it the model runs ``apply_patch`` through
    ``exec_command`` (a heredoc core intercepts)."""
    image_detail: bool = False
    """``view_image`` takes ``detail`` (``high`` | ``original``)."""
    search_tool: bool = False
    """The multi-agent tools are deferred behind ``tool_search`` instead of offered as the
    ``multi_agent_v1`` namespace."""
    web_search_images: bool = False
    """``web_search`` also returns images (``search_content_types``)."""
    verbosity: str | None = None
    """``text.verbosity`` by default (``model_verbosity`` overrides it); ``None``: no ``text``
    (the model does not support verbosity, and a configured one is not sent)."""


FALLBACK_FAMILY: Final = ModelFamily()
"""A model outside the bundled catalog (fallback metadata, e.g. the mock's ``mock-model``)."""

MODEL_FAMILIES: Final[dict[str, ModelFamily]] = {
    "gpt-5.5": ModelFamily(
        freeform_apply_patch=True,
        image_detail=True,
        search_tool=True,
        web_search_images=True,
        verbosity="low",
    ),
}
"""Bundled slugs with classic tools, probed on 0.163.0 (spec/machine-tools.md §1). The other
bundled slugs are code-mode models (one JavaScript ``exec`` tool); the bridge offers them the
fallback list (``tests/conformance/KNOWN_DIFFERENCES.md``)."""


def model_family(model: str) -> ModelFamily:
    return MODEL_FAMILIES.get(model, FALLBACK_FAMILY)


_SPECS: Final[dict[ModelFamily, list[dict[str, Any]]]] = {}


def tool_specs(
    dynamic_tools: Sequence[Mapping[str, Any]] = (),
    *,
    family: ModelFamily = FALLBACK_FAMILY,
    web_search: str = "live",
) -> list[dict[str, Any]]:
    """The ``tools`` array for a model of ``family`` (see the module docstring); ``web_search``
    is the mode (``live``, ``cached``, ``disabled``: :func:`web_search_mode`)."""
    specs = _SPECS.get(family)
    if specs is None:
        specs = _SPECS[family] = [
            _exec_command(),
            _write_stdin(),
            _request_user_input(),
            *([_apply_patch()] if family.freeform_apply_patch else []),
            _view_image(detail=family.image_detail),
            *([] if family.search_tool else [_fix_spawn(_multi_agent())]),
            *_goal_tools(),
        ]
    specs = list(specs)
    specs.extend(dynamic_tool_spec(tool) for tool in dynamic_tools)
    if family.search_tool:
        specs.append(_tool_search())
    if web_search != "disabled":
        search: dict[str, Any] = {"type": "web_search", "external_web_access": web_search == "live"}
        if family.web_search_images:
            search["search_content_types"] = ["text", "image"]
        specs.append(search)
    return specs


def web_search_mode(configured: object, sandbox_mode: str) -> str:
    """``web_search`` as core resolves it for a turn: the configured mode, else ``live`` with
    full access and ``cached`` (``external_web_access: false``) under a sandbox (probed)."""
    if configured in ("live", "cached", "disabled"):
        return str(configured)
    if configured == "indexed":
        return "cached"
    return "live" if sandbox_mode == "danger-full-access" else "cached"
