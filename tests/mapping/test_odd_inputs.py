"""Odd and unknown inputs: output chunks that are not base64 or split a character, argv that is
empty or needs every kind of quoting, working directories and read paths of every shape,
durations that overflow, secrets on a command line, unknown entries inside items and events with
no item projection. None of them raises; each gives a defined result."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from codex_app_bridge.mapping import (
    command_actions,
    item_event_to_server_notification,
    thread_item_from_turn_item,
)
from codex_app_bridge.mapping._paths import FileUri
from codex_app_bridge.mapping._text import shlex_join
from codex_app_bridge.protocol import core
from codex_app_bridge.protocol.core import EVENT_MSG_ADAPTER
from codex_app_bridge.protocol.v2 import dump_dict
from tests.mapping.support import schema_errors

Json = dict[str, Any]


def mapped(payload: Json) -> Json | None:
    """What the mapper writes for a core event (checked against the vendored schema)."""
    notification = item_event_to_server_notification(
        EVENT_MSG_ADAPTER.validate_python(payload), "T", "U"
    )
    if notification is None:
        return None
    written = dump_dict(notification)
    assert schema_errors(written) == []
    return written


def output_delta(chunk: str) -> Json | None:
    return mapped(
        {"type": "exec_command_output_delta", "call_id": "c", "stream": "stderr", "chunk": chunk}
    )


# --------------------------------------------------------------------------- output chunks


@pytest.mark.parametrize("chunk", ["!!!", "aGVsbG8", "aGVs bG8=", "aGVsbG8==="], ids=repr)
def test_output_chunk_that_is_not_base64_gives_no_notification(chunk: str) -> None:
    assert output_delta(chunk) is None


def test_each_chunk_is_decoded_alone_so_a_split_character_becomes_two_replacements() -> None:
    encoded = "é".encode()
    first = output_delta(base64.b64encode(encoded[:1]).decode())
    second = output_delta(base64.b64encode(encoded[1:]).decode())
    assert first is not None
    assert second is not None
    assert (first["params"]["delta"], second["params"]["delta"]) == ("\ufffd", "\ufffd")


def test_stderr_and_an_empty_chunk_are_deltas_like_any_other() -> None:
    written = output_delta("")
    assert written == {
        "method": "item/commandExecution/outputDelta",
        "params": {"threadId": "T", "turnId": "U", "itemId": "c", "delta": ""},
    }


# --------------------------------------------------------------------------- argv


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        ([], ""),
        ([""], "''"),
        (["/bin/bash", "-lc", "echo hello"], "/bin/bash -lc 'echo hello'"),
        (["echo", "it's"], 'echo "it\'s"'),
        (["$HOME", "a`b`"], "'$HOME' 'a`b`'"),
        (["x\\y"], '"x\\\\y"'),
        (["a^b", "^c"], "a'^b' '^c'"),
        (["it's $x"], "\"it's \"'$x'"),
        (["grep", "-e", "a|b", "file name.txt"], "grep -e 'a|b' 'file name.txt'"),
        (["k=v", "50%", "~/x", "a,b", "{x}"], "'k=v' '50%' '~/x' 'a,b' '{x}'"),
        (["café"], "'café'"),
        (["tab\there", "line\nbreak"], "'tab\there' 'line\nbreak'"),
        (["bad\x00arg", "ok"], "<command included NUL byte>"),
    ],
)
def test_argv_is_quoted_like_the_rust_shlex_crate(argv: list[str], shown: str) -> None:
    assert shlex_join(argv) == shown


def test_empty_argv_makes_a_command_item_with_an_empty_command() -> None:
    written = mapped(
        {
            "type": "exec_command_begin",
            "call_id": "c",
            "command": [],
            "cwd": "/r",
            "started_at_ms": 5,
        }
    )
    assert written is not None
    assert written["params"]["item"]["command"] == ""


def test_secrets_on_the_command_line_and_in_actions_are_masked() -> None:
    written = mapped(
        {
            "type": "exec_command_begin",
            "call_id": "c",
            "command": [
                "curl",
                "-H",
                "Authorization: Bearer abcdefghijklmnop0123",
                "--data",
                "api_key=hunter2hunter2",
                "sk-abcdefghijklmnopqrstuvwxyz",
                "AKIAIOSFODNN7EXAMPLE",
            ],
            "cwd": "/r",
            "parsed_cmd": [
                {
                    "type": "search",
                    "cmd": "rg token=abcdefgh1234",
                    "query": "password: s3cr3t-value",
                    "path": None,
                },
                {"type": "unknown", "cmd": "echo sk-abcdefghijklmnopqrstuvwxyz"},
            ],
        }
    )
    assert written is not None
    item = written["params"]["item"]
    assert item["command"] == (
        "curl -H 'Authorization: Bearer [REDACTED_SECRET]' --data 'api_key=[REDACTED_SECRET]' "
        "[REDACTED_SECRET] [REDACTED_SECRET]"
    )
    assert item["commandActions"] == [
        {
            "type": "search",
            "command": "rg token=[REDACTED_SECRET]",
            "query": "password: [REDACTED_SECRET]",
            "path": None,
        },
        {"type": "unknown", "command": "echo [REDACTED_SECRET]"},
    ]


def test_text_that_only_looks_like_a_secret_is_kept() -> None:
    argv = ["echo", "Bearer of good news", "token=short", "sk-tooShort"]
    written = mapped({"type": "exec_command_begin", "call_id": "c", "command": argv, "cwd": "/r"})
    assert written is not None
    assert (
        written["params"]["item"]["command"]
        == "echo 'Bearer of good news' 'token=short' sk-tooShort"
    )


# --------------------------------------------------------------------------- paths


def read(path: str) -> list[core.ParsedCommand]:
    return [core.ParsedCommandRead(cmd=f"cat {path}", name=path, path=path)]


@pytest.mark.parametrize(
    ("cwd", "path", "read_path"),
    [
        ("file:///home/dev/project", "src/main.rs", "/home/dev/project/src/main.rs"),
        ("file:///home/dev/project/", "./a/../b.txt", "/home/dev/project/b.txt"),
        ("file:///home/dev/project", "../../../../etc/passwd", "/etc/passwd"),
        ("file:///home/dev/project", "/abs/x", "/abs/x"),
        ("file:///a%20dir", "b c", "/a dir/b c"),
        ("file:///srv", "100%.txt", "/srv/100%.txt"),
        ("file:///C:/src", "..\\..\\x.txt", "C:\\x.txt"),
        ("file:///C:/src/app", "\\top.txt", "C:\\top.txt"),
        ("file:///C:/src", "D:\\other\\y.txt", "D:\\other\\y.txt"),
        ("file:///C:/src", "C:relative.txt", None),
        ("file://server/share/proj", "f.txt", "\\\\server\\share\\proj\\f.txt"),
        ("file://server/share", "..\\..\\up.txt", "\\\\server\\share\\up.txt"),
        ("file://localhost/tmp", "f", "/tmp/f"),
        ("/plain/path", "f", "/plain/path/f"),
        ("C:\\plain", "f", "C:\\plain\\f"),
        ("relative/dir", "f", None),
        ("", "f", None),
        ("file:///tmp?query", "f", None),
        ("file://user@host/tmp", "f", None),
        ("file://host:22/tmp", "f", None),
        ("file:///tmp/a%00b", "f", None),
        ("file:///tmp", "a\x00b", None),
        ("https://example.com/tmp", "f", None),
    ],
)
def test_read_action_joins_its_path_to_the_cwd_or_is_left_out(
    cwd: str, path: str, read_path: str | None
) -> None:
    actions = [dump_dict(action) for action in command_actions(read(path), cwd)]
    expected = (
        []
        if read_path is None
        else [{"type": "read", "command": f"cat {path}", "name": path, "path": read_path}]
    )
    assert actions == expected


@pytest.mark.parametrize(
    ("cwd", "shown"),
    [
        ("file:///home/dev/project", "/home/dev/project"),
        ("file:///", "/"),
        ("file:///C:", "C:\\"),
        ("file:///c:/Users/dev", "c:\\Users\\dev"),
        ("file://SERVER/share/x", "\\\\server\\share\\x"),
        ("file:///a/./b/../c", "/a/c"),
        ("file:///bad%FFbyte", "/bad\ufffdbyte"),
        ("/plain/unchanged/", "/plain/unchanged/"),
        ("relative", "relative"),
        ("file:///tmp?q=1", "file:///tmp?q=1"),
    ],
)
def test_command_item_shows_the_cwd_in_its_own_convention(cwd: str, shown: str) -> None:
    written = mapped({"type": "exec_command_begin", "call_id": "c", "command": ["ls"], "cwd": cwd})
    assert written is not None
    assert written["params"]["item"]["cwd"] == shown


def test_opaque_fallback_uri_shows_the_path_it_encodes_and_joins_nothing() -> None:
    encoded = base64.urlsafe_b64encode(b"/weird\x00/path").rstrip(b"=").decode()
    cwd = f"file:///%00/bad/path/{encoded}"
    uri = FileUri.parse(cwd)
    assert uri is not None
    assert uri.native_path() == "/weird\x00/path"
    assert command_actions(read("f"), cwd) == []
    windows = base64.urlsafe_b64encode("C:\\w\x00".encode("utf-16-le")).rstrip(b"=").decode()
    windows_uri = FileUri.parse(f"file:///%00/bad/path/{windows}")
    assert windows_uri is not None
    assert windows_uri.native_path() == "C:\\w\x00"


def test_native_paths_needing_an_opaque_uri_still_join() -> None:
    base = FileUri.parse("file:///C:/src")
    assert base is not None
    namespaced = base.join("\\\\?\\C:\\long\\path")
    assert namespaced is not None
    assert namespaced.native_path() == "\\\\?\\C:\\long\\path"


# --------------------------------------------------------------------------- durations

HUGE = {"secs": 2**64 - 1, "nanos": 999_999_999}


def test_overflowing_duration_saturates_on_exec_command_end() -> None:
    written = mapped(
        {
            "type": "exec_command_end",
            "call_id": "c",
            "command": ["sleep", "inf"],
            "cwd": "/r",
            "exit_code": 0,
            "duration": HUGE,
            "status": "completed",
        }
    )
    assert written is not None
    assert written["params"]["item"]["durationMs"] == 2**63 - 1


def test_overflowing_duration_is_null_on_turn_items_and_tool_calls() -> None:
    command = core.TURN_ITEM_ADAPTER.validate_python(
        {
            "type": "CommandExecution",
            "id": "c",
            "command": ["sleep", "inf"],
            "cwd": "file:///r",
            "parsed_cmd": [],
            "source": "agent",
            "status": "completed",
            "duration": HUGE,
        }
    )
    item = thread_item_from_turn_item(command)
    assert item is not None
    assert dump_dict(item)["durationMs"] is None
    mcp = mapped(
        {
            "type": "mcp_tool_call_end",
            "call_id": "m",
            "invocation": {"server": "s", "tool": "t"},
            "duration": HUGE,
            "result": {"Err": "timeout"},
        }
    )
    dynamic = mapped(
        {
            "type": "dynamic_tool_call_response",
            "call_id": "d",
            "turn_id": "U2",
            "tool": "t",
            "arguments": None,
            "content_items": [],
            "success": True,
            "duration": HUGE,
        }
    )
    assert mcp is not None
    assert dynamic is not None
    assert (mcp["params"]["item"]["durationMs"], dynamic["params"]["item"]["durationMs"]) == (
        None,
        None,
    )


def test_sub_millisecond_durations_truncate_to_whole_milliseconds() -> None:
    item = core.TURN_ITEM_ADAPTER.validate_python(
        {
            "type": "DynamicToolCall",
            "id": "d",
            "tool": "t",
            "status": "completed",
            "duration": {"secs": 3, "nanos": 999_999},
        }
    )
    converted = thread_item_from_turn_item(item)
    assert converted is not None
    assert dump_dict(converted)["durationMs"] == 3000


# --------------------------------------------------------------------------- unknown entries


def test_parsed_command_of_an_unknown_type_is_left_out() -> None:
    parsed = core.TURN_ITEM_ADAPTER.validate_python(
        {
            "type": "CommandExecution",
            "id": "c",
            "command": ["x"],
            "cwd": "file:///r",
            "parsed_cmd": [{"type": "teleport", "cmd": "x"}, {"type": "unknown", "cmd": "x"}],
            "source": "agent",
            "status": "in_progress",
        }
    )
    item = thread_item_from_turn_item(parsed)
    assert item is not None
    assert dump_dict(item)["commandActions"] == [{"type": "unknown", "command": "x"}]


def test_agent_status_of_an_unknown_kind_is_left_out_of_the_states() -> None:
    written = mapped(
        {
            "type": "collab_waiting_end",
            "sender_thread_id": "S",
            "call_id": "w",
            "completed_at_ms": 1,
            "statuses": {"a": "hibernating", "b": {"completed": None}, "c": {"dreaming": "x"}},
        }
    )
    assert written is not None
    item = written["params"]["item"]
    assert item["receiverThreadIds"] == ["a", "b", "c"]
    assert item["status"] == "completed"
    assert item["agentsStates"] == {"b": {"status": "completed", "message": None}}


def test_spawn_without_a_new_thread_failed_whatever_its_status() -> None:
    written = mapped(
        {
            "type": "collab_agent_spawn_end",
            "call_id": "s",
            "sender_thread_id": "S",
            "new_thread_id": None,
            "prompt": "p",
            "model": "m",
            "reasoning_effort": "",
            "status": "running",
        }
    )
    assert written is not None
    item = written["params"]["item"]
    assert (item["status"], item["receiverThreadIds"], item["agentsStates"]) == ("failed", [], {})
    assert item["reasoningEffort"] is None  # an empty effort cannot be shown


def test_exec_command_end_with_a_status_the_wire_does_not_know_gives_nothing() -> None:
    payload = {
        "type": "exec_command_end",
        "call_id": "c",
        "command": ["ls"],
        "cwd": "/r",
        "exit_code": 0,
        "duration": {"secs": 0, "nanos": 0},
        "status": "vanished",
    }
    assert mapped(payload) is None


# --------------------------------------------------------------------------- no item projection


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "task_started", "turn_id": "U"},
        {"type": "task_complete", "turn_id": "U", "last_agent_message": "hi"},
        {"type": "turn_aborted", "turn_id": "U", "reason": "interrupted"},
        {"type": "token_count", "info": None, "rate_limits": None},
        {"type": "error", "message": "boom"},
        {"type": "stream_error", "message": "retrying"},
        {"type": "warning", "message": "careful"},
        {"type": "agent_message", "message": "legacy whole message"},
        {"type": "user_message", "message": "legacy user message"},
        {"type": "agent_reasoning", "text": "legacy reasoning"},
        {"type": "web_search_begin", "call_id": "w"},
        {
            "type": "dynamic_tool_call_request",
            "callId": "d",
            "turnId": "U",
            "tool": "t",
            "arguments": {},
        },
        {"type": "context_compacted"},
        {"type": "plan_update", "plan": [{"step": "a", "status": "pending"}]},
        {"type": "turn_diff", "unified_diff": "@@"},
        {"type": "shutdown_complete"},
        {"type": "from_a_later_codex", "whatever": [1, 2, 3]},
    ],
    ids=lambda payload: payload["type"],
)
def test_event_without_an_item_projection_gives_no_notification(payload: Json) -> None:
    assert mapped(payload) is None
