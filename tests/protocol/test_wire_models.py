"""Behaviour of the v2 wire models and their adapters: lossless unknowns, null versus absent,
tag defaults, the explicit ``emittedAtMs`` field, and the exported surface."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from codex_app_bridge.protocol import v2

WARNING = {
    "method": "warning",
    "params": {"threadId": "thr", "message": "careful"},
    "emittedAtMs": 1796000091101,
}


def rewrite(adapter_parse: Any, message: dict[str, Any]) -> dict[str, Any]:
    return json.loads(v2.dump_json(adapter_parse(json.dumps(message))))


def test_unknown_fields_anywhere_in_a_notification_survive_a_round_trip() -> None:
    message = {
        "method": "item/completed",
        "params": {
            "item": {"type": "plan", "id": "p1", "text": "do it", "futureItemField": [1, 2]},
            "threadId": "thr",
            "turnId": "turn",
            "completedAtMs": 7,
            "futureParamsField": {"nested": None},
        },
        "emittedAtMs": 8,
        "futureEnvelopeField": "x",
    }
    parsed = v2.parse_server_notification(json.dumps(message))
    assert isinstance(parsed, v2.ItemCompletedServerNotification)
    assert isinstance(parsed.params.item, v2.PlanThreadItem)
    assert parsed.params.model_extra == {"futureParamsField": {"nested": None}}
    assert json.loads(v2.dump_json(parsed)) == message


def test_notification_with_an_unknown_method_is_kept_whole() -> None:
    message = {"method": "thread/teleported", "params": {"threadId": "thr"}, "emittedAtMs": 9}
    parsed = v2.parse_server_notification(json.dumps(message))
    assert isinstance(parsed, v2.UnknownServerNotification)
    assert parsed.method == "thread/teleported"
    assert parsed.params == {"threadId": "thr"}
    assert json.loads(v2.dump_json(parsed)) == message


def test_unknown_notification_without_params_is_written_without_params() -> None:
    parsed = v2.parse_server_notification('{"method":"thread/teleported"}')
    assert isinstance(parsed, v2.UnknownServerNotification)
    assert parsed.params is None
    assert v2.dump_json(parsed) == b'{"method":"thread/teleported"}'


@pytest.mark.parametrize(
    ("parse", "message", "unknown"),
    [
        (v2.parse_client_request, {"id": 3, "method": "thread/search", "params": {"q": "x"}},
         v2.UnknownClientRequest),
        (v2.parse_server_request, {"id": "s1", "method": "item/teleport/requestApproval",
         "params": {}}, v2.UnknownServerRequest),
        (v2.parse_thread_item, {"type": "hologram", "id": "h1", "frames": 3},
         v2.UnknownThreadItem),
        (v2.parse_user_input, {"type": "smell", "scent": "pine"}, v2.UnknownUserInput),
    ],
)  # fmt: skip
def test_every_adapter_keeps_an_unknown_tag_in_its_unknown_model(
    parse: Any, message: dict[str, Any], unknown: type[v2.WireModel]
) -> None:
    parsed = parse(json.dumps(message))
    assert type(parsed) is unknown
    assert json.loads(v2.dump_json(parsed)) == message


def test_known_method_with_malformed_params_is_an_error_located_at_the_method() -> None:
    with pytest.raises(ValidationError) as caught:
        v2.parse_server_notification('{"method":"warning","params":{"threadId":"thr"}}')
    assert caught.value.title == "ServerNotification"
    assert [error["loc"] for error in caught.value.errors()] == [("warning", "params", "message")]


@pytest.mark.parametrize(
    "text",
    ['{"method": 5, "params": {}}', '{"params": {}}', "[1, 2]", '{"method": ["warning"]}'],
)
def test_a_notification_without_a_string_method_is_a_validation_error(text: str) -> None:
    with pytest.raises(ValidationError):
        v2.parse_server_notification(text)


def test_client_request_of_a_stable_method_parses_into_its_typed_variant() -> None:
    parsed = v2.parse_client_request(
        '{"id":1,"method":"thread/start","params":{"cwd":"/w","approvalPolicy":"never"}}'
    )
    assert isinstance(parsed, v2.ThreadStartClientRequest)
    assert parsed.params.cwd == "/w"
    assert parsed.params.approval_policy == "never"


def test_notification_built_without_emitted_at_is_written_without_it() -> None:
    built = v2.WarningServerNotification(
        params=v2.WarningNotification(thread_id="thr", message="careful")
    )
    assert json.loads(v2.dump_json(built)) == {
        "method": "warning",
        "params": {"threadId": "thr", "message": "careful"},
    }
    stamped = built.model_copy(update={"emitted_at_ms": 1796000091101})
    assert json.loads(v2.dump_json(stamped)) == WARNING


def test_parsed_notification_exposes_emitted_at_as_a_field() -> None:
    parsed = v2.parse_server_notification(json.dumps(WARNING))
    assert isinstance(parsed, v2.WarningServerNotification)
    assert parsed.emitted_at_ms == 1796000091101
    assert parsed.model_extra == {}


# (model, Python field, wire name): None is left out, a value is written
OMITTED_WHEN_NONE = [
    (v2.McpToolCallThreadItem(id="c", server="s", tool="t", status="completed", arguments=None),
     "mcp_app_resource_uri", "mcpAppResourceUri", "ui://widget"),
    (v2.ImageGenerationThreadItem(id="i", status="", result=""),
     "saved_path", "savedPath", "/home/dev/img.png"),
    (v2.McpServerOauthLoginCompletedNotification(name="srv", success=False),
     "error", "error", "denied"),
]  # fmt: skip


@pytest.mark.parametrize(("model", "field", "wire", "value"), OMITTED_WHEN_NONE)
def test_fields_the_binary_omits_are_left_out_when_none(
    model: v2.WireModel, field: str, wire: str, value: Any
) -> None:
    assert wire not in v2.dump_dict(model)
    assert v2.dump_dict(model.model_copy(update={field: value}))[wire] == value


def test_other_optional_fields_are_written_as_null() -> None:
    item = v2.AgentMessageThreadItem(id="m", text="hi")
    assert v2.dump_dict(item) == {
        "id": "m",
        "text": "hi",
        "type": "agentMessage",
        "phase": None,
        "memoryCitation": None,
        "delivery": None,
        "questions": None,
    }


def test_image_inputs_and_image_generation_write_their_empty_options_as_null() -> None:
    # probed: 0.163.0 thread/read writes these as null, although the TypeScript bindings mark
    # them optional (tests/mapping/test_thread_history_conformance.py asks the binary again)
    assert v2.dump_dict(v2.LocalImageUserInput(path="/tmp/a.png"))["detail"] is None
    generated = v2.ImageGenerationThreadItem(id="i", status="", result="")
    assert v2.dump_dict(generated)["transparentBackground"] is None


def test_reasoning_response_item_writes_missing_content_as_null() -> None:
    # serde skips it only when it holds no reasoning_text part; None is written (rollouts)
    item = v2.ReasoningResponseItem(summary=[])
    assert v2.dump_dict(item)["content"] is None


def test_tag_fields_default_to_their_only_value() -> None:
    assert v2.TextUserInput(text="hi").type == "text"
    assert v2.ItemStartedServerNotification.model_fields["method"].default == "item/started"


@pytest.mark.parametrize(
    ("message", "model"),
    [
        ({"type": "image", "url": "https://x/y.png", "detail": None}, v2.UrlUserInput),
        ({"type": "image", "fileId": "file_1", "detail": "low"}, v2.FileIdUserInput),
    ],
)
def test_image_user_input_is_told_apart_by_url_or_file_id(
    message: dict[str, Any], model: type[v2.WireModel]
) -> None:
    parsed = v2.parse_user_input(json.dumps(message))
    assert type(parsed) is model
    assert json.loads(v2.dump_json(parsed)) == message


def test_raw_response_notifications_are_outside_the_schema_union_yet_parse() -> None:
    from codex_app_bridge.protocol.v2.methods import SERVER_NOTIFICATION_METHODS

    assert "rawResponseItem/completed" not in SERVER_NOTIFICATION_METHODS
    built = v2.RawResponseItemCompletedServerNotification(
        params=v2.RawResponseItemCompletedNotification(
            thread_id="thr",
            turn_id="turn",
            item=v2.MessageResponseItem(
                role="assistant", content=[v2.OutputTextContentItem(text="hi")]
            ),
        ),
        emitted_at_ms=1,
    )
    wire = v2.dump_json(built)
    assert json.loads(wire) == {
        "method": "rawResponseItem/completed",
        "params": {
            "threadId": "thr",
            "turnId": "turn",
            "item": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hi"}],
            },
        },
        "emittedAtMs": 1,
    }
    assert v2.parse_server_notification(wire) == built


def test_dump_json_and_dump_dict_write_the_same_wire_form() -> None:
    parsed = v2.parse_server_notification(json.dumps(WARNING))
    assert json.loads(v2.dump_json(parsed)) == v2.dump_dict(parsed) == WARNING


def test_adapters_accept_an_already_built_model() -> None:
    built = v2.PlanThreadItem(id="p", text="t")
    assert v2.THREAD_ITEM_ADAPTER.validate_python(built) is built


REQUIRED_EXPORTS = [
    # unions, adapters and their helpers
    "ServerNotification", "ClientRequest", "ServerRequest", "ThreadItem", "UserInput",
    "SERVER_NOTIFICATION_ADAPTER", "CLIENT_REQUEST_ADAPTER", "SERVER_REQUEST_ADAPTER",
    "THREAD_ITEM_ADAPTER", "USER_INPUT_ADAPTER", "parse_server_notification", "dump_json",
    # thread and turn
    "Thread", "Turn", "TurnError", "TurnStatus", "ThreadStatus", "NotLoadedThreadStatus",
    "IdleThreadStatus", "SystemErrorThreadStatus", "ActiveThreadStatus",
    # user inputs
    "TextUserInput", "ImageUserInput", "UrlUserInput", "FileIdUserInput", "LocalImageUserInput",
    "AudioUserInput", "LocalAudioUserInput", "SkillUserInput", "MentionUserInput",
    # raw response notifications
    "RawResponseItemCompletedNotification", "RawResponseCompletedNotification",
    "RawResponseItemCompletedServerNotification", "RawResponseCompletedServerNotification",
    # requests and responses
    "InitializeParams", "InitializeResponse", "ThreadStartParams", "ThreadStartResponse",
    "ThreadResumeParams", "ThreadResumeResponse", "ThreadForkParams", "ThreadForkResponse",
    "ThreadReadParams", "ThreadReadResponse", "ThreadListParams", "ThreadListResponse",
    "ThreadLoadedListParams", "ThreadLoadedListResponse", "ThreadUnsubscribeParams",
    "ThreadUnsubscribeResponse", "TurnStartParams", "TurnStartResponse", "TurnInterruptParams",
    "TurnInterruptResponse", "TurnSteerParams", "TurnSteerResponse",
]  # fmt: skip


def _variant_names(union: Any) -> list[str]:
    from codex_app_bridge.protocol.v2._adapters import _models  # pyright: ignore[reportPrivateUsage]

    return [model.__name__ for model in _models(union)]


def test_the_package_exports_every_model_callers_need() -> None:
    wanted = set(REQUIRED_EXPORTS)
    wanted |= set(_variant_names(v2.ThreadItem)) | set(_variant_names(v2.ServerNotification))
    wanted |= set(_variant_names(v2.ServerRequest))
    for name in _variant_names(v2.ServerNotification):  # and every notification params model
        params = getattr(v2, name).model_fields["params"].annotation
        assert isinstance(params, type), name
        wanted.add(params.__name__)
    missing = sorted(name for name in wanted if name not in v2.__all__)
    assert missing == []


def test_every_exported_name_resolves_once() -> None:
    assert len(v2.__all__) == len(set(v2.__all__))
    unresolved = [name for name in v2.__all__ if not hasattr(v2, name)]
    assert unresolved == []
