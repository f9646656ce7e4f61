"""The model source: real turns from the Responses API provider ``config.toml`` names, run the
way Codex 0.163.0 core runs them (issue 20).

* :class:`ModelSource` - an ``EventSource``; one :class:`ModelSession` per thread, keeping the
  thread's model context (from ``SessionConfig.prior_items``) and yielding core events, a
  ``raw_response_item`` for every ResponseItem it records.
* ``_request`` - the request (headers, metadata, body) as the binary sends it; ``_prompt`` - the
  project's own instruction prose and the contextual messages; ``_tools`` - the tools offered
  and the one tool table (:data:`TOOL_HANDLERS`, :func:`register_tool`); ``_builtin`` - dynamic
  tools and ``request_user_input``.

Layering: above ``model`` (HTTP), ``config`` (settings) and ``sources`` (the contract); below
the CLI, which picks it when a provider is configured. The server knows it only as an
``EventSource``.
"""

from __future__ import annotations

from codex_app_bridge.agent._session import ModelSession
from codex_app_bridge.agent._source import ModelSource
from codex_app_bridge.agent._tools import (
    TOOL_HANDLERS,
    ToolCall,
    ToolContext,
    ToolError,
    ToolHandler,
    ToolOutput,
    register_tool,
    tool_specs,
)

__all__ = [
    "TOOL_HANDLERS",
    "ModelSession",
    "ModelSource",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolHandler",
    "ToolOutput",
    "register_tool",
    "tool_specs",
]
