"""``config/read``, ``config/value/write`` and ``config/batchWrite`` as Codex 0.163.0 answers them.

Role: the answers as JSON objects (the v2 wire shapes) and the errors the real server gives:

* :func:`read_config`: the effective config with every known key (``_schema.render_config``),
  ``origins`` (the layer that set each leaf, with its ``sha256:`` version) and, when asked, the
  layers themselves, highest precedence first;
* :func:`write_config`: edits of the user's ``config.toml`` applied all or nothing: each edit
  is merged into the user layer's table (``replace``, or ``upsert`` merging tables; ``null``
  removes the key), the result must pass the schema alone and under the other layers, then the
  file is rewritten by ``_edit`` (comments and order kept) and the answer says whether another
  layer hides the value (``okOverridden``). Refusals raise :class:`ConfigWriteError` with the
  real ``config_write_error_code``.

Boundary: the user's config file and the layers; no JSON-RPC (the server maps the errors).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from codex_app_bridge.config._document import Document, parse_document
from codex_app_bridge.config._edit import clear_path, item_from_value, set_path
from codex_app_bridge.config._encode import layer_version, to_json
from codex_app_bridge.config._errors import ConfigError
from codex_app_bridge.config._layers import ConfigLayer, ConfigLayers, merge_tables
from codex_app_bridge.config._schema import SchemaError, render_config, validate

__all__ = ["ConfigEdit", "ConfigWriteError", "read_config", "write_config"]

_MERGE_STRATEGIES: Final = ("replace", "upsert")


class ConfigWriteError(Exception):
    """A refused write: ``-32600`` with ``data.config_write_error_code`` = :attr:`code`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ConfigEdit:
    key_path: str
    value: Any
    """A JSON value (``None``: remove the key)."""
    merge_strategy: str = "replace"


