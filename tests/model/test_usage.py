"""Token usage from ``response.completed`` and rate limits from the answer's headers, as core
values (spec/model-turn.md §4.3)."""

from __future__ import annotations

from typing import Any

import pytest

from codex_app_bridge.model import rate_limits_from_headers, token_usage_from
from codex_app_bridge.protocol.core import (
    CreditsSnapshot,
    RateLimitSnapshot,
    RateLimitWindow,
    TokenUsage,
)


def test_usage_maps_the_detail_counts_and_never_writes_cache_writes() -> None:
    usage = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 40},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 7},
        "total_tokens": 120,
    }
    assert token_usage_from(usage) == TokenUsage(
        input_tokens=100,
        cached_input_tokens=40,
        cache_write_input_tokens=0,
        output_tokens=20,
        reasoning_output_tokens=7,
        total_tokens=120,
    )


def test_usage_without_details_counts_them_zero() -> None:
    usage = {"input_tokens": 3, "input_tokens_details": None, "output_tokens": 2, "total_tokens": 5}
    assert token_usage_from(usage) == TokenUsage(input_tokens=3, output_tokens=2, total_tokens=5)


def snapshot(limit_id: str = "codex", **fields: Any) -> RateLimitSnapshot:
    return RateLimitSnapshot(limit_id=limit_id, **fields)


CODEX_HEADERS = {
    "x-codex-primary-used-percent": "42.5",
    "x-codex-primary-window-minutes": "300",
    "x-codex-primary-reset-at": "1796200000",
    "x-codex-secondary-used-percent": "7",
    "x-codex-secondary-window-minutes": "10080",
    "x-codex-secondary-reset-at": "1796800000",
    "x-codex-credits-has-credits": "true",
    "x-codex-credits-unlimited": "False",
    "x-codex-credits-balance": " 12.5 ",
}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, snapshot()),
        ({"content-type": "text/event-stream"}, snapshot()),
        (
            CODEX_HEADERS,
            snapshot(
                primary=RateLimitWindow(
                    used_percent=42.5, window_minutes=300, resets_at=1796200000
                ),
                secondary=RateLimitWindow(
                    used_percent=7.0, window_minutes=10080, resets_at=1796800000
                ),
                credits=CreditsSnapshot(has_credits=True, unlimited=False, balance="12.5"),
            ),
        ),
        # a window with nothing in it is no window; unparseable values are absent
        (
            {
                "x-codex-primary-used-percent": "0",
                "x-codex-secondary-used-percent": "1_0",
                "x-codex-credits-has-credits": "1",
                "x-codex-credits-unlimited": "maybe",
            },
            snapshot(),
        ),
        (
            {"x-codex-primary-used-percent": "0", "x-codex-primary-reset-at": "5"},
            snapshot(primary=RateLimitWindow(used_percent=0.0, resets_at=5)),
        ),
        (
            {"x-codex-primary-used-percent": "inf", "x-codex-secondary-used-percent": "1e1"},
            snapshot(secondary=RateLimitWindow(used_percent=10.0)),
        ),
        # another family: its limit id uses underscores, its name comes from its own header,
        # the credits are the codex ones; the last family parsed is the one reported
        (
            {
                "x-codex-primary-used-percent": "42.5",
                "x-codex-other-primary-used-percent": "80",
                "x-codex-other-limit-name": " gpt-x-sonic ",
                "x-codex-credits-has-credits": "0",
                "x-codex-credits-unlimited": "1",
            },
            snapshot(
                "codex_other",
                limit_name="gpt-x-sonic",
                primary=RateLimitWindow(used_percent=80.0),
                credits=CreditsSnapshot(has_credits=False, unlimited=True),
            ),
        ),
        (
            {
                "x-alpha-primary-used-percent": "10",
                "x-beta-primary-used-percent": "20",
                "x-gamma-primary-used-percent": "0",
            },
            snapshot("beta", primary=RateLimitWindow(used_percent=20.0)),
        ),
    ],
)
def test_rate_limits_come_from_the_headers_as_codex_parses_them(
    headers: dict[str, str], expected: RateLimitSnapshot
) -> None:
    assert rate_limits_from_headers(headers) == expected
