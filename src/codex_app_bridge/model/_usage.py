"""What a model answer says about tokens and rate limits, as core values.

Role: ``usage`` of ``response.completed`` -> core ``TokenUsage``; the rate-limit headers of the
answer -> core ``RateLimitSnapshot`` (spec/model-turn.md §4.3). The percent stays a float here
(the rollout keeps 42.5; the v2 notification rounds). Boundary: values in, core models out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from codex_app_bridge.protocol.core import (
    CreditsSnapshot,
    RateLimitSnapshot,
    RateLimitWindow,
    TokenUsage,
)

__all__ = ["rate_limits_from_headers", "token_usage_from"]

_FLOAT: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INT: Final = re.compile(r"[+-]?\d+")
_I64_MAX: Final = 2**63 - 1
_FAMILY_SUFFIX: Final = "-primary-used-percent"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def token_usage_from(usage: Mapping[str, Any]) -> TokenUsage:
    """``response.completed`` ``usage`` -> ``TokenUsage`` (missing details count 0)."""
    input_details = usage.get("input_tokens_details")
    output_details = usage.get("output_tokens_details")
    return TokenUsage(
        input_tokens=_int(usage.get("input_tokens")),
        cached_input_tokens=_int(
            input_details.get("cached_tokens") if isinstance(input_details, dict) else 0  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        ),
        cache_write_input_tokens=0,
        output_tokens=_int(usage.get("output_tokens")),
        reasoning_output_tokens=_int(
            output_details.get("reasoning_tokens") if isinstance(output_details, dict) else 0  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        ),
        total_tokens=_int(usage.get("total_tokens")),
    )


def _float(headers: Mapping[str, str], name: str) -> float | None:
    raw = headers.get(name)
    if raw is None or not _FLOAT.fullmatch(raw):
        return None
    value = float(raw)
    return value if math.isfinite(value) else None


def _i64(headers: Mapping[str, str], name: str) -> int | None:
    raw = headers.get(name)
    if raw is None or not _INT.fullmatch(raw):
        return None
    value = int(raw)
    return value if -_I64_MAX - 1 <= value <= _I64_MAX else None


def _bool(headers: Mapping[str, str], name: str) -> bool | None:
    raw = headers.get(name)
    if raw is None:
        return None
    if raw.lower() == "true" or raw == "1":
        return True
    if raw.lower() == "false" or raw == "0":
        return False
    return None


def _trimmed(headers: Mapping[str, str], name: str) -> str | None:
    raw = headers.get(name)
    return raw.strip() or None if raw is not None else None


def _window(headers: Mapping[str, str], prefix: str) -> RateLimitWindow | None:
    used = _float(headers, f"{prefix}-used-percent")
    if used is None:
        return None
    minutes = _i64(headers, f"{prefix}-window-minutes")
    resets_at = _i64(headers, f"{prefix}-reset-at")
    if used == 0.0 and not minutes and resets_at is None:
        return None
    return RateLimitWindow(used_percent=used, window_minutes=minutes, resets_at=resets_at)


def _credits(headers: Mapping[str, str]) -> CreditsSnapshot | None:
    has_credits = _bool(headers, "x-codex-credits-has-credits")
    unlimited = _bool(headers, "x-codex-credits-unlimited")
    if has_credits is None or unlimited is None:
        return None
    return CreditsSnapshot(
        has_credits=has_credits,
        unlimited=unlimited,
        balance=_trimmed(headers, "x-codex-credits-balance"),
    )


def _snapshot(headers: Mapping[str, str], limit_id: str) -> RateLimitSnapshot:
    prefix = "x-" + limit_id.replace("_", "-")
    return RateLimitSnapshot(
        limit_id=limit_id,
        limit_name=_trimmed(headers, f"{prefix}-limit-name"),
        primary=_window(headers, f"{prefix}-primary"),
        secondary=_window(headers, f"{prefix}-secondary"),
        credits=_credits(headers),
    )


def rate_limits_from_headers(headers: Mapping[str, str]) -> RateLimitSnapshot:
    """The snapshot Codex reports for an answer's headers (lower-case names).

    The ``codex`` family is always parsed (all ``null`` without headers); each other family
    ``x-<name>-primary-used-percent`` with data follows, by name; Codex reports the last one.
    """
    last = _snapshot(headers, "codex")
    families = sorted(
        {
            name[2 : -len(_FAMILY_SUFFIX)].strip().replace("-", "_")
            for name in headers
            if name.startswith("x-") and name.endswith(_FAMILY_SUFFIX)
        }
        - {"codex"}
    )
    for family in families:
        snapshot = _snapshot(headers, family)
        if snapshot.primary or snapshot.secondary or snapshot.credits:
            last = snapshot
    return last
