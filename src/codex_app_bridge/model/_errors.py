"""What a failed model request means, as Codex 0.163.0 reports it: one table.

Role: every way a Responses API request can fail (an HTTP status and body, a transport error, a
stream that stops early or idles, ``response.failed`` by ``error.code``, ``response.incomplete``)
becomes one :class:`ModelError` carrying the final turn error text, its ``codexErrorInfo`` wire
value, whether the turn-level loop retries it, the server's retry hint and what the
``Reconnecting...`` notice shows. :data:`FAILURES` is the only place that knows the matrix
(spec/model-turn.md §6.2); the classifiers below only pick a row and build the text. Texts are
the real binary's, probed against a scripted mock (``tests/model/test_errors_real.py`` keeps
them honest). Boundary: no I/O, no HTTP library; status, headers and body come in as values.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

import orjson

__all__ = [
    "FAILURES",
    "Failure",
    "ModelError",
    "connection_failed",
    "http_error",
    "incomplete_error",
    "response_failed_error",
    "retry_after_hint",
    "stream_error",
]

Failure = Literal[
    "internal_server_error",
    "unexpected_status",
    "invalid_request",
    "invalid_image",
    "cyber_policy",
    "server_overloaded",
    "too_many_requests",
    "quota_exceeded",
    "usage_not_included",
    "usage_limit_reached",
    "rate_limit_exceeded",
    "context_window_exceeded",
    "invalid_prompt",
    "stream",
    "incomplete",
    "connection_failed",
]

Retry = Literal["yes", "no", "with_hint"]


@dataclass(frozen=True, slots=True)
class FailureRow:
    info: str
    """``codexErrorInfo`` of the final turn error (v2 wire name)."""
    with_status: bool
    """``info`` is an object carrying ``{"httpStatusCode": <status>}``."""
    retry: Retry
    """Whether the turn-level loop (``stream_max_retries``) re-sends; ``with_hint`` only when the
    server gave a ``Retry-After``."""
    notice_status: bool
    """The ``Reconnecting...`` notice's ``httpStatusCode`` is the HTTP status (else ``null``)."""


FAILURES: Final[Mapping[Failure, FailureRow]] = {
    # HTTP answers (after the transport retries of 5xx)
    "internal_server_error": FailureRow("internalServerError", False, "yes", False),
    "unexpected_status": FailureRow("httpConnectionFailed", True, "yes", True),
    "invalid_request": FailureRow("other", False, "no", False),
    "invalid_image": FailureRow("badRequest", False, "no", False),
    "cyber_policy": FailureRow("cyberPolicy", False, "no", False),
    "server_overloaded": FailureRow("serverOverloaded", False, "no", False),
    "too_many_requests": FailureRow("responseTooManyFailedAttempts", True, "with_hint", True),
    "quota_exceeded": FailureRow("usageLimitExceeded", False, "no", False),
    "usage_not_included": FailureRow("usageLimitExceeded", False, "no", False),
    "usage_limit_reached": FailureRow("usageLimitExceeded", False, "no", False),
    # HTTP 503 slow_down and response.failed rate_limit_exceeded / slow_down
    "rate_limit_exceeded": FailureRow("rateLimitExceeded", False, "yes", False),
    # response.failed codes
    "context_window_exceeded": FailureRow("contextWindowExceeded", False, "no", False),
    "invalid_prompt": FailureRow("other", False, "no", False),
    # "stream disconnected before completion: ...": cut, idle, failed with another code, a bad
    # response.completed, an answer-less connection
    "stream": FailureRow("other", False, "yes", False),
    "incomplete": FailureRow("other", False, "no", False),
    # no HTTP answer at all: core's "waiting for network" layer, never a final turn error there
    "connection_failed": FailureRow("httpConnectionFailed", True, "yes", False),
}

