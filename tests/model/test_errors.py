"""The failure table: each HTTP answer, ``response.failed`` code and ``response.incomplete``
reason gives the real binary's text, ``codexErrorInfo``, retry decision and notice (texts as
probed from codex 0.163.0 against a scripted mock; ``test_errors_real.py`` re-checks them)."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from codex_app_bridge.model import FAILURES, ModelError
from codex_app_bridge.model._completed import completed_problem
from codex_app_bridge.model._errors import (
    connection_failed,
    http_error,
    incomplete_error,
    response_failed_error,
    retry_after_hint,
    stream_error,
    usage_limit_message,
)

URL = "http://127.0.0.1:9/v1/responses?api-version=1"


def shape(error: ModelError) -> dict[str, Any]:
    return {
        "message": error.message,
        "info": error.codex_error_info,
        "retryable": error.retryable,
        "notice": error.notice_codex_error_info["responseStreamDisconnected"]["httpStatusCode"],
        "hint": error.retry_after_s,
    }


def body(error: dict[str, Any] | None = None, **extra: Any) -> bytes:
    return orjson.dumps({"error": error, **extra} if error is not None else extra)


HTTP_CASES: list[tuple[str, int, dict[str, str], bytes, dict[str, Any]]] = [
    (
        "500: the high-demand sentence, body ignored",
        500,
        {},
        body({"message": "srv"}),
        {
            "message": "We\u2019re currently experiencing high demand, which may cause temporary errors.",
            "info": "internalServerError",
            "retryable": True,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "502: unexpected status with error.message and the url",
        502,
        {},
        body({"message": "upstream down", "type": "server_error"}),
        {
            "message": f"unexpected status 502 Bad Gateway: upstream down, url: {URL}",
            "info": {"httpConnectionFailed": {"httpStatusCode": 502}},
            "retryable": True,
            "notice": 502,
            "hint": None,
        },
    ),
    (
        "502 with a text body, Retry-After and a request id",
        502,
        {"retry-after": "2", "x-request-id": "req-123"},
        b"plain text body",
        {
            "message": f"unexpected status 502 Bad Gateway: plain text body, url: {URL}, request id: req-123",
            "info": {"httpConnectionFailed": {"httpStatusCode": 502}},
            "retryable": True,
            "notice": 502,
            "hint": 2.0,
        },
    ),
    (
        "504 with an empty body",
        504,
        {},
        b"",
        {
            "message": f"unexpected status 504 Gateway Timeout: Unknown error, url: {URL}",
            "info": {"httpConnectionFailed": {"httpStatusCode": 504}},
            "retryable": True,
            "notice": 504,
            "hint": None,
        },
    ),
    (
        "401 with cf-ray then request id",
        401,
        {"x-request-id": "req-123", "cf-ray": "ray-9"},
        body({"message": "bad key"}),
        {
            "message": f"unexpected status 401 Unauthorized: bad key, url: {URL}, cf-ray: ray-9, request id: req-123",
            "info": {"httpConnectionFailed": {"httpStatusCode": 401}},
            "retryable": True,
            "notice": 401,
            "hint": None,
        },
    ),
    (
        "422 without error.message: the raw body",
        422,
        {},
        b'{"detail":"x"}',
        {
            "message": f'unexpected status 422 Unprocessable Entity: {{"detail":"x"}}, url: {URL}',
            "info": {"httpConnectionFailed": {"httpStatusCode": 422}},
            "retryable": True,
            "notice": 422,
            "hint": None,
        },
    ),
    (
        "403 from Cloudflare",
        403,
        {},
        b"Cloudflare blocked you",
        {
            "message": "Access blocked by Cloudflare. This usually happens when connecting from a "
            f"restricted region (status 403 Forbidden), url: {URL}",
            "info": {"httpConnectionFailed": {"httpStatusCode": 403}},
            "retryable": True,
            "notice": 403,
            "hint": None,
        },
    ),
    (
        "400: the raw body, not retried",
        400,
        {},
        body({"message": "too long", "code": "context_length_exceeded"}),
        {
            "message": '{"error":{"message":"too long","code":"context_length_exceeded"}}',
            "info": "other",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "400 empty",
        400,
        {},
        b"",
        {"message": "", "info": "other", "retryable": False, "notice": None, "hint": None},
    ),
    (
        "400 cyber_policy",
        400,
        {},
        body({"message": "cyb", "code": "cyber_policy"}),
        {"message": "cyb", "info": "cyberPolicy", "retryable": False, "notice": None, "hint": None},
    ),
    (
        "400 invalid image",
        400,
        {},
        body({"message": "The image data you provided does not represent a valid image"}),
        {
            "message": "Invalid image in your last message. Please remove it and try again.",
            "info": "badRequest",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "429 without Retry-After: not retried",
        429,
        {"x-request-id": "req-123"},
        body({"message": "slow down", "type": "rate_limit"}),
        {
            "message": "exceeded retry limit, last status: 429 Too Many Requests, request id: req-123",
            "info": {"responseTooManyFailedAttempts": {"httpStatusCode": 429}},
            "retryable": False,
            "notice": 429,
            "hint": None,
        },
    ),
    (
        "429 with Retry-After: retried after it; cf-ray stands in for the request id",
        429,
        {"retry-after": " 1 ", "cf-ray": "ray-1"},
        body({"message": "slow down"}),
        {
            "message": "exceeded retry limit, last status: 429 Too Many Requests, request id: ray-1",
            "info": {"responseTooManyFailedAttempts": {"httpStatusCode": 429}},
            "retryable": True,
            "notice": 429,
            "hint": 1.0,
        },
    ),
    (
        "429 with a fractional Retry-After or retry-after-ms: no hint",
        429,
        {"retry-after": "0.5", "retry-after-ms": "700"},
        body({"message": "slow down"}),
        {
            "message": "exceeded retry limit, last status: 429 Too Many Requests",
            "info": {"responseTooManyFailedAttempts": {"httpStatusCode": 429}},
            "retryable": False,
            "notice": 429,
            "hint": None,
        },
    ),
    (
        "429 insufficient_quota (code)",
        429,
        {},
        body({"message": "q", "code": "insufficient_quota"}),
        {
            "message": "Quota exceeded. Check your plan and billing details.",
            "info": "usageLimitExceeded",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "429 usage_not_included (type)",
        429,
        {},
        body({"message": "u", "type": "usage_not_included"}),
        {
            "message": "To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.",
            "info": "usageLimitExceeded",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "429 usage_limit_reached without a plan",
        429,
        {},
        body({"message": "u", "type": "usage_limit_reached"}),
        {
            "message": "You\u2019ve hit your usage limit. Try again later.",
            "info": "usageLimitExceeded",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "503 server_is_overloaded",
        503,
        {},
        body({"message": "busy", "code": "server_is_overloaded"}),
        {
            "message": "Selected model is at capacity. Please try a different model.",
            "info": "serverOverloaded",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "503 slow_down is a rate limit",
        503,
        {},
        body({"message": "busy", "code": "slow_down"}),
        {
            "message": "rate limit exceeded: busy",
            "info": "rateLimitExceeded",
            "retryable": True,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "a status Rust has no reason for",
        599,
        {},
        b"x",
        {
            "message": f"unexpected status 599 <unknown status code>: x, url: {URL}",
            "info": {"httpConnectionFailed": {"httpStatusCode": 599}},
            "retryable": True,
            "notice": 599,
            "hint": None,
        },
    ),
]


@pytest.mark.parametrize(
    ("status", "headers", "raw", "expected"),
    [case[1:] for case in HTTP_CASES],
    ids=[case[0] for case in HTTP_CASES],
)
def test_an_http_answer_fails_the_turn_as_the_real_binary_says(
    status: int, headers: dict[str, str], raw: bytes, expected: dict[str, Any]
) -> None:
    error = http_error(status, headers, raw, URL)
    assert shape(error) == expected
    assert error.http_status == status
    assert error.notice_details == error.message
    assert not error.connection_failed


def failed(code: str | None, message: str | None = "m", **extra: Any) -> dict[str, Any]:
    return {"id": "r", "status": "failed", "error": {"code": code, "message": message, **extra}}


FAILED_CASES: list[tuple[str, object, dict[str, Any]]] = [
    (
        "context_length_exceeded",
        failed("context_length_exceeded", "too long"),
        {
            "message": "Codex ran out of room in the model's context window. Start a new thread "
            "or clear earlier history before retrying.",
            "info": "contextWindowExceeded",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "insufficient_quota",
        failed("insufficient_quota"),
        {
            "message": "Quota exceeded. Check your plan and billing details.",
            "info": "usageLimitExceeded",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "usage_not_included",
        failed("usage_not_included"),
        {
            "message": "To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.",
            "info": "usageLimitExceeded",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "server_is_overloaded",
        failed("server_is_overloaded"),
        {
            "message": "Selected model is at capacity. Please try a different model.",
            "info": "serverOverloaded",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "rate_limit_exceeded with a hint in seconds",
        failed("rate_limit_exceeded", "Rate limit reached for gpt. Please try again in 1.5s."),
        {
            "message": "rate limit exceeded: Rate limit reached for gpt. Please try again in 1.5s.",
            "info": "rateLimitExceeded",
            "retryable": True,
            "notice": None,
            "hint": 1.5,
        },
    ),
    (
        "rate_limit_exceeded with a hint in ms",
        failed("rate_limit_exceeded", "Please try again in 700ms."),
        {
            "message": "rate limit exceeded: Please try again in 700ms.",
            "info": "rateLimitExceeded",
            "retryable": True,
            "notice": None,
            "hint": 0.7,
        },
    ),
    (
        "rate_limit_exceeded with a hint in words",
        failed("rate_limit_exceeded", "Please TRY AGAIN IN 2 seconds."),
        {
            "message": "rate limit exceeded: Please TRY AGAIN IN 2 seconds.",
            "info": "rateLimitExceeded",
            "retryable": True,
            "notice": None,
            "hint": 2.0,
        },
    ),
    (
        "slow_down: a rate limit without a hint",
        failed("slow_down", "o"),
        {
            "message": "rate limit exceeded: o",
            "info": "rateLimitExceeded",
            "retryable": True,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "invalid_prompt: the message verbatim",
        failed("invalid_prompt", "prompt bad"),
        {
            "message": "prompt bad",
            "info": "other",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "cyber_policy",
        failed("cyber_policy", "flagged cyber"),
        {
            "message": "flagged cyber",
            "info": "cyberPolicy",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "cyber_policy without a message",
        failed("cyber_policy", " "),
        {
            "message": "This request has been flagged for possible cybersecurity risk.",
            "info": "cyberPolicy",
            "retryable": False,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "another code: a retried stream error",
        failed("server_error", "boom happened"),
        {
            "message": "stream disconnected before completion: boom happened",
            "info": "other",
            "retryable": True,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "no code",
        failed(None, "no code here"),
        {
            "message": "stream disconnected before completion: no code here",
            "info": "other",
            "retryable": True,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "insufficient_quota as the type only: not a quota error here",
        {"error": {"type": "insufficient_quota", "message": "m"}},
        {
            "message": "stream disconnected before completion: m",
            "info": "other",
            "retryable": True,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "no error object",
        {"id": "r"},
        {
            "message": "stream disconnected before completion: response.failed event received",
            "info": "other",
            "retryable": True,
            "notice": None,
            "hint": None,
        },
    ),
    (
        "an error object Codex cannot read",
        {"error": {"code": 5, "message": "m"}},
        {
            "message": "stream disconnected before completion: response.failed event received",
            "info": "other",
            "retryable": True,
            "notice": None,
            "hint": None,
        },
    ),
]


@pytest.mark.parametrize(
    ("response", "expected"),
    [case[1:] for case in FAILED_CASES],
    ids=[case[0] for case in FAILED_CASES],
)
def test_response_failed_is_classified_by_its_error_code(
    response: object, expected: dict[str, Any]
) -> None:
    assert shape(response_failed_error(response)) == expected


@pytest.mark.parametrize(
    ("response", "message", "final"),
    [
        (
            {"incomplete_details": {"reason": "max_output_tokens"}},
            "Incomplete response returned, reason: max_output_tokens",
            True,
        ),
        ({"incomplete_details": None}, "Incomplete response returned, reason: unknown", True),
        (None, "Incomplete response returned, reason: unknown", True),
        (
            {"incomplete_details": {"reason": "something_else"}},
            "Incomplete response returned, reason: something_else",
            True,
        ),
        (
            {"incomplete_details": {"reason": "content_filter"}},
            "stream disconnected before completion: Incomplete response returned, reason: "
            "content_filter",
            False,
        ),
    ],
)
def test_response_incomplete_fails_at_once_except_for_the_content_filter(
    response: object, message: str, final: bool
) -> None:
    error, at_once = incomplete_error(response)
    assert (error.message, error.codex_error_info, error.retryable, at_once) == (
        message,
        "other",
        not final,
        final,
    )


def test_stream_and_connection_failures_are_retried() -> None:
    cut = stream_error("stream closed before response.completed")
    assert shape(cut) == {
        "message": "stream disconnected before completion: stream closed before response.completed",
        "info": "other",
        "retryable": True,
        "notice": None,
        "hint": None,
    }
    offline = connection_failed()
    assert offline.connection_failed
    assert offline.retryable
    assert offline.message == "Connection failed: error sending request"
    assert offline.notice_codex_error_info == {
        "responseStreamDisconnected": {"httpStatusCode": None}
    }


def test_every_row_of_the_table_is_reachable() -> None:
    reached = {http_error(s, h, b, URL).failure for _, s, h, b, _ in HTTP_CASES} | {
        response_failed_error(r).failure for _, r, _ in FAILED_CASES
    }
    reached |= {incomplete_error(None)[0].failure, connection_failed().failure}
    reached |= {http_error(429, {}, body({"type": "usage_limit_reached"}), URL).failure}
    assert reached == set(FAILURES)


NOW = time.mktime((2026, 12, 2, 7, 0, 0, 0, 0, -1))
TODAY_9_05 = int(time.mktime((2026, 12, 2, 9, 5, 0, 0, 0, -1)))
DEC_10_22_53 = int(time.mktime((2026, 12, 10, 22, 53, 0, 0, 0, -1)))
AUG_3 = int(time.mktime((2027, 8, 3, 0, 7, 0, 0, 0, -1)))


@pytest.mark.parametrize(
    ("plan", "resets_at", "message"),
    [
        (None, None, "You\u2019ve hit your usage limit. Try again later."),
        ("enterprise", TODAY_9_05, "You\u2019ve hit your usage limit. Try again at 9:05 AM."),
        (
            "edu",
            DEC_10_22_53,
            "You\u2019ve hit your usage limit. Try again at Dec 10th, 2026 10:53 PM.",
        ),
        ("galaxy", AUG_3, "You\u2019ve hit your usage limit. Try again at Aug 3rd, 2027 12:07 AM."),
        (
            "free",
            None,
            "You\u2019ve hit your usage limit. Upgrade to Plus to continue using Codex "
            "(https://chatgpt.com/explore/plus), or try again later.",
        ),
        (
            "go",
            TODAY_9_05,
            "You\u2019ve hit your usage limit. Upgrade to Plus to continue using Codex "
            "(https://chatgpt.com/explore/plus), or try again at 9:05 AM.",
        ),
        (
            "plus",
            None,
            "You\u2019ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), "
            "visit https://chatgpt.com/settings/usage to purchase more credits or try again later.",
        ),
        (
            "pro",
            TODAY_9_05,
            "You\u2019ve hit your usage limit. Visit https://chatgpt.com/settings/usage to "
            "purchase more credits or try again at 9:05 AM.",
        ),
        (
            "prolite",
            None,
            "You\u2019ve hit your usage limit. Visit https://chatgpt.com/settings/usage to "
            "purchase more credits or try again later.",
        ),
        (
            "self_serve_business_usage_based",
            None,
            "You\u2019ve hit your usage limit. To get more access now, send a request to your "
            "admin or try again later.",
        ),
        (
            "team",
            DEC_10_22_53,
            "You\u2019ve hit your usage limit. To get more access now, send a request to your "
            "admin or try again at Dec 10th, 2026 10:53 PM.",
        ),
    ],
)
def test_usage_limit_messages_follow_the_plan_and_the_local_reset_time(
    plan: str | None, resets_at: int | None, message: str
) -> None:
    error: dict[str, object] = {"type": "usage_limit_reached", "plan_type": plan}
    if resets_at is not None:
        error["resets_at"] = resets_at
    assert usage_limit_message(error, now=NOW) == message


@pytest.mark.parametrize(
    ("value", "hint"),
    [("1", 1.0), (" 2 ", 2.0), ("0", 0.0), ("0.5", None), ("soon", None), ("", None), ("-1", None)],
)
def test_retry_after_counts_only_whole_seconds(value: str, hint: float | None) -> None:
    assert retry_after_hint({"retry-after": value}) == hint


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        ({"id": "r"}, None),
        ({"id": "r", "usage": None}, None),
        (
            {
                "id": "r",
                "usage": {
                    "input_tokens": 1,
                    "input_tokens_details": None,
                    "output_tokens": 2,
                    "output_tokens_details": {"reasoning_tokens": 1},
                    "total_tokens": 3,
                    "extra": "ignored",
                },
            },
            None,
        ),
        ({"status": "completed"}, "missing field `id`"),
        (
            {"id": "r", "usage": {"input_tokens": 1, "output_tokens": 2}},
            "missing field `total_tokens`",
        ),
        (
            {"id": "r", "usage": {"input_tokens": "1", "output_tokens": 2, "total_tokens": 3}},
            'invalid type: string "1", expected i64',
        ),
        ({"id": 5}, "invalid type: number, expected a string"),
        ("x", 'invalid type: string "x", expected struct ResponseCompleted'),
        (
            {"id": "r", "usage": {"input_tokens": 1.5, "output_tokens": 2, "total_tokens": 3}},
            "invalid number",
        ),
        (
            {"id": "r", "usage": 5},
            "invalid type: number, expected struct ResponseCompletedUsage",
        ),
        (
            {
                "id": "r",
                "usage": {
                    "input_tokens": 1,
                    "input_tokens_details": {},
                    "output_tokens": 2,
                    "total_tokens": 3,
                },
            },
            "missing field `cached_tokens`",
        ),
    ],
)
def test_a_completed_response_codex_cannot_read_is_a_stream_error_in_serde_words(
    response: object, problem: str | None
) -> None:
    expected = None if problem is None else f"failed to parse ResponseCompleted: {problem}"
    assert completed_problem(response) == expected