def _leaves(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every scalar under ``value`` (array members by index), as origins key them."""
    if isinstance(value, dict) and value:
        table = cast("dict[str, Any]", value)
        return [leaf for key, item in table.items() for leaf in _leaves(item, (*prefix, key))]
    if isinstance(value, list) and value:
        items = cast("list[Any]", value)
        return [leaf for i, item in enumerate(items) for leaf in _leaves(item, (*prefix, str(i)))]
    return [prefix]


def _metadata(layer: ConfigLayer) -> dict[str, Any]:
    return {"name": layer.name(), "version": layer.version}


def read_config(layers: ConfigLayers, *, include_layers: bool = False) -> dict[str, Any]:
    """The ``config/read`` result; raises :class:`ConfigError` (``-32603`` on the wire)."""
    stack = layers.layers()
    for layer in stack:
        if layer.error is not None:
            raise layer.error
    merged: dict[str, Any] = {}
    for layer in reversed(stack):
        merged = merge_tables(merged, layer.config)
    try:
        validate(merged)
    except SchemaError as exc:
        plain = f"{exc.message}\nin `{exc.dotted}`\n"
        raise ConfigError.loading(plain, "schema", plain=plain) from None
    layers.merged()  # the semantic checks (provider, legacy profile)
    origins: dict[str, Any] = {}
    for layer in reversed(stack):
        for path in _leaves(layer.config):
            if path:
                origins[".".join(path)] = _metadata(layer)
    result: dict[str, Any] = {"config": render_config(merged), "origins": origins}
    if include_layers:
        result["layers"] = [
            {**_metadata(layer), "config": to_json(layer.config)} for layer in stack
        ]
    return result


# ------------------------------------------------------------------ writes


def _key_path(text: str) -> list[str]:
    """``keyPath`` split on dots, ``"quoted"`` segments kept whole (``\\`` escapes in them)."""

    def invalid(message: str) -> ConfigWriteError:
        return ConfigWriteError("configValidationError", message)

    if not text.strip():
        raise invalid("keyPath must not be empty")
    segments: list[str] = []
    segment: list[str] = []
    quoted = False
    chars = iter(text)
    for char in chars:
        if char == '"' and not segment and not quoted:
            quoted = True
        elif char == '"' and quoted:
            quoted = False
        elif char == "\\" and quoted:
            escaped = next(chars, None)
            if escaped is None:
                raise invalid("unterminated escape in keyPath")
            segment.append(escaped)
        elif char == "." and not quoted:
            if not segment:
                raise invalid("keyPath segments must not be empty")
            segments.append("".join(segment))
            segment = []
        elif char == '"':
            raise invalid("invalid quoted keyPath segment")
        else:
            segment.append(char)
    if quoted:
        raise invalid("unterminated quoted keyPath segment")
    if not segment:
        raise invalid("keyPath segments must not be empty")
    segments.append("".join(segment))
    return segments


_LEGACY_PROFILE: Final = (
    "`profile` is a legacy config selector and can no longer be written; use "
    "`--profile <name>` with `<name>.config.toml` instead"
)
_LEGACY_PROFILES: Final = (
    "`profiles` contains legacy config profile tables and can no longer be written; use "
    "`--profile <name>` with `<name>.config.toml` instead"
)


class _Missing:
    pass


_MISSING: Final = _Missing()


def _value_at(table: Any, segments: Sequence[str]) -> Any:
    current = table
    for segment in segments:
        if isinstance(current, dict):
            table_: dict[str, Any] = cast("dict[str, Any]", current)
            if segment not in table_:
                return _MISSING
            current = table_[segment]
        elif isinstance(current, list):
            items = cast("list[Any]", current)
            if not segment.isdigit() or int(segment) >= len(items):
                return _MISSING
            current = items[int(segment)]
        else:
            return _MISSING
    return current


def _toml_value(value: Any) -> Any:
    if value is None:
        raise ConfigWriteError(
            "configValidationError",
            "invalid value: invalid type: null, expected any valid TOML value",
        )
    if isinstance(value, dict):
        return {str(k): _toml_value(v) for k, v in cast("dict[str, Any]", value).items()}
    if isinstance(value, list):
        return [_toml_value(member) for member in cast("list[Any]", value)]
    return value


def _merge(root: dict[str, Any], segments: Sequence[str], value: Any, strategy: str) -> None:
    if value is None:
        current: Any = root
        for segment in segments[:-1]:
            if not isinstance(current, dict) or segment not in current:
                return
            current = cast("dict[str, Any]", current)[segment]
        if isinstance(current, dict):
            cast("dict[str, Any]", current).pop(segments[-1], None)
        return
    current = root
    parents = segments[:-1]
    for index, segment in enumerate(parents):
        child = current.get(segment)
        if not isinstance(child, dict):
            if child is not None and index == len(parents) - 1:
                raise ConfigWriteError(
                    "configValidationError", "cannot set value on non-table parent"
                )
            child = {}
            current[segment] = child
        current = cast("dict[str, Any]", child)
    last = segments[-1]
    existing = current.get(last)
    if strategy == "upsert" and isinstance(existing, dict) and isinstance(value, dict):
        current[last] = merge_tables(
            cast("dict[str, Any]", existing), cast("dict[str, Any]", value)
        )
    else:
        current[last] = value


def _invalid(exc: SchemaError) -> ConfigWriteError:
    return ConfigWriteError(
        "configValidationError", f"Invalid configuration: {exc.message}\nin `{exc.dotted}`\n"
    )


def _same_file(a: Path, b: Path) -> bool:
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _override(
    stack: list[ConfigLayer], user: dict[str, Any], effective: dict[str, Any], path: list[str]
) -> dict[str, Any] | None:
    user_value = _value_at(user, path)
    effective_value = _value_at(effective, path)
    if user_value is not _MISSING and user_value == effective_value:
        return None
    if user_value is _MISSING and effective_value is _MISSING:
        return None
    for layer in stack:
        if _value_at(layer.config, path) is not _MISSING:
            if layer.kind == "user":
                return None
            if layer.kind == "sessionFlags":
                message = "Overridden by session flags"
            else:
                message = f"Overridden by managed config (system): {layer.file}"
            return {
                "message": message,
                "overridingLayer": _metadata(layer),
                "effectiveValue": None if effective_value is _MISSING else to_json(effective_value),
            }
    return None


def write_config(
    layers: ConfigLayers,
    edits: Sequence[ConfigEdit],
    *,
    file_path: str | None = None,
    expected_version: str | None = None,
) -> dict[str, Any]:
    """Apply ``edits`` to the user config (all or nothing); the ``ConfigWriteResponse``."""
    user_path = layers.user_path
    if file_path is not None and not _same_file(Path(file_path), user_path):
        raise ConfigWriteError("configLayerReadonly", "Only writes to the user config are allowed")
    user_layer = layers.user()
    for layer in (layers.system(), user_layer):
        if layer.error is not None:
            raise ConfigError(f"failed to load configuration: {layer.error.detail}")
    if not user_layer.exists:
        _write_atomically(user_path, "")
        user_layer = layers.user()
    if expected_version is not None and expected_version != user_layer.version:
        raise ConfigWriteError(
            "configVersionConflict",
            "Configuration was modified since last read. Fetch latest version and retry.",
        )
    user_config = cast("dict[str, Any]", to_toml_copy(user_layer.config))
    if user_layer.text and user_layer.document is None:
        # tomllib reads the file but our parser does not: refuse rather than lose its layout
        raise ConfigError(f"failed to load configuration: cannot edit {user_path} in place")
    document = parse_document(user_layer.text) if user_layer.text else Document()  # a fresh copy
    paths: list[list[str]] = []
    changed = False
    for edit in edits:
        if edit.merge_strategy not in _MERGE_STRATEGIES:
            raise ConfigWriteError(
                "configValidationError", f"unknown merge strategy `{edit.merge_strategy}`"
            )
        segments = _key_path(edit.key_path)
        if edit.value is not None and segments == ["profile"]:
            raise ConfigWriteError("configValidationError", _LEGACY_PROFILE)
        if edit.value is not None and segments[0] == "profiles":
            raise ConfigWriteError("configValidationError", _LEGACY_PROFILES)
        value = None if edit.value is None else _toml_value(edit.value)
        before = _value_at(user_config, segments)
        _merge(user_config, segments, value, edit.merge_strategy)
        after = _value_at(user_config, segments)
        if before != after:
            if isinstance(after, _Missing):
                clear_path(document, segments)
            else:
                set_path(document, segments, item_from_value(after))
            changed = True
        paths.append(segments)
    try:
        validate(user_config)
    except SchemaError as exc:
        raise _invalid(exc) from None
    stack = layers.layers()
    effective: dict[str, Any] = {}
    for layer in reversed(stack):
        effective = merge_tables(effective, user_config if layer.kind == "user" else layer.config)
    try:
        validate(effective)
    except SchemaError as exc:
        raise _invalid(exc) from None
    if changed:
        _write_atomically(user_path, document.render())
    overridden = None
    for path in paths:
        overridden = _override(stack, user_config, effective, path)
        if overridden is not None:
            break
    return {
        "status": "okOverridden" if overridden else "ok",
        "version": layer_version(user_config),
        "filePath": str(user_path),
        "overriddenMetadata": overridden,
    }


def to_toml_copy(value: Any) -> Any:
    """A deep copy of a TOML table (so edits never touch a cached layer)."""
    if isinstance(value, dict):
        return {k: to_toml_copy(v) for k, v in cast("dict[str, Any]", value).items()}
    if isinstance(value, list):
        return [to_toml_copy(v) for v in cast("list[Any]", value)]
    return value