HIGH_DEMAND: Final = (
    "We\u2019re currently experiencing high demand, which may cause temporary errors."
)
CONTEXT_WINDOW: Final = (
    "Codex ran out of room in the model's context window. Start a new thread or clear earlier "
    "history before retrying."
)
QUOTA: Final = "Quota exceeded. Check your plan and billing details."
USAGE_NOT_INCLUDED: Final = (
    "To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus."
)
OVERLOADED: Final = "Selected model is at capacity. Please try a different model."
INVALID_IMAGE: Final = "Invalid image in your last message. Please remove it and try again."
CYBER_POLICY_FALLBACK: Final = "This request has been flagged for possible cybersecurity risk."
CLOUDFLARE_BLOCKED: Final = (
    "Access blocked by Cloudflare. This usually happens when connecting from a restricted region"
)
STREAM_PREFIX: Final = "stream disconnected before completion: "
CONNECTION_FAILED: Final = "Connection failed: error sending request"

_IMAGE_ERRORS: Final = (
    "The image data you provided does not represent a valid image",
    "Expected a base64-encoded data URL with an image MIME type, but got empty base64-encoded "
    "bytes.",
)
_TRY_AGAIN = re.compile(r"(?i)try again in\s*(\d+(?:\.\d+)?)\s*(s|ms|seconds?)")


