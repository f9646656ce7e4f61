"""End-to-end: ``serve`` with a ``config.toml`` naming a Responses provider runs model turns
whose notifications and model requests are those of the real 0.163.0 (its captures against the
same mock scenarios)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.agent._harness import (
    capture_messages,
    capture_requests,
    mask,
    masked_turn,
    run_turns,
)

pytestmark = pytest.mark.anyio


def _describe(value: Any) -> Any:
    """A tool spec with its prose masked (the descriptions are the project's own words)."""
    if isinstance(value, dict):
        return {
            k: ("<prose>" if k == "description" and isinstance(v, str) else _describe(v))
            for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
        }
    if isinstance(value, list):
        return [_describe(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


@pytest.mark.parametrize("scenario", ["plain", "reasoning"])
async def test_a_configured_provider_serves_turns_with_the_notifications_of_the_real_server(
    scenario: str,
) -> None:
    prompt = {
        "plain": "Say hello in a long-ish streamed reply.",
        "reasoning": "Think, then greet me.",
    }
    run = await run_turns(scenario, [prompt[scenario]])
    assert "turns from the model provider configured in" in run.stderr
    ours = masked_turn(run.received)
    theirs = masked_turn(capture_messages(scenario))
    assert [m["method"] for m in ours] == [m["method"] for m in theirs]
    assert ours == theirs


@pytest.mark.parametrize("scenario", ["plain", "reasoning"])
async def test_the_request_has_the_body_and_headers_of_the_real_server(scenario: str) -> None:
    run = await run_turns(scenario, ["Say hello in a long-ish streamed reply."])
    (ours,) = run.requests
    (theirs,) = capture_requests(scenario)
    body, real = ours["body"], theirs["body"]
    assert list(body) == list(real)
    for key in (
        "model",
        "stream",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "store",
        "include",
    ):
        assert body[key] == real[key], key
    assert body["prompt_cache_key"] == run.thread_id
    assert set(body["client_metadata"]) == set(real["client_metadata"])  # a hash map in core
    assert _describe(body["tools"]) == _describe(real["tools"])
    # input: base instructions (our prose), developer context, environment, the user message
    assert [(i["type"], i.get("role")) for i in body["input"]] == [
        (i["type"], i.get("role")) for i in real["input"]
    ]
    base, developer, environment, user = body["input"]
    assert base["id"].startswith("msg_")
    assert "codex-app-bridge" in base["content"][0]["text"]
    assert developer["content"][-1]["text"].startswith("<permissions instructions>")
    # the same fragments as the real binary's (skills, then permissions), in our words
    assert [p["text"].split("\n")[0] for p in developer["content"]] == [
        p["text"].split("\n")[0] for p in real["input"][1]["content"]
    ]
    assert "(file: r0/skill-authoring/SKILL.md)" in developer["content"][0]["text"]
    env_text = environment["content"][0]["text"]
    real_env = real["input"][2]["content"][0]["text"]
    assert (
        env_text.replace(str(run.work), "/home/dev/project").split("<current_date>")[0]
        == (real_env.split("<current_date>")[0])
    )
    assert env_text.split("</timezone>")[1] == real_env.split("</timezone>")[1].replace(
        "/home/dev/project", str(run.work)
    )
    assert user["content"] == [
        {"type": "input_text", "text": "Say hello in a long-ish streamed reply."}
    ]
    assert all("internal_chat_message_metadata_passthrough" not in i for i in body["input"])
    # headers: the same names; Codex's metadata with the same keys in the same order
    skip = {"host", "content-length", "accept-encoding", "connection"}
    assert {k for k in ours["headers"] if k not in skip} == {
        k for k in theirs["headers"] if k not in skip
    }
    metadata = json.loads(ours["headers"]["x-codex-turn-metadata"])
    real_metadata = json.loads(theirs["headers"]["x-codex-turn-metadata"])
    assert list(metadata) == list(real_metadata)
    assert metadata["thread_id"] == run.thread_id == ours["headers"]["thread-id"]
    assert mask(
        {
            k: v
            for k, v in metadata.items()
            if not k.endswith("_id") and k != "turn_started_at_unix_ms"
        }
    ) == mask(
        {
            k: v
            for k, v in real_metadata.items()
            if not k.endswith("_id") and k != "turn_started_at_unix_ms"
        }
    )
    assert ours["headers"]["x-codex-window-id"] == f"{run.thread_id}:0"
    assert ours["headers"]["originator"] == "codex_app_bridge_conformance"
    assert ours["headers"]["user-agent"].startswith("codex_app_bridge_conformance/0.163.0 (")
    assert metadata["installation_id"] == body["client_metadata"]["x-codex-installation-id"]


async def test_a_second_turn_sends_the_history_and_no_context_again() -> None:
    run = await run_turns("plain", ["first", "second"])
    first, second = run.requests
    one, two = first["body"]["input"], second["body"]["input"]
    assert two[: len(one)] == one
    added = two[len(one) :]
    assert [(i["type"], i.get("role")) for i in added] == [
        ("message", "assistant"),
        ("message", "user"),
    ]
    assert added[0]["id"] == "msg_plain_0"
    assert added[0]["status"] == "completed"
    assert added[1]["content"] == [{"type": "input_text", "text": "second"}]
    usage = [m for m in run.received if m.get("method") == "thread/tokenUsage/updated"]
    assert [u["params"]["tokenUsage"]["total"]["totalTokens"] for u in usage] == [120, 240]
