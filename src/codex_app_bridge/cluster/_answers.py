"""An answer to a server request, as it travels between the nodes of a cluster.

A client answers a request a thread's turn raised on the node it is connected to; every other
node showing that request resolves it alike (``PendingRequests.answered_elsewhere``: the same
``serverRequest/resolved``, status change and declined command's completion as the node that was
answered showed). The owner writes the answer into the thread's log, in order with its events,
as a line of its own (``{"answered": key, "answer": ...}``: not an event envelope, skipped by
what reads the history); a follower whose client answered sends it to the owner first, on the
thread's control subject (``ANSWER_HEADER``), beside the ``Op`` its session forwards.

Boundary: pure conversions; no NATS.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Final

import orjson

from codex_app_bridge.protocol.jsonrpc import ErrorObject

__all__ = ["ANSWERED", "ANSWER_HEADER", "answer_line", "is_answer", "parse_answer"]

ANSWERED: Final = b'{"answered":'
"""How an answer's line in a thread's log starts (an event envelope's never does)."""
ANSWER_HEADER: Final = "Codex-Answered"
"""The header of a control message that carries an answer rather than a submission."""


def is_answer(line: bytes) -> bool:
    return line.startswith(ANSWERED)


def answer_line(key: Hashable, answer: Any) -> bytes:
    """The line that carries a client's answer (a result, or an ``ErrorObject``) to the request
    ``key`` names (``sources.request_key``: a tuple of strings)."""
    assert isinstance(key, tuple)
    body = {"error": answer.to_json()} if isinstance(answer, ErrorObject) else {"result": answer}
    return orjson.dumps({"answered": list(key), "answer": body})  # pyright: ignore[reportUnknownArgumentType]


def parse_answer(line: bytes) -> tuple[Hashable, Any]:
    """``(key, answer)`` of an answer's line (``ValueError``: not one)."""
    data: Any = orjson.loads(line)
    try:
        key = tuple(data["answered"])
        body = data["answer"]
        if "error" in body:
            error = body["error"]
            if "data" in error:
                return key, ErrorObject(error["code"], error["message"], error["data"])
            return key, ErrorObject(error["code"], error["message"])
        return key, body["result"]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not an answer: {exc}") from exc
