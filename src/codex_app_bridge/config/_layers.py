"""Configuration layers and the effective config of a thread, as Codex 0.163.0 resolves them.

Role: :func:`load_layers` gives the :class:`ConfigLayers` of a ``CODEX_HOME``: the system file
(``/etc/codex/config.toml``), the user file (``CODEX_HOME/config.toml``) and the
``-c key=value`` overrides (TOML values, dotted keys; a value that is not TOML is a string, as
``codex -c`` takes it). Files are read again when they change on disk, so a
``config/value/write`` (or a hand edit) reaches threads started afterwards.

:meth:`ConfigLayers.resolve` makes a thread's :class:`EffectiveConfig`, lowest to highest:
built-in defaults and model metadata, system, user, ``-c``, the thread's ``config`` map (dotted
keys, same schema), the thread's explicit params (``model``, ``modelProvider``,
``baseInstructions``, ``approvalPolicy``, ``sandbox``, ``serviceTier``, ...). It raises
:class:`ConfigError` with the real server's texts; a broken file never stops the server, it is
reported by the requests that need the config and by :meth:`ConfigLayers.startup_warnings`.
:func:`apply_turn_overrides` applies ``turn/start``'s sticky overrides to a thread's config.

:meth:`ConfigLayers.configured_provider` says whether a real model should serve turns: a layer
sets ``model_provider``, or a login (or ``OPENAI_API_KEY``) exists for the default ``openai``
provider. Otherwise the built-in echo agent keeps serving, so ``serve`` with no config stays
offline and deterministic.

Boundary: file reads under ``CODEX_HOME`` and ``/etc/codex``; no threads, no JSON-RPC.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, cast

from codex_app_bridge.config._auth import read_auth
from codex_app_bridge.config._catalog import (
    DEFAULT_MODEL,
    catalog_model,
    fallback_model_warning,
)
from codex_app_bridge.config._document import (
    Document,
    TomlSyntaxError,
    line_col,
    parse_document,
)
from codex_app_bridge.config._encode import layer_version
from codex_app_bridge.config._errors import ConfigError
from codex_app_bridge.config._providers import (
    OPENAI_PROVIDER_ID,
    ProviderInfo,
    built_in_providers,
    provider_from_table,
)
from codex_app_bridge.config._schema import (
    SchemaError,
    approval_policy_wire,
    unknown_keys,
    validate,
)

__all__ = [
    "DEFAULT_SYSTEM_CONFIG",
    "ConfigLayer",
    "ConfigLayers",
    "EffectiveConfig",
    "LayerKind",
    "ThreadConfigOverrides",
    "apply_turn_overrides",
    "load_layers",
    "merge_tables",
    "parse_cli_override",
    "sandbox_policy_wire",
]

DEFAULT_SYSTEM_CONFIG: Final = Path("/etc/codex/config.toml")
CONFIG_FILE: Final = "config.toml"
LayerKind = Literal["system", "user", "sessionFlags"]

_UNTRUSTED: Final = 'approval_policy = "untrusted" is no longer supported; remove this setting'
_DEFAULT_PROFILE: Final = ":read-only"
_PROFILE_SANDBOX: Final = {":read-only": "read-only", ":workspace": "workspace-write"}
_FAST: Final = "fast"
_PRIORITY: Final = "priority"
_FLEX: Final = "flex"


# ------------------------------------------------------------------ one layer


@dataclass(frozen=True)
class ConfigLayer:
    """One source of settings: a file (maybe absent or broken) or the ``-c`` overrides."""

    kind: LayerKind
    file: str | None
    config: dict[str, Any]
    """The layer's table (``{}`` when the file is absent or broken)."""
    text: str | None = None
    """The file's text (``None``: no file)."""
    error: ConfigError | None = None
    """Why the file could not be read or parsed."""
    document: Document | None = None

    @property
    def exists(self) -> bool:
        return self.text is not None

    @property
    def version(self) -> str:
        return layer_version(self.config)

    def name(self) -> dict[str, Any]:
        """The v2 ``ConfigLayerSource`` of this layer."""
        if self.kind == "user":
            return {"type": "user", "file": self.file, "profile": None}
        if self.kind == "system":
            return {"type": "system", "file": self.file}
        return {"type": "sessionFlags"}

    def label(self) -> str:
        """How Codex names the layer in the unknown-key warning."""
        return "session-flags" if self.kind == "sessionFlags" else f"{self.kind} ({self.file})"

    def position(
        self, path: Sequence[str | int], *, key: bool = False
    ) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """Where the value (or the header naming the table; ``key``: the key) at ``path``
        starts and ends."""
        if self.document is None or self.text is None:
            return None
        doc = self.document
        probe = tuple(path)
        while probe:
            if key:
                span = doc.key_spans.get(probe) or doc.value_spans.get(probe)
            else:
                span = doc.value_spans.get(probe) or doc.key_spans.get(probe)
            if span is not None:
                start, end = span
                return line_col(self.text, start), line_col(self.text, max(start, end - 1))
            probe = probe[:-1]
        return None


