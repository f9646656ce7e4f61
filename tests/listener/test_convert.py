"""The small core -> v2 conversions behind the reducer's bespoke rows."""

from __future__ import annotations

from typing import Any

import pytest

from codex_app_bridge.listener._convert import camel, codex_error_info, sandbox_policy

CWD = "/home/dev/project"


def entry(access: str, path: dict[str, Any]) -> dict[str, Any]:
    return {"path": path, "access": access}


def special(kind: str) -> dict[str, Any]:
    return {"type": "special", "value": {"kind": kind}}


@pytest.mark.parametrize(
    ("profile", "policy"),
    [
        ({"type": "disabled"}, {"type": "dangerFullAccess"}),  # every capture
        (
            {"type": "external", "network": "enabled"},
            {"type": "externalSandbox", "networkAccess": "enabled"},
        ),
        (
            {"type": "external", "network": "restricted"},
            {"type": "externalSandbox", "networkAccess": "restricted"},
        ),
        (
            {
                "type": "managed",
                "file_system": {"type": "restricted", "entries": [entry("read", special("root"))]},
                "network": "restricted",
            },
            {"type": "readOnly", "networkAccess": False},
        ),
        (
            {
                "type": "managed",
                "file_system": {
                    "type": "restricted",
                    "entries": [
                        entry("read", special("root")),
                        entry("write", special("current_working_directory")),
                        entry("write", special("slash_tmp")),
                        entry("write", {"type": "path", "path": "/data/cache"}),
                    ],
                },
                "network": "enabled",
            },
            {
                "type": "workspaceWrite",
                "writableRoots": ["/data/cache"],
                "networkAccess": True,
                "excludeTmpdirEnvVar": True,
                "excludeSlashTmp": False,
            },
        ),
        (
            {"type": "managed", "file_system": {"type": "unrestricted"}, "network": "enabled"},
            {"type": "dangerFullAccess"},
        ),
        ({"type": "something_new"}, {"type": "readOnly", "networkAccess": False}),
    ],
    ids=[
        "disabled",
        "external-enabled",
        "external-restricted",
        "read-only",
        "workspace-write",
        "unrestricted",
        "unknown",
    ],
)
def test_permission_profile_shows_as_a_legacy_sandbox_policy(
    profile: dict[str, Any], policy: dict[str, Any]
) -> None:
    assert sandbox_policy(profile, CWD) == policy


@pytest.mark.parametrize(
    ("core", "wire"),
    [
        ("internal_server_error", "internalServerError"),
        ("thread_rollback_failed", "threadRollbackFailed"),
        ("invalid_prompt", "other"),
        (
            {"response_too_many_failed_attempts": {"http_status_code": 429}},
            {"responseTooManyFailedAttempts": {"httpStatusCode": 429}},
        ),
        (
            {"active_turn_not_steerable": {"turn_kind": "review"}},
            {"activeTurnNotSteerable": {"turnKind": "review"}},
        ),
        ({"bad_request": None}, "badRequest"),
        ({"a": 1, "b": 2}, "other"),
    ],
)
def test_codex_error_info_maps_onto_the_0_163_0_enum(core: Any, wire: Any) -> None:
    assert codex_error_info(core) == wire


def test_camel_leaves_names_without_underscores_alone() -> None:
    assert camel("in_progress") == "inProgress"
    assert camel("pending") == "pending"
    assert camel("session_flags") == "sessionFlags"
