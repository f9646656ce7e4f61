"""A Responses API client: the HTTP request, SSE, transport retries, and what each failure
means to a Codex turn (``ModelError``: text, ``codexErrorInfo``, retried or not).

Boundary: it knows nothing of threads, turns, core events or JSON-RPC; the turn loop (``agent/``)
builds the request body and headers, reads the events and drives the turn-level retries from
:class:`ModelError`. It uses ``protocol.core`` only for the values it returns (token usage, rate
limits). The HTTP stack is imported on the first request.

    client = ResponsesClient(Endpoint(url, headers, request_max_retries=4,
                                      stream_idle_timeout_s=300.0))
    async with client.stream(body_bytes, request_headers) as stream:
        stream.status, stream.headers          # lower-case header names
        async for event in stream:             # dict: the SSE data JSON; event["type"]
            ...                                # ends right after response.completed
    await client.aclose()
"""

from __future__ import annotations

from ._client import Endpoint, ResponsesClient, ResponseStream, backoff_s, warm_http_stack
from ._errors import FAILURES, ModelError
from ._usage import rate_limits_from_headers, token_usage_from

__all__ = [
    "FAILURES",
    "Endpoint",
    "ModelError",
    "ResponseStream",
    "ResponsesClient",
    "backoff_s",
    "rate_limits_from_headers",
    "token_usage_from",
    "warm_http_stack",
]
