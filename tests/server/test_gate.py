"""The handshake helpers and the experimental gate's table."""

from __future__ import annotations

import pytest

from codex_app_bridge.rpc.errors import params_length_error
from codex_app_bridge.server import EXPERIMENTAL_FIELDS, experimental_descriptor
from codex_app_bridge.server._handshake import is_header_value, sanitize_header_part, user_agent


@pytest.mark.parametrize(
    ("params", "descriptor"),
    [
        ({}, None),
        ({"experimentalRawEvents": False, "mockExperimentalField": None}, None),
        ({"runtimeWorkspaceRoots": []}, "thread/start.runtimeWorkspaceRoots"),
        (
            {"experimentalRawEvents": True, "mockExperimentalField": "x"},
            "thread/start.mockExperimentalField",
        ),
        (
            {"allowProviderModelFallback": True, "environments": []},
            "thread/start.allowProviderModelFallback",
        ),
        ({"approvalPolicy": {"granular": {}}, "permissions": "p"}, "askForApproval.granular"),
        ({"approvalPolicy": "never"}, None),
    ],
)
def test_thread_start_names_the_first_experimental_field_the_binary_would(
    params: dict[str, object], descriptor: str | None
) -> None:
    assert experimental_descriptor("thread/start", params) == descriptor  # type: ignore[arg-type]


def test_flag_fields_count_only_when_true() -> None:
    assert experimental_descriptor("thread/fork", {"deferGoalContinuation": False}) is None
    assert (
        experimental_descriptor("thread/fork", {"deferGoalContinuation": True})
        == "thread/fork.deferGoalContinuation"
    )
    assert experimental_descriptor("turn/steer", {"additionalContext": {}}) == (
        "turn/steer.additionalContext"
    )


def test_every_gated_field_is_unknown_to_the_stable_models() -> None:
    from codex_app_bridge.server import SUPPORTED_METHODS

    for method, fields in EXPERIMENTAL_FIELDS.items():
        model = SUPPORTED_METHODS.get(method)
        if model is None:
            continue
        aliases = {info.alias or name for name, info in model.model_fields.items()}
        assert not aliases & {name for name, _ in fields}, method


@pytest.mark.parametrize(
    ("text", "valid"),
    [("probe", True), ("a\tb", True), ("é ü", True), ("bad\nname", False), ("a\x7fb", False)],
)
def test_client_names_must_be_http_header_values(text: str, valid: bool) -> None:
    assert is_header_value(text) is valid


def test_user_agent_parts_are_sanitized_like_the_real_server() -> None:
    assert sanitize_header_part("vé\x7f\x01") == "v___"
    agent = user_agent("first", "é ü", "bad\nver")
    assert agent.startswith("first/0.163.0 (")
    assert agent.endswith(" (_ _; bad_ver)")


def test_a_one_field_struct_is_named_in_the_singular() -> None:
    # A change in the rpc layer for this issue: serde writes "1 element".
    assert params_length_error(0, "ThreadUnsubscribeParams", 1).message.endswith(
        "expected struct ThreadUnsubscribeParams with 1 element"
    )
    assert params_length_error(0, "ThreadReadParams", 2).message.endswith("with 2 elements")
