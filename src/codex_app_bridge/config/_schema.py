"""The shape of ``config.toml`` as Codex 0.163.0 deserializes it: types, errors, unknown keys.

Role: what the Rust ``ConfigToml`` struct does with a merged TOML table, in its own words:

* :func:`validate` walks the table in document order, as serde does, and raises
  :class:`SchemaError` for the first value it would refuse, with serde's text
  (``invalid type: integer `5`, expected a string``, ``unknown variant `x`, expected one of
  ...``, ``missing field `rules```) and the key path it names (``in `model```);
* :func:`unknown_keys` lists the keys Codex ignores with a warning (top-level keys, fields of a
  ``[model_providers.<id>]`` table, feature names);
* :func:`render_config` is the ``config`` object of ``config/read``: every known key, defaults
  filled in as the binary reports them (the defaults are data probed from the binary,
  ``defaults.json``).

The types cover the keys a model turn reads and every top-level scalar; tables the bridge does
not use (``tui``, ``mcp_servers``, ...) are checked for being tables only. Boundary: pure.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, cast

from codex_app_bridge.config._encode import rust_float, toml_datetime

__all__ = [
    "BUILT_IN_PROVIDER_IDS",
    "RESERVED_PROVIDER_IDS",
    "SchemaError",
    "approval_policy_wire",
    "config_defaults",
    "known_feature",
    "render_config",
    "unknown_keys",
    "validate",
]

Path = tuple[str, ...]

RESERVED_PROVIDER_IDS: Final = ("lmstudio", "ollama", "openai")
"""Built-in providers a ``[model_providers.<id>]`` table may not redefine."""
BUILT_IN_PROVIDER_IDS: Final = ("amazon-bedrock", "lmstudio", "ollama", "openai")
_BEDROCK_FIELDS: Final = frozenset({"base_url", "auth", "http_headers", "aws"})
_BEDROCK_MESSAGE: Final = (
    "model_providers.amazon-bedrock only supports changing `base_url`, `auth`, `http_headers`, "
    "`aws.profile`, `aws.region`, `aws.credential_export`, and `aws.auth_refresh`; other "
    "non-default provider fields are not supported"
)
_CHAT_MESSAGE: Final = (
    '`wire_api = "chat"` is no longer supported.\n'
    'How to fix: set `wire_api = "responses"` in your provider config.\n'
    "More info: https://github.com/openai/codex/discussions/7782"
)


class SchemaError(ValueError):
    """A value Codex refuses: serde's ``message`` and the ``path`` of the value."""

    def __init__(self, message: str, path: Path, where: Path | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.where = path if where is None else where
        """The value whose span locates the error in a file (``path`` unless deeper)."""

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


# ------------------------------------------------------------------ serde's wording


def unexpected(value: Any) -> str:
    """serde's ``Unexpected`` for a TOML value."""
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{rust_float(value)}`"
    if isinstance(value, str):
        return "string " + json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "sequence"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return "string " + json.dumps(toml_datetime(value))
    return "unit value"


def _one_of(variants: tuple[str, ...]) -> str:
    if len(variants) == 1:
        return f"`{variants[0]}`"
    if len(variants) == 2:
        return f"`{variants[0]}` or `{variants[1]}`"
    return "one of " + ", ".join(f"`{v}`" for v in variants)


Check = Callable[[Any, Path], None]


def _scalar(expected: str, accepts: Callable[[Any], bool]) -> Check:
    def check(value: Any, path: Path) -> None:
        if not accepts(value):
            raise SchemaError(f"invalid type: {unexpected(value)}, expected {expected}", path)

    return check


def _is_str(value: Any) -> bool:
    return isinstance(value, (str, dt.datetime, dt.date, dt.time))


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _integer(name: str, low: int, high: int) -> Check:
    def check(value: Any, path: Path) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaError(f"invalid type: {unexpected(value)}, expected {name}", path)
        if not low <= value <= high:
            raise SchemaError(f"invalid value: integer `{value}`, expected {name}", path)

    return check


_STRING: Final = _scalar("a string", _is_str)
_PATH: Final = _scalar("path string", _is_str)
_BOOL: Final = _scalar("a boolean", _is_bool)
_SEQUENCE: Final = _scalar("a sequence", lambda v: isinstance(v, list))
_I64: Final = _integer("i64", -(2**63), 2**63 - 1)
_U64: Final = _integer("u64", 0, 2**64 - 1)
_U8: Final = _integer("u8", 0, 255)
_U16: Final = _integer("u16", 0, 65535)
_USIZE: Final = _integer("usize", 0, 2**64 - 1)


def _enum(*variants: str) -> Check:
    def check(value: Any, path: Path) -> None:
        if isinstance(value, str):
            if value not in variants:
                raise SchemaError(f"unknown variant `{value}`, expected {_one_of(variants)}", path)
            return
        if isinstance(value, dict):
            table = cast("dict[str, Any]", value)
            if len(table) != 1:
                raise SchemaError(f"wanted exactly 1 element, found {len(table)} elements", path)
            name = next(iter(table))
            raise SchemaError(f"unknown variant `{name}`, expected {_one_of(variants)}", path)
        raise SchemaError("invalid type: unit variant, expected string only", path)

    return check


_APPROVALS: Final = ("untrusted", "on-failure", "on-request", "granular", "never")
_GRANULAR_FIELDS: Final = (
    ("sandbox_approval", True),
    ("rules", True),
    ("skill_approval", False),
    ("request_permissions", False),
    ("mcp_elicitations", True),
)


def _approval_policy(value: Any, path: Path) -> None:
    if isinstance(value, dict) and set(cast("dict[str, Any]", value)) == {"granular"}:
        granular = cast("dict[str, Any]", value)["granular"]
        inner = (*path, "granular")
        if not isinstance(granular, dict):
            raise SchemaError(
                f"invalid type: {unexpected(granular)}, expected struct GranularApprovalConfig",
                inner,
            )
        fields = cast("dict[str, Any]", granular)
        for name, value_ in fields.items():
            if name in dict(_GRANULAR_FIELDS):
                _BOOL(value_, (*inner, name))
        for name, required in _GRANULAR_FIELDS:
            if required and name not in fields:
                raise SchemaError(f"missing field `{name}`", path, inner)
        return
    _enum(*_APPROVALS)(value, path)


def approval_policy_wire(value: Any) -> Any:
    """A validated ``approval_policy`` as the v2 wire reports it (granular: every flag)."""
    if isinstance(value, dict):
        granular = cast("dict[str, Any]", cast("dict[str, Any]", value)["granular"])
        return {"granular": {name: bool(granular.get(name, False)) for name, _ in _GRANULAR_FIELDS}}
    return value


def _string_map(value: Any, path: Path) -> None:
    if not isinstance(value, dict):
        raise SchemaError(f"invalid type: {unexpected(value)}, expected a map", path)
    for key, item in cast("dict[str, Any]", value).items():
        _STRING(item, (*path, key))


def _struct(fields: Mapping[str, Check], name: str | None = None) -> Check:
    def check(value: Any, path: Path) -> None:
        if not isinstance(value, dict):
            expected = f"struct {name}" if name else "a map"
            raise SchemaError(f"invalid type: {unexpected(value)}, expected {expected}", path)
        for key, item in cast("dict[str, Any]", value).items():
            field_check = fields.get(key)
            if field_check is not None:
                field_check(item, (*path, key))

    return check


def _table(value: Any, path: Path) -> None:
    if not isinstance(value, dict):
        raise SchemaError(f"invalid type: {unexpected(value)}, expected a map", path)


def _wire_api(value: Any, path: Path) -> None:
    _STRING(value, path)
    if value == "chat":
        raise SchemaError(_CHAT_MESSAGE, path)
    if value != "responses":
        raise SchemaError(f"unknown variant `{value}`, expected `responses`", path)


PROVIDER_FIELDS: Final[Mapping[str, Check]] = {
    "name": _STRING,
    "base_url": _STRING,
    "model_catalog_url": _STRING,
    "env_key": _STRING,
    "env_key_instructions": _STRING,
    "experimental_bearer_token": _STRING,
    "auth": _struct({}, "ModelProviderAuthInfo"),
    "gateway_oauth": _struct({}, "GatewayOAuthConfig"),
    "aws": _struct({}, "ModelProviderAwsAuthInfo"),
    "wire_api": _wire_api,
    "capabilities": _struct(
        {"external_web_access": _BOOL, "remote_compaction": _BOOL}, "ModelProviderCapabilities"
    ),
    "query_params": _string_map,
    "http_headers": _string_map,
    "env_http_headers": _string_map,
    "request_max_retries": _U64,
    "stream_max_retries": _U64,
    "stream_idle_timeout_ms": _U64,
    "websocket_connect_timeout_ms": _U64,
    "requires_openai_auth": _BOOL,
    "supports_websockets": _BOOL,
    "supports_standalone_web_search": _BOOL,
}
_PROVIDER_CHECK: Final = _struct(PROVIDER_FIELDS)


def _model_providers(value: Any, path: Path) -> None:
    if not isinstance(value, dict):
        raise SchemaError(f"invalid type: {unexpected(value)}, expected a map", path)
    providers = cast("dict[str, Any]", value)
    for provider_id, provider in providers.items():
        _PROVIDER_CHECK(provider, (*path, provider_id))
    reserved = sorted(i for i in providers if i in RESERVED_PROVIDER_IDS)
    if reserved:
        names = ", ".join(f"`{i}`" for i in reserved)
        raise SchemaError(
            f"model_providers contains reserved built-in provider IDs: {names}. Built-in "
            "providers cannot be overridden. Rename your custom provider (for example, "
            "`openai-custom`).",
            path,
        )
    for provider_id, provider in providers.items():
        fields = cast("dict[str, Any]", provider)
        if provider_id == "amazon-bedrock":
            if set(fields) - _BEDROCK_FIELDS:
                raise SchemaError(_BEDROCK_MESSAGE, path)
            continue
        if not str(fields.get("name", "")).strip():
            raise SchemaError(
                f"model_providers.{provider_id}: provider name must not be empty", path
            )


def _features(value: Any, path: Path) -> None:
    if not isinstance(value, dict):
        raise SchemaError(f"invalid type: {unexpected(value)}, expected a map", path)
    for name, item in cast("dict[str, Any]", value).items():
        if known_feature(name) and name != "network_proxy":
            _BOOL(item, (*path, name))


TOP_LEVEL: Final[Mapping[str, Check]] = {
    "model": _STRING,
    "review_model": _STRING,
    "model_context_window": _I64,
    "model_auto_compact_token_limit": _I64,
    "model_auto_compact_token_limit_scope": _enum("total", "body_after_prefix"),
    "model_provider": _STRING,
    "approval_policy": _approval_policy,
    "approvals_reviewer": _enum("user", "auto_review", "guardian_subagent"),
    "sandbox_mode": _enum("read-only", "workspace-write", "danger-full-access"),
    "sandbox_workspace_write": _struct(
        {
            "writable_roots": _SEQUENCE,
            "network_access": _BOOL,
            "exclude_tmpdir_env_var": _BOOL,
            "exclude_slash_tmp": _BOOL,
        }
    ),
    "forced_login_method": _enum("chatgpt", "api"),
    "web_search": _enum("disabled", "cached", "indexed", "live"),
    "instructions": _STRING,
    "developer_instructions": _STRING,
    "compact_prompt": _STRING,
    "model_reasoning_effort": _STRING,
    "model_reasoning_summary": _enum("auto", "concise", "detailed", "none"),
    "model_verbosity": _enum("low", "medium", "high"),
    "service_tier": _STRING,
    "analytics": _struct({"enabled": _BOOL}),
    "allow_symlinked_codex_home": _BOOL,
    "daybreak": _BOOL,
    "experimental_realtime_webrtc_call_base_url": _STRING,
    "openai_base_url": _STRING,
    "experimental_thread_store_endpoint": _STRING,
    "default_permissions": _STRING,
    "model_post_turn_compact_threshold_percent": _U8,
    "model_catalog_json": _PATH,
    "experimental_use_unified_exec_tool": _BOOL,
    "thread_unload_delay_secs": _U64,
    "check_for_update_on_startup": _BOOL,
    "sqlite_home": _PATH,
    "experimental_compact_prompt_file": _PATH,
    "oss_provider": _STRING,
    "disable_paste_burst": _BOOL,
    "mcp_oauth_callback_port": _U16,
    "js_repl_node_path": _PATH,
    "experimental_realtime_ws_model": _STRING,
    "experimental_realtime_ws_base_url": _STRING,
    "mcp_oauth_callback_url": _STRING,
    "log_dir": _PATH,
    "experimental_realtime_ws_backend_prompt": _STRING,
    "mcp_optional_startup_grace_ms": _U64,
    "tool_output_token_limit": _USIZE,
    "experimental_realtime_ws_startup_context": _STRING,
    "apps_mcp_product_sku": _STRING,
    "personality": _enum("none", "friendly", "pragmatic"),
    "show_raw_agent_reasoning": _BOOL,
    "experimental_realtime_start_instructions": _STRING,
    "notify": _SEQUENCE,
    "js_repl_node_module_dirs": _SEQUENCE,
    "plan_mode_reasoning_effort": _STRING,
    "suppress_unstable_features_warning": _BOOL,
    "model_instructions_file": _PATH,
    "allow_login_shell": _BOOL,
    "include_environment_context_time": _BOOL,
    "hide_agent_reasoning": _BOOL,
    "project_root_markers": _SEQUENCE,
    "include_environment_context": _BOOL,
    "include_apps_instructions": _BOOL,
    "project_doc_fallback_filenames": _SEQUENCE,
    "project_doc_max_bytes": _USIZE,
    "include_collaboration_mode_instructions": _BOOL,
    "include_permissions_instructions": _BOOL,
    "cli_auth_credentials_store": _enum("file", "keyring", "auto", "ephemeral"),
    "chatgpt_base_url": _STRING,
    "background_terminal_max_timeout": _U64,
    "profile": _STRING,
    "model_providers": _model_providers,
    "features": _features,
}
"""The checks of the keys the bridge types (others: a table when the default is one)."""


def validate(config: Mapping[str, Any]) -> None:
    """Raise :class:`SchemaError` for the first value Codex would refuse (document order)."""
    tables = config_defaults().tables
    for key, value in config.items():
        check = TOP_LEVEL.get(key)
        if check is not None:
            check(value, (key,))
        elif key in tables:
            _table(value, (key,))


# ------------------------------------------------------------------ defaults and unknown keys


@dataclass(frozen=True)
class ConfigDefaults:
    """What ``config/read`` reports for keys a config leaves out (probed from the binary)."""

    config: dict[str, Any]
    tables: dict[str, Any]
    entries: dict[str, Any]


@cache
def config_defaults() -> ConfigDefaults:
    # read beside this module, not through importlib.resources, whose first use imports its
    # readers (3-6 ms): serve reads the defaults to welcome its first client (configWarning)
    raw = json.loads(pathlib.Path(__file__).with_name("defaults.json").read_text("utf-8"))
    data = cast("dict[str, Any]", raw)
    return ConfigDefaults(data["config"], data["tables"], data["entries"])


_FEATURES: Final = frozenset(
    [
        "agent_message_board",
        "analytics_plan_history",
        "api_key_cyber_access_programs",
        "api_key_model_discovery",
        "apply_patch_freeform",
        "apply_patch_preserve_line_endings",
        "apply_patch_streaming_events",
        "apps",
        "apps_mcp_path_override",
        "artifact",
        "async_compaction",
        "auth_elicitation",
        "background_paginated_rollout_migration",
        "bedrock_setup_wizard",
        "browser_annotation_api",
        "browser_use",
        "browser_use_external",
        "browser_use_full_cdp_access",
        "chronicle",
        "cli_daybreak",
        "code_mode",
        "code_mode_buffered_exec",
        "code_mode_host",
        "code_mode_host_grpc",
        "code_mode_interrupt",
        "code_mode_only",
        "code_mode_only_strict_3p_tools",
        "code_mode_prewarm",
        "code_mode_tool_description_first",
        "code_mode_tool_search",
        "codex_apps_mcp_2026_07_28",
        "codex_git_commit",
        "collaboration_modes",
        "compaction_image_budget",
        "computer_use",
        "concurrent_reasoning_summaries",
        "content_item_kinds",
        "context_management",
        "credential_masking",
        "current_time_reminder",
        "cwd_relative_turn_diffs",
        "daemon_auto_start",
        "default_mode_request_user_input",
        "defer_mailbox_preemption",
        "deferred_executor",
        "deferred_tool_world_state",
        "elevated_windows_sandbox",
        "enable_fanout",
        "enable_mcp_apps",
        "enable_request_compression",
        "exec_permission_approvals",
        "executed_tool_call_metadata",
        "executor_capability_discovery",
        "experimental_windows_sandbox",
        "external_agent_memory_import",
        "external_migration",
        "fast_mode",
        "goals",
        "guardian_approval",
        "guardian_conversation_history_tools",
        "guardian_enhanced_node_repl_transcripts",
        "guardian_ext",
        "guardian_node_repl_transcript_images",
        "guardian_reuse_parent_compaction",
        "guardian_root_handoff_context",
        "guardian_trust_orchestrator_connectors",
        "guardianv2",
        "guardianv2.thread_context",
        "guardianv2_decisions_comparison",
        "hooks",
        "image_detail_original",
        "image_generation",
        "image_resize_notice",
        "in_app_browser",
        "in_app_chat",
        "in_app_dictation",
        "in_app_local_automation",
        "in_app_updates",
        "in_app_voice",
        "incremental_tools",
        "instant_interrupt",
        "item_ids",
        "js_repl",
        "js_repl_tools_only",
        "local_thread_store_compression",
        "local_thread_store_shared_compression",
        "login_shell_package_path",
        "mcp_2026_07_28",
        "mcp_oauth_refresh_coordination",
        "memories",
        "mentions_v2",
        "model_catalog_in_context",
        "multi_agent",
        "multi_agent_mode",
        "multi_agent_v2",
        "multi_agent_v2_dynamic_tools",
        "network_proxy",
        "non_prefixed_mcp_tool_names",
        "nonfatal_clock_read_errors",
        "omit_app_server_notification_media",
        "output_token_replay",
        "personality",
        "plugin_hooks",
        "plugin_sharing",
        "plugins",
        "powershell_shell_version",
        "prefer_mxc",
        "prevent_idle_sleep",
        "psp",
        "realtime_conversation",
        "reasoning_effort_override",
        "recommended_plugins",
        "remote_compaction_v2",
        "remote_control",
        "remote_models",
        "remote_plugin",
        "request_permissions_tool",
        "request_rule",
        "resize_all_images",
        "respect_system_proxy",
        "responses_websockets",
        "responses_websockets_v2",
        "retain_client_developer_messages",
        "retain_client_tool_outputs",
        "rollout_budget",
        "runtime_metrics",
        "search_tool",
        "secret_auth_storage",
        "send_async_message",
        "send_message_to_user_async",
        "shell_snapshot",
        "shell_snapshot_v2",
        "shell_tool",
        "shell_zsh_fork",
        "skill_env_var_dependency_prompt",
        "skill_mcp_dependency_install",
        "skill_search",
        "skip_host_skill_discovery",
        "sleep_tool",
        "sqlite",
        "stable_environment_tools",
        "standalone_web_search",
        "steer",
        "step_model_switching",
        "subagent_default_context_limits",
        "system_proxy_fallback",
        "terminal_resize_reflow",
        "terminal_visualization_instructions",
        "token_budget",
        "tool_call_mcp_elicitation",
        "tool_search",
        "tool_search_always_defer_mcp_tools",
        "tool_suggest",
        "transcript_v2",
        "tui_app_server",
        "ultrafast_mode",
        "unavailable_dummy_tools",
        "unbounded_connection_retries",
        "undo",
        "unified_exec",
        "unified_exec_tty",
        "unified_exec_zsh_fork",
        "unified_image_budget",
        "use_agent_identity",
        "use_legacy_landlock",
        "use_linux_sandbox_bwrap",
        "use_xaa",
        "view_image",
        "web_search_cached",
        "web_search_request",
        "windows_sandbox_service",
        "workspace_dependencies",
        "workspace_owner_usage_nudge",
        "worktrees",
        "write_stdin_approval",
        "codex_hooks",
    ]
)
"""``codex features list`` of 0.163.0, plus the legacy names it still accepts."""


def known_feature(name: str) -> bool:
    return name in _FEATURES


def unknown_keys(config: Mapping[str, Any]) -> list[Path]:
    """The keys of one layer that Codex ignores with a warning, sorted."""
    known = config_defaults().config
    found: list[Path] = []
    for key, value in config.items():
        if key not in known:
            found.append((key,))
        elif key == "model_providers" and isinstance(value, dict):
            for provider_id, provider in cast("dict[str, Any]", value).items():
                if not isinstance(provider, dict):
                    continue
                fields = cast("dict[str, Any]", provider)
                for field_name, field_value in fields.items():
                    if field_name not in PROVIDER_FIELDS:
                        found.append((key, provider_id, field_name))
                    elif field_name == "capabilities" and isinstance(field_value, dict):
                        found.extend(
                            (key, provider_id, field_name, name)
                            for name in cast("dict[str, Any]", field_value)
                            if name not in ("external_web_access", "remote_compaction")
                        )
        elif key == "features" and isinstance(value, dict):
            found.extend(
                (key, name) for name in cast("dict[str, Any]", value) if not known_feature(name)
            )
    return sorted(found)


# ------------------------------------------------------------------ config/read rendering


def _overlay(template: Any, value: Any, *, keep_extra: bool) -> Any:
    """``value`` rendered over a struct's ``template`` (its fields in the template's order)."""
    if not isinstance(template, dict) or not isinstance(value, dict):
        return value
    fields = cast("dict[str, Any]", template)
    given = cast("dict[str, Any]", value)
    if not fields:
        return dict(given)
    out = {
        k: _overlay(v, given[k], keep_extra=False) if k in given else v for k, v in fields.items()
    }
    if keep_extra:
        out.update({k: v for k, v in given.items() if k not in fields})
    return out


def _render_table(key: str, value: Any) -> Any:
    defaults = config_defaults()
    if not isinstance(value, dict):
        return value
    given = cast("dict[str, Any]", value)
    if key == "features":
        out: dict[str, Any] = {"network_proxy": None}
        out.update(given)
        for name, default in cast("dict[str, Any]", defaults.config["features"]).items():
            out.setdefault(name, default)
        return out
    if key in ("model_providers", "profiles", "mcp_servers"):
        entry = defaults.entries[key]
        rendered: dict[str, Any] = {}
        for name, item in given.items():
            body = _overlay(entry, item, keep_extra=False)
            if key == "model_providers" and isinstance(body, dict):
                provider = cast("dict[str, Any]", body)
                capabilities = provider.get("capabilities")
                if isinstance(capabilities, dict):
                    provider["capabilities"] = _overlay(
                        defaults.entries["model_providers.capabilities"],
                        capabilities,
                        keep_extra=False,
                    )
            rendered[name] = body
        return rendered
    return _overlay(defaults.tables.get(key, {}), given, keep_extra=False)


def render_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``config`` object of ``config/read`` for a merged, valid config (TOML values)."""
    from codex_app_bridge.config._encode import to_json

    defaults = config_defaults()
    out: dict[str, Any] = {}
    for key, default in defaults.config.items():
        if key not in config:
            out[key] = default
        elif key in defaults.tables:
            out[key] = _render_table(key, config[key])
        elif key == "approval_policy":
            out[key] = approval_policy_wire(config[key])
        else:
            out[key] = config[key]
    rendered: dict[str, Any] = to_json(out)
    return rendered