class ModelError(Exception):
    """A failed model request, classified by :data:`FAILURES`."""

    def __init__(
        self,
        failure: Failure,
        message: str,
        *,
        http_status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        row = FAILURES[failure]
        self.failure: Failure = failure
        self.message = message
        """The final turn error text (also the notice's ``additionalDetails``)."""
        self.http_status = http_status
        self.retry_after_s = retry_after_s
        """The server's hint: ``Retry-After`` seconds, or "try again in Xs|ms"."""
        self.retryable = row.retry == "yes" or (
            row.retry == "with_hint" and retry_after_s is not None
        )
        """Retried at the turn level (``stream_max_retries``)."""
        self.connection_failed = failure == "connection_failed"
        """No HTTP answer at all: core's "Reconnecting... waiting for network" layer."""
        self.codex_error_info: str | dict[str, Any] = (
            {row.info: {"httpStatusCode": http_status}} if row.with_status else row.info
        )
        self.notice_details = message
        """``additionalDetails`` of the ``Reconnecting...`` notice."""
        self.notice_codex_error_info: dict[str, Any] = {
            "responseStreamDisconnected": {
                "httpStatusCode": http_status if row.notice_status else None
            }
        }
        """``codexErrorInfo`` of the ``Reconnecting...`` notice."""

    def __repr__(self) -> str:
        return f"ModelError({self.failure!r}, {self.message!r}, http_status={self.http_status})"


# --- HTTP answers ---------------------------------------------------------------------------

# Rust's ``http::StatusCode`` reasons (the real binary prints these, not the server's phrase)
_REASONS: Final[Mapping[int, str]] = {
    300: "Multiple Choices",
    301: "Moved Permanently",
    302: "Found",
    303: "See Other",
    304: "Not Modified",
    305: "Use Proxy",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    407: "Proxy Authentication Required",
    408: "Request Timeout",
    409: "Conflict",
    410: "Gone",
    411: "Length Required",
    412: "Precondition Failed",
    413: "Payload Too Large",
    414: "URI Too Long",
    415: "Unsupported Media Type",
    416: "Range Not Satisfiable",
    417: "Expectation Failed",
    418: "I'm a teapot",
    421: "Misdirected Request",
    422: "Unprocessable Entity",
    423: "Locked",
    424: "Failed Dependency",
    426: "Upgrade Required",
    428: "Precondition Required",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    451: "Unavailable For Legal Reasons",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    505: "HTTP Version Not Supported",
    506: "Variant Also Negotiates",
    507: "Insufficient Storage",
    508: "Loop Detected",
    510: "Not Extended",
    511: "Network Authentication Required",
}


def status_line(status: int) -> str:
    return f"{status} {_REASONS.get(status, '<unknown status code>')}"


def retry_after_hint(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in whole seconds (the only form the real binary honours)."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    return float(raw) if raw.isascii() and raw.isdigit() else None


def _object(value: object) -> dict[str, object] | None:
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def _json_error(body: bytes) -> dict[str, object] | None:
    """``error`` of a JSON body ``{"error": {...}}``, if that is what the body is."""
    try:
        parsed = _object(orjson.loads(body))
    except orjson.JSONDecodeError:
        return None
    return _object(parsed.get("error")) if parsed is not None else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _request_id(headers: Mapping[str, str]) -> str | None:
    return headers.get("x-request-id") or headers.get("x-oai-request-id")


def http_error(status: int, headers: Mapping[str, str], body: bytes, url: str) -> ModelError:
    """A non-2xx answer (``headers`` with lower-case names) as the turn sees it."""
    text = body.decode("utf-8", "replace")
    error = _json_error(body) or {}
    code, kind = _text(error.get("code")), _text(error.get("type"))
    hint = retry_after_hint(headers)

    def make(failure: Failure, message: str) -> ModelError:
        return ModelError(failure, message, http_status=status, retry_after_s=hint)

    if status == 400:
        if code == "cyber_policy":
            message = _text(error.get("message")) or ""
            return make("cyber_policy", message if message.strip() else CYBER_POLICY_FALLBACK)
        param = _text(error.get("param")) or ""
        if any(m in text for m in _IMAGE_ERRORS) or (
            code == "invalid_value" and param.endswith(".image_url")
        ):
            return make("invalid_image", INVALID_IMAGE)
        return make("invalid_request", text)
    if status == 500:
        return make("internal_server_error", HIGH_DEMAND)
    if status == 503 and code == "server_is_overloaded":
        return make("server_overloaded", OVERLOADED)
    if status == 503 and code == "slow_down":
        return make(
            "rate_limit_exceeded", "rate limit exceeded: " + (_text(error.get("message")) or "")
        )
    if status == 429:
        if kind == "usage_limit_reached":
            return make("usage_limit_reached", usage_limit_message(error))
        if kind == "usage_not_included":
            return make("usage_not_included", USAGE_NOT_INCLUDED)
        if "insufficient_quota" in (kind, code):
            return make("quota_exceeded", QUOTA)
        tracking = _request_id(headers) or headers.get("cf-ray")
        suffix = f", request id: {tracking}" if tracking else ""
        return make(
            "too_many_requests", f"exceeded retry limit, last status: {status_line(429)}{suffix}"
        )
    if status == 403 and "Cloudflare" in text and "blocked" in text:
        message = f"{CLOUDFLARE_BLOCKED} (status {status_line(403)})"
    else:
        detail = _text(error.get("message")) or text or "Unknown error"
        message = f"unexpected status {status_line(status)}: {detail}"
    message += f", url: {url}"
    if cf_ray := headers.get("cf-ray"):
        message += f", cf-ray: {cf_ray}"
    if request_id := _request_id(headers):
        message += f", request id: {request_id}"
    return make("unexpected_status", message)


# --- usage limits (HTTP 429 usage_limit_reached) ---------------------------------------------

_UPGRADE_PLUS: Final = frozenset({"free", "go"})
_UPGRADE_PRO: Final = frozenset({"plus"})
_BUY_CREDITS: Final = frozenset({"pro", "prolite"})
_ASK_ADMIN: Final = frozenset(
    {"team", "business", "self_serve_business_usage_based", "enterprise_cbp_usage_based"}
)
_MONTHS: Final = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)


def _clock(t: time.struct_time) -> str:
    return f"{t.tm_hour % 12 or 12}:{t.tm_min:02d} {'AM' if t.tm_hour < 12 else 'PM'}"


def _reset_time(resets_at: int, now: float | None = None) -> str:
    """The local time of a reset, as the real binary writes it (the date only if not today)."""
    local = time.localtime(resets_at)
    today = time.localtime(time.time() if now is None else now)
    if (local.tm_year, local.tm_yday) == (today.tm_year, today.tm_yday):
        return _clock(local)
    day = local.tm_mday
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{_MONTHS[local.tm_mon - 1]} {day}{suffix}, {local.tm_year} {_clock(local)}"


def usage_limit_message(error: Mapping[str, object], now: float | None = None) -> str:
    plan = error.get("plan_type")
    resets_at = error.get("resets_at")
    when = (
        _reset_time(resets_at, now)
        if isinstance(resets_at, int) and not isinstance(resets_at, bool)
        else None
    )
    later_or = f" or try again at {when}." if when else " or try again later."
    head = "You\u2019ve hit your usage limit."
    if plan in _UPGRADE_PLUS:
        return (
            f"{head} Upgrade to Plus to continue using Codex (https://chatgpt.com/explore/plus),"
            + later_or
        )
    if plan in _UPGRADE_PRO:
        return (
            f"{head} Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
            "https://chatgpt.com/settings/usage to purchase more credits" + later_or
        )
    if plan in _BUY_CREDITS:
        return (
            f"{head} Visit https://chatgpt.com/settings/usage to purchase more credits" + later_or
        )
    if plan in _ASK_ADMIN:
        return f"{head} To get more access now, send a request to your admin" + later_or
    return f"{head} Try again at {when}." if when else f"{head} Try again later."


# --- the stream ---------------------------------------------------------------------------


def stream_error(detail: str, retry_after_s: float | None = None) -> ModelError:
    """``stream disconnected before completion: <detail>`` (retried at the turn level)."""
    return ModelError("stream", STREAM_PREFIX + detail, retry_after_s=retry_after_s)


def connection_failed() -> ModelError:
    """No HTTP answer: refused, unreachable, no route (after the transport retries)."""
    return ModelError("connection_failed", CONNECTION_FAILED)


def _try_again_in(message: str) -> float | None:
    found = _TRY_AGAIN.search(message)
    if found is None:
        return None
    value, unit = float(found.group(1)), found.group(2).lower()
    return int(value) / 1000 if unit == "ms" else value


_FAILED_ERROR_FIELDS: Final = ("type", "code", "message", "plan_type")


def response_failed_error(response: object) -> ModelError:
    """The error a ``response.failed`` stands for (raised if no ``response.completed`` follows)."""
    body = _object(response)
    error = _object(body.get("error")) if body is not None else None
    if error is None or not _well_formed(error):
        return stream_error("response.failed event received")
    code = error.get("code")
    message = _text(error.get("message")) or ""
    if code == "context_length_exceeded":
        return ModelError("context_window_exceeded", CONTEXT_WINDOW)
    if code == "insufficient_quota":
        return ModelError("quota_exceeded", QUOTA)
    if code == "usage_not_included":
        return ModelError("usage_not_included", USAGE_NOT_INCLUDED)
    if code == "server_is_overloaded":
        return ModelError("server_overloaded", OVERLOADED)
    if code == "cyber_policy":
        return ModelError("cyber_policy", message if message.strip() else CYBER_POLICY_FALLBACK)
    if code == "invalid_prompt":
        return ModelError("invalid_prompt", message)
    if code in ("rate_limit_exceeded", "slow_down"):
        hint = _try_again_in(message) if code == "rate_limit_exceeded" else None
        return ModelError(
            "rate_limit_exceeded", "rate limit exceeded: " + message, retry_after_s=hint
        )
    return stream_error(message)


def _well_formed(error: dict[str, object]) -> bool:
    """Codex reads ``error`` as a struct of optional strings (and ``resets_at``: an integer);
    another shape is as if there were no error object."""
    for name in _FAILED_ERROR_FIELDS:
        value = error.get(name)
        if value is not None and not isinstance(value, str):
            return False
    resets_at = error.get("resets_at")
    return resets_at is None or (isinstance(resets_at, int) and not isinstance(resets_at, bool))


def incomplete_error(response: object) -> tuple[ModelError, bool]:
    """The error of a ``response.incomplete`` and whether it ends the stream at once.

    ``content_filter`` waits like ``response.failed`` (a later ``response.completed`` wins; at
    the end of the stream it is a retried stream error); any other reason fails the turn now.
    """
    body = _object(response)
    details = _object(body.get("incomplete_details")) if body is not None else None
    reason = (_text(details.get("reason")) if details is not None else None) or "unknown"
    text = f"Incomplete response returned, reason: {reason}"
    if reason == "content_filter":
        return stream_error(text), False
    return ModelError("incomplete", text), True
