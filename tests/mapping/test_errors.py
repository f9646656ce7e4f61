"""Core errors in their v2 spelling: one rule for live notifications and rebuilt history."""

from __future__ import annotations

from typing import Any

import pytest

from codex_app_bridge.mapping import (
    codex_error_info,
    error_affects_turn_status,
    is_rollback_failure,
    turn_error,
)
from codex_app_bridge.protocol.v2 import dump_dict


@pytest.mark.parametrize(
    ("core", "wire"),
    [
        (None, None),
        ("internal_server_error", "internalServerError"),
        ("thread_rollback_failed", "threadRollbackFailed"),
        ("other", "other"),
        ("invalid_prompt", "other"),
        ("a_future_variant", "other"),
        (
            {"response_too_many_failed_attempts": {"http_status_code": 429}},
            {"responseTooManyFailedAttempts": {"httpStatusCode": 429}},
        ),
        (
            {"active_turn_not_steerable": {"turn_kind": "review"}},
            {"activeTurnNotSteerable": {"turnKind": "review"}},
        ),
        ({"bad_request": None}, "badRequest"),
        ({"a_future_object": {"x_y": 1}}, "other"),
        ({"a": 1, "b": 2}, "other"),
    ],
)
def test_codex_error_info_maps_onto_the_0_163_0_enum(core: Any, wire: Any) -> None:
    assert codex_error_info(core) == wire


@pytest.mark.parametrize(
    ("core", "fails_the_turn", "answers_a_rollback"),
    [
        (None, True, False),
        ("internal_server_error", True, False),
        ({"response_stream_disconnected": {"http_status_code": 502}}, True, False),
        ("thread_rollback_failed", False, True),
        ({"active_turn_not_steerable": {"turn_kind": "review"}}, False, False),
    ],
)
def test_only_a_failed_rollback_and_a_refused_steer_leave_the_turn_running(
    core: Any, fails_the_turn: bool, answers_a_rollback: bool
) -> None:
    assert error_affects_turn_status(core) is fails_the_turn
    assert is_rollback_failure(core) is answers_a_rollback


def test_turn_error_writes_every_field_with_camel_case_details() -> None:
    error = turn_error(
        "blocked",
        "invalid_prompt",
        additional_details="see logs",
        misalignment={"error_type": "x", "detailed_explanation": None},
    )
    assert dump_dict(error) == {
        "additionalDetails": "see logs",
        "codexErrorInfo": "other",
        "message": "blocked",
        "misalignment": {
            "detailedExplanation": None,
            "errorType": "x",
            "reviewTarget": None,
            "steer": None,
        },
    }
