"""Answers a client gives to the server's requests (approvals, questions, elicitations, dynamic
tool calls): one table, ``method -> answer``, for the demo client and the test client.

``answer_server_request(method, params, accept=...)`` returns the JSON-RPC ``result`` a
cooperative client sends: with ``accept`` it approves a command or a patch, grants the
permissions asked for, answers every question with its first option (else ``"yes"``), accepts an
elicitation with a value for each field of its form and returns a canned text from a dynamic
tool; without, it declines each of them. ``None`` for a method no 0.163.0 server sends to a v2
client (the caller answers ``-32601``). Boundary: plain JSON values, nothing of the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

__all__ = ["SERVER_REQUEST_METHODS", "answer_server_request"]

JsonObject = dict[str, Any]


def _decision(params: JsonObject, accept: bool) -> JsonObject:
    del params
    return {"decision": "accept" if accept else "decline"}


def _permissions(params: JsonObject, accept: bool) -> JsonObject:
    asked = params.get("permissions")
    granted: JsonObject = {}
    if accept and isinstance(asked, dict):
        requested = cast("JsonObject", asked)
        granted = {k: requested[k] for k in ("fileSystem", "network") if k in requested}
    return {"permissions": granted, "scope": "turn"}


def _first_option(question: JsonObject) -> str:
    options = question.get("options")
    if isinstance(options, list) and options:
        first: object = cast("list[Any]", options)[0]
        label = cast("JsonObject", first).get("label") if isinstance(first, dict) else None
        if isinstance(label, str):
            return label
    return "yes"


def _user_input(params: JsonObject, accept: bool) -> JsonObject:
    if not accept:
        return {"answers": {}}
    answers: JsonObject = {}
    for question in cast("list[Any]", params.get("questions") or []):
        if isinstance(question, dict):
            asked = cast("JsonObject", question)
            answers[str(asked.get("id"))] = {"answers": [_first_option(asked)]}
    return {"answers": answers}


def _form_value(schema: object) -> object:
    kind = cast("JsonObject", schema).get("type") if isinstance(schema, dict) else None
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return 1
    return "yes"


def _elicitation(params: JsonObject, accept: bool) -> JsonObject:
    if not accept:
        return {"action": "decline", "content": None}
    schema = params.get("requestedSchema")
    fields: object = (
        cast("JsonObject", schema).get("properties") if isinstance(schema, dict) else {}
    )
    content = (
        {str(k): _form_value(v) for k, v in cast("JsonObject", fields).items()}
        if isinstance(fields, dict)
        else {}
    )
    return {"action": "accept", "content": content}


def _tool_call(params: JsonObject, accept: bool) -> JsonObject:
    if not accept:
        text = f"the client declined to run {params.get('tool')}"
        return {"contentItems": [{"type": "inputText", "text": text}], "success": False}
    text = f"{params.get('tool')} ran (a canned result from the test client)"
    return {"contentItems": [{"type": "inputText", "text": text}], "success": True}


_ANSWERS: Final[dict[str, Callable[[JsonObject, bool], JsonObject]]] = {
    "item/commandExecution/requestApproval": _decision,
    "item/fileChange/requestApproval": _decision,
    "item/permissions/requestApproval": _permissions,
    "item/tool/requestUserInput": _user_input,
    "mcpServer/elicitation/request": _elicitation,
    "item/tool/call": _tool_call,
}
SERVER_REQUEST_METHODS: Final = frozenset(_ANSWERS)


def answer_server_request(method: str, params: object, *, accept: bool = True) -> JsonObject | None:
    """The ``result`` a client answers ``method`` with (see the module docstring)."""
    answer = _ANSWERS.get(method)
    if answer is None:
        return None
    return answer(cast("JsonObject", params) if isinstance(params, dict) else {}, accept)