def _utf8_error(path: Path, exc: UnicodeDecodeError) -> str:
    if exc.reason == "unexpected end of data":
        cause = f"incomplete utf-8 byte sequence from index {exc.start}"
    else:
        cause = f"invalid utf-8 sequence of {exc.end - exc.start} bytes from index {exc.start}"
    return f"Failed to read config file {path}: {cause}"


def _syntax_error(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> ConfigError:
    try:
        parse_document(text)
    except TomlSyntaxError as syntax:
        start_index, end_index = syntax.span
        start = line_col(text, start_index)
        end = line_col(text, max(start_index, end_index - 1))
        return ConfigError.loading(
            f"{path}:{start[0]}:{start[1]}: {syntax.message}",
            "read",
            file=str(path),
            start=start,
            end=end,
        )
    # a document our parser accepts but tomllib does not: tomllib's words and position
    message = str(exc)
    where = message.rfind("(at line ")
    position = (1, 1)
    if where >= 0:
        numbers = [int(n) for n in message[where:].replace(",", " ").split() if n.isdigit()]
        if len(numbers) == 2:
            position = (numbers[0], numbers[1])
        message = message[:where].rstrip()
    return ConfigError.loading(
        f"{path}:{position[0]}:{position[1]}: {message[:1].lower()}{message[1:]}",
        "read",
        file=str(path),
        start=position,
        end=position,
    )


def read_layer(kind: LayerKind, path: Path) -> ConfigLayer:
    """A config file as a layer (absent: an empty layer; broken: an empty layer with ``error``)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return ConfigLayer(kind, str(path), {})
    except OSError as exc:
        detail = f"Failed to read config file {path}: {exc.strerror or exc}"
        return ConfigLayer(kind, str(path), {}, "", ConfigError.loading(detail, "read"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        error = ConfigError.loading(_utf8_error(path, exc), "read")
        return ConfigLayer(kind, str(path), {}, "", error)
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return ConfigLayer(kind, str(path), {}, text, _syntax_error(path, text, exc))
    try:
        document: Document | None = parse_document(text)
    except TomlSyntaxError:
        document = None  # valid for tomllib: values are right, only positions are missing
    return ConfigLayer(kind, str(path), config, text, None, document)


# ------------------------------------------------------------------ -c and thread overrides


def _set_dotted(table: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    current = table
    for part in parts[:-1]:
        child = current.get(part)
        if not isinstance(child, dict):
            child = {}
            current[part] = child
        current = cast("dict[str, Any]", child)
    current[parts[-1]] = value


def parse_cli_override(text: str) -> tuple[str, Any]:
    """One ``-c key=value``: the dotted key and the TOML value (a string if not TOML).

    Raises :class:`ValueError` with ``codex``'s message for an override without ``=``."""
    key, sep, raw = text.partition("=")
    if not sep:
        raise ValueError(f"Invalid override (missing '='): {text}")
    key = key.strip()
    raw = raw.strip()
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def merge_tables(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: tables merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in top.items():
        below = merged.get(key)
        if isinstance(below, dict) and isinstance(value, dict):
            merged[key] = merge_tables(cast("dict[str, Any]", below), cast("dict[str, Any]", value))
        else:
            merged[key] = value
    return merged


def _json_to_toml(value: Any) -> Any:
    """A JSON value from a request as a TOML value (``null`` members are dropped)."""
    if isinstance(value, dict):
        return {
            str(k): _json_to_toml(v)
            for k, v in cast("dict[str, Any]", value).items()
            if v is not None
        }
    if isinstance(value, list):
        return [_json_to_toml(v) for v in cast("list[Any]", value) if v is not None]
    return value


@dataclass(frozen=True)
class ThreadConfigOverrides:
    """What ``thread/start``, ``thread/resume`` and ``thread/fork`` may set (``None``: unset)."""

    config: Mapping[str, Any] | None = None
    """The request's ``config`` map (dotted keys allowed; the schema of ``config.toml``)."""
    model: str | None = None
    model_provider: str | None = None
    base_instructions: str | None = None
    developer_instructions: str | None = None
    approval_policy: Any = None
    """v2 ``AskForApproval`` wire value."""
    approvals_reviewer: str | None = None
    sandbox: str | None = None
    """A sandbox mode (``read-only``, ``workspace-write``, ``danger-full-access``)."""
    service_tier: str | None = None
    personality: str | None = None
    cwd: str | None = None


# ------------------------------------------------------------------ the effective config


@dataclass(frozen=True)
class EffectiveConfig:
    """A thread's settings after every layer and override (see the module docstring)."""

    model: str
    model_provider_id: str
    provider: ProviderInfo
    model_reasoning_effort: str | None = None
    model_reasoning_summary: str | None = None
    """``"none"`` is kept as ``"none"`` (the request then carries no summary)."""
    model_verbosity: str | None = None
    service_tier: str | None = None
    """The tier requests carry: ``fast`` is ``priority``; ``None`` when the model does not
    advertise it (with a warning in :attr:`warnings`)."""
    developer_instructions: str | None = None
    base_instructions: str | None = None
    """``instructions`` / ``model_instructions_file`` / ``baseInstructions``; ``None``: the
    project's own default prose."""
    model_context_window: int | None = None
    model_auto_compact_token_limit: int | None = None
    compact_prompt: str | None = None
    tool_output_token_limit: int | None = None
    approval_policy: Any = "on-request"
    """v2 ``AskForApproval`` wire value."""
    approvals_reviewer: str = "user"
    sandbox_mode: str = "read-only"
    sandbox_workspace_write: dict[str, Any] | None = None
    active_permission_profile: dict[str, Any] | None = None
    """``{"id": ":read-only", "extends": None}`` when nothing chose a sandbox, else ``None``."""
    include_permissions_instructions: bool = True
    include_environment_context: bool = True
    project_doc_max_bytes: int = 32768
    personality: str | None = None
    cwd: str | None = None
    """The thread's cwd when a request named one (the server's default otherwise)."""
    model_from_config: bool = False
    """Whether a layer or a param named the model (else it is the catalog default)."""
    provider_from_config: bool = False
    """Whether a layer or a param named the provider (else it is ``openai``)."""
    model_info: dict[str, Any] | None = None
    """The catalog entry of :attr:`model` (v2 ``Model``), ``None`` for fallback metadata."""
    warnings: tuple[str, ...] = ()
    """``warning`` texts to send: after ``thread/started`` for :meth:`ConfigLayers.resolve`
    (ignored keys, a tier the model does not advertise), before the ``turn/start`` answer for
    :func:`apply_turn_overrides` (a model without catalog metadata, every turn)."""
    raw: dict[str, Any] = field(default_factory=dict[str, Any])
    """The merged TOML table (every layer and the thread's ``config`` map)."""
    collaboration_mode: dict[str, Any] | None = None
    """The ``collaborationMode`` a ``turn/start`` chose (wire JSON, instructions filled in by
    ``normalize_collaboration_mode``); ``None``: default mode without instructions."""

    def sandbox_policy(self) -> dict[str, Any]:
        """The v2 ``SandboxPolicy`` of :attr:`sandbox_mode`."""
        return sandbox_policy_wire(self.sandbox_mode, self.sandbox_workspace_write)


def sandbox_policy_wire(mode: str, workspace: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A sandbox mode as the v2 ``SandboxPolicy`` object 0.163.0 reports."""
    if mode == "danger-full-access":
        return {"type": "dangerFullAccess"}
    if mode == "workspace-write":
        settings = workspace or {}
        return {
            "type": "workspaceWrite",
            "writableRoots": list(settings.get("writable_roots", [])),
            "networkAccess": bool(settings.get("network_access", False)),
            "excludeTmpdirEnvVar": bool(settings.get("exclude_tmpdir_env_var", False)),
            "excludeSlashTmp": bool(settings.get("exclude_slash_tmp", False)),
        }
    return {"type": "readOnly", "networkAccess": False}


def _service_tier(
    configured: str | None, model: str, info: dict[str, Any] | None
) -> tuple[str | None, str | None]:
    """The tier a request carries, and the warning when the model does not advertise it."""
    if configured is None:
        return None, None
    tier = _PRIORITY if configured == _FAST else configured
    if tier == _FLEX:
        return tier, None
    tiers = {t["id"] for t in (info or {}).get("serviceTiers", [])}
    if tier in tiers:
        return tier, None
    return None, (
        f"Configured service tier `{tier}` is not advertised as supported for model `{model}` "
        "and will be omitted from requests."
    )


def _model_warnings(model: str, info: dict[str, Any] | None, explicit: bool) -> tuple[str, ...]:
    return (fallback_model_warning(model),) if explicit and info is None else ()


def apply_turn_overrides(
    config: EffectiveConfig,
    *,
    model: str | None = None,
    effort: str | None = None,
    summary: str | None = None,
    service_tier: str | None = None,
    approval_policy: Any = None,
    sandbox_mode: str | None = None,
    cwd: str | None = None,
    personality: str | None = None,
    collaboration_mode: dict[str, Any] | None = None,
) -> EffectiveConfig:
    """``config`` with ``turn/start``'s overrides (sticky: the result is the thread's config for
    later turns). ``warnings`` then holds what this turn reports: the fallback-metadata warning
    of a model outside the catalog, on every turn (0.163.0 sends it before the turn/start
    answer)."""
    changes: dict[str, Any] = {}
    new_model = model or config.model
    if model:
        changes["model"] = model
        changes["model_from_config"] = True
    info = catalog_model(new_model)
    changes["model_info"] = info
    if effort is not None:
        changes["model_reasoning_effort"] = effort
    if summary is not None:
        changes["model_reasoning_summary"] = summary
    configured_tier = service_tier if service_tier is not None else config.raw.get("service_tier")
    tier, tier_warning = _service_tier(
        configured_tier if isinstance(configured_tier, str) else None, new_model, info
    )
    changes["service_tier"] = tier
    if approval_policy is not None:
        changes["approval_policy"] = approval_policy
    if sandbox_mode is not None:
        changes["sandbox_mode"] = sandbox_mode
        changes["active_permission_profile"] = None
    if cwd is not None:
        changes["cwd"] = cwd
    if personality is not None:
        changes["personality"] = personality
    if collaboration_mode is not None:
        changes["collaboration_mode"] = collaboration_mode
    del tier_warning  # 0.163.0 warns about the tier at thread start only
    changes["warnings"] = _model_warnings(
        new_model, info, model is not None or config.model_from_config
    )
    return dataclasses.replace(config, **changes)


# ------------------------------------------------------------------ the layers


def _unknown_summary(found: list[tuple[ConfigLayer, tuple[str, ...]]]) -> str | None:
    if not found:
        return None
    count = len(found)
    noun = "setting" if count == 1 else "settings"
    lines = [
        f"Codex is ignoring {count} unrecognized configuration {noun}. Check for typos or "
        "deprecated settings."
    ]
    lines.extend(f"  {layer.label()}: `{'.'.join(path)}` is ignored." for layer, path in found)
    return "\n".join(lines)


def _schema_error(layer: ConfigLayer, error: SchemaError) -> ConfigError:
    plain = f"{error.message}\nin `{error.dotted}`\n"
    where = layer.position(error.where) if layer.kind != "sessionFlags" else None
    if where is None:
        return ConfigError.loading(plain, "schema", plain=plain)
    start, end = where
    return ConfigError.loading(
        f"{layer.file}:{start[0]}:{start[1]}: {error.message}",
        "schema",
        plain=plain,
        file=layer.file,
        start=start,
        end=end,
    )


class ConfigLayers:
    """The configuration of one ``CODEX_HOME`` (see the module docstring)."""

    def __init__(
        self,
        codex_home: Path,
        cli_overrides: Sequence[str] = (),
        *,
        system_config: Path = DEFAULT_SYSTEM_CONFIG,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.codex_home = codex_home
        self.user_path = codex_home / CONFIG_FILE
        self.system_path = system_config
        self.cli_overrides = tuple(cli_overrides)
        self._environ = environ
        self._cache: dict[Path, tuple[tuple[int, int, int] | None, ConfigLayer]] = {}
        cli: dict[str, Any] = {}
        self.cli_error: str | None = None
        for override in self.cli_overrides:
            try:
                key, value = parse_cli_override(override)
            except ValueError as exc:
                self.cli_error = f"error parsing -c overrides: {exc}"
                break
            _set_dotted(cli, key, value)
        self._cli = cli

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    # -- layers

    def _file_layer(self, kind: LayerKind, path: Path) -> ConfigLayer:
        try:
            stat = path.stat()
            stamp: tuple[int, int, int] | None = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except OSError:
            stamp = None
        cached = self._cache.get(path)
        if cached is not None and cached[0] == stamp:
            # a missing file too (``None``): read again once it is there, never per call (each
            # read's layer, made by a request, kept the arenas of a load resident)
            return cached[1]
        layer = read_layer(kind, path)
        self._cache[path] = (stamp, layer)
        return layer

    def system(self) -> ConfigLayer:
        return self._file_layer("system", self.system_path)

    def user(self) -> ConfigLayer:
        return self._file_layer("user", self.user_path)

    def session(self, thread_config: Mapping[str, Any] | None = None) -> ConfigLayer:
        """The ``-c`` overrides, with a thread's ``config`` map over them."""
        config = dict(self._cli)
        if thread_config:
            top: dict[str, Any] = {}
            for key, value in thread_config.items():
                if value is not None:
                    _set_dotted(top, key, _json_to_toml(value))
            config = merge_tables(config, top)
        return ConfigLayer("sessionFlags", None, config)

    def layers(self, thread_config: Mapping[str, Any] | None = None) -> list[ConfigLayer]:
        """Every layer, highest precedence first (``config/read``'s order); the session layer
        only when it sets something."""
        session = self.session(thread_config)
        found = [session] if session.config else []
        return [*found, self.user(), self.system()]

    # -- the merged table

    def _checked(
        self, thread_config: Mapping[str, Any] | None, *, files: bool = True
    ) -> dict[str, Any]:
        """The merged table, or the first error: a file that cannot be read, a value of a file
        refused (with its position), then a value of the merged table refused (``-c`` and the
        thread's map are only checked merged, as Codex does), then the settings Codex removed.
        ``files=False``: the defaults and the ``-c`` overrides only."""
        file_layers = (self.system(), self.user()) if files else ()
        for layer in file_layers:
            if layer.error is not None:
                raise layer.error
        for layer in file_layers:
            try:
                validate(layer.config)
            except SchemaError as exc:
                raise _schema_error(layer, exc) from None
        merged: dict[str, Any] = {}
        for layer in (*file_layers, self.session(thread_config)):
            merged = merge_tables(merged, layer.config)
        try:
            validate(merged)
        except SchemaError as exc:
            raise _schema_error(self.session(), exc) from None
        profile = merged.get("profile")
        if isinstance(profile, str):
            raise ConfigError.loading(
                f"legacy `profile = {_quote(profile)}` config is no longer supported; use "
                f"`--profile {profile}` with `{profile}.config.toml` instead",
                "semantic",
            )
        if merged.get("approval_policy") == "untrusted":
            raise ConfigError.loading(_UNTRUSTED, "semantic")
        return merged

    def providers(self, merged: Mapping[str, Any]) -> dict[str, ProviderInfo]:
        base_url = merged.get("openai_base_url")
        providers = built_in_providers(base_url if isinstance(base_url, str) else None)
        tables = merged.get("model_providers")
        if isinstance(tables, dict):
            for provider_id, table in cast("dict[str, Any]", tables).items():
                if not isinstance(table, dict):
                    continue
                settings = cast("dict[str, Any]", table)
                if provider_id == "amazon-bedrock":
                    bedrock = providers[provider_id]
                    providers[provider_id] = dataclasses.replace(
                        bedrock,
                        base_url=str(settings.get("base_url", bedrock.base_url)),
                        http_headers={
                            str(k): str(v)
                            for k, v in cast(
                                "dict[str, Any]", settings.get("http_headers") or {}
                            ).items()
                        },
                    )
                else:
                    providers[provider_id] = provider_from_table(provider_id, settings)
        return providers

    def knows_provider(
        self, provider_id: str, thread_config: Mapping[str, Any] | None = None
    ) -> bool:
        """Whether the built-ins or the config (with a thread's map) define ``provider_id``
        (``False`` when the config cannot be read)."""
        try:
            return provider_id in self.providers(self._checked(thread_config))
        except ConfigError:
            return False

    def resolve(self, overrides: ThreadConfigOverrides | None = None) -> EffectiveConfig:
        """A thread's effective config; raises :class:`ConfigError` as ``thread/start`` would."""
        params = overrides or ThreadConfigOverrides()
        merged = self._checked(params.config)
        provider_id = params.model_provider or merged.get("model_provider") or OPENAI_PROVIDER_ID
        provider = self.providers(merged).get(provider_id)
        if provider is None:
            raise ConfigError.loading(f"Model provider `{provider_id}` not found", "semantic")
        model = params.model or merged.get("model") or DEFAULT_MODEL
        model_from_config = bool(params.model or merged.get("model"))
        info = catalog_model(model)
        configured_tier = params.service_tier or merged.get("service_tier")
        tier, tier_warning = _service_tier(configured_tier, model, info)
        # a model without catalog metadata is warned about at each turn/start, not here
        warnings = [w for w in (self.unknown_key_summary(params.config), tier_warning) if w]
        sandbox, profile = self._sandbox(params, merged)
        approval = (
            params.approval_policy
            if params.approval_policy is not None
            else approval_policy_wire(merged.get("approval_policy", "on-request"))
        )
        workspace = merged.get("sandbox_workspace_write")
        return EffectiveConfig(
            model=model,
            model_provider_id=provider_id,
            provider=provider,
            model_reasoning_effort=merged.get("model_reasoning_effort"),
            model_reasoning_summary=merged.get("model_reasoning_summary"),
            model_verbosity=merged.get("model_verbosity"),
            service_tier=tier,
            developer_instructions=params.developer_instructions
            or merged.get("developer_instructions"),
            base_instructions=params.base_instructions or self._instructions(merged),
            model_context_window=merged.get("model_context_window"),
            model_auto_compact_token_limit=merged.get("model_auto_compact_token_limit"),
            compact_prompt=merged.get("compact_prompt"),
            tool_output_token_limit=merged.get("tool_output_token_limit"),
            approval_policy=approval,
            approvals_reviewer=params.approvals_reviewer
            or merged.get("approvals_reviewer", "user"),
            sandbox_mode=sandbox,
            sandbox_workspace_write=cast("dict[str, Any]", workspace)
            if isinstance(workspace, dict)
            else None,
            active_permission_profile=profile,
            include_permissions_instructions=bool(
                merged.get("include_permissions_instructions", True)
            ),
            include_environment_context=bool(merged.get("include_environment_context", True)),
            project_doc_max_bytes=int(merged.get("project_doc_max_bytes", 32768)),
            personality=params.personality or merged.get("personality"),
            cwd=params.cwd,
            model_from_config=model_from_config,
            provider_from_config=bool(params.model_provider or merged.get("model_provider")),
            model_info=info,
            warnings=tuple(warnings),
            raw=merged,
        )

    @staticmethod
    def _sandbox(
        params: ThreadConfigOverrides, merged: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any] | None]:
        if params.sandbox is not None:
            return params.sandbox, None
        mode = merged.get("sandbox_mode")
        if isinstance(mode, str):
            return mode, None
        profile_id = merged.get("default_permissions")
        if isinstance(profile_id, str):
            return _PROFILE_SANDBOX.get(profile_id, "read-only"), {
                "id": profile_id,
                "extends": None,
            }
        return "read-only", {"id": _DEFAULT_PROFILE, "extends": None}

    def _instructions(self, merged: Mapping[str, Any]) -> str | None:
        path = merged.get("model_instructions_file")
        if isinstance(path, str):
            file = Path(path).expanduser()
            if not file.is_absolute():
                file = self.codex_home / file
            try:
                return file.read_text("utf-8")
            except OSError:
                return None
        instructions = merged.get("instructions")
        return instructions if isinstance(instructions, str) else None

    # -- what the server reports

    def merged(self, thread_config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The merged table, checked as :meth:`resolve` checks it (``config/read``)."""
        merged = self._checked(thread_config)
        provider_id = merged.get("model_provider") or OPENAI_PROVIDER_ID
        if provider_id not in self.providers(merged):
            raise ConfigError.loading(f"Model provider `{provider_id}` not found", "semantic")
        return merged

    def load_error(self) -> ConfigError | None:
        """Why the config without thread overrides cannot be used, or ``None``."""
        try:
            self.merged()
        except ConfigError as exc:
            return exc
        return None

    def unknown_key_summary(self, thread_config: Mapping[str, Any] | None = None) -> str | None:
        """Codex's warning about the keys it ignores (highest layer first), or ``None``."""
        found: list[tuple[ConfigLayer, tuple[str, ...]]] = []
        for layer in self.layers(thread_config):
            found.extend(
                (layer, tuple(str(p) for p in path)) for path in unknown_keys(layer.config)
            )
        return _unknown_summary(found)

    def startup_warnings(self) -> list[dict[str, Any]]:
        """``configWarning`` params to send right after ``initialize``."""
        error = self.load_error()
        if error is not None:
            return [error.warning()]
        summary = self.unknown_key_summary()
        return [] if summary is None else [{"summary": summary, "details": None}]

    def startup_error(self, *, strict: bool = False) -> str | None:
        """Why ``serve`` must exit 1 before reading stdin (the real server's message), or
        ``None``: a bad ``-c``, ``approval_policy = "untrusted"`` in a file, the defaults with
        the ``-c`` overrides refused, or (``strict``) an unknown key."""
        if self.cli_error is not None:
            return self.cli_error
        for layer in (self.system(), self.user()):
            if layer.config.get("approval_policy") == "untrusted":
                return _UNTRUSTED
        # Codex falls back to the defaults under the -c overrides when the files' config fails,
        # and cannot start when those fail too. Without -c that fallback is the defaults alone,
        # which always load: the files are then checked when first needed (their warning is
        # sent after initialize), not before the server answers anything.
        if self._cli:
            try:
                self.merged()
            except ConfigError:
                try:
                    merged = self._checked(None, files=False)
                except ConfigError as exc:
                    return exc.plain
                provider_id = merged.get("model_provider") or OPENAI_PROVIDER_ID
                if provider_id not in self.providers(merged):
                    return f"Model provider `{provider_id}` not found"
        session = self.session()
        if strict:
            for layer in (self.user(), self.system()):
                found = [(layer.position(p, key=True), p) for p in unknown_keys(layer.config)]
                if found:  # the first in the file, as serde meets it
                    where, path = min(found, key=lambda f: f[0][0] if f[0] else (0, 0))
                    position = "" if where is None else f"{where[0][0]}:{where[0][1]}:"
                    key = ".".join(str(p) for p in path)
                    return f"{layer.file}:{position} unknown configuration field `{key}`"
            for path in unknown_keys(session.config):
                key = ".".join(str(p) for p in path)
                return f"unknown configuration field `{key}` in -c/--config override"
        return None

    # -- which source serves

    def configured_provider(self) -> bool:
        """Whether the model source should serve turns (see the module docstring)."""
        for layer in (self.system(), self.user(), self.session()):
            if "model_provider" in layer.config:
                return True
        auth = read_auth(self.codex_home)
        if auth is not None and (auth.get("OPENAI_API_KEY") or auth.get("tokens")):
            return True
        return bool(self.environ.get("OPENAI_API_KEY", "").strip())


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def load_layers(
    codex_home: str | os.PathLike[str],
    cli_overrides: Sequence[str] = (),
    *,
    system_config: str | os.PathLike[str] = DEFAULT_SYSTEM_CONFIG,
    environ: Mapping[str, str] | None = None,
) -> ConfigLayers:
    """The configuration of ``codex_home`` (never raises: see :class:`ConfigLayers`)."""
    return ConfigLayers(
        Path(codex_home), cli_overrides, system_config=Path(system_config), environ=environ
    )
