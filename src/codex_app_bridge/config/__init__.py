"""``CODEX_HOME/config.toml`` as Codex 0.163.0 reads and writes it.

Role: the configuration layers (system file, user file, ``-c`` overrides, a thread's ``config``
map and params, sticky ``turn/start`` overrides), the provider table (built-ins and
``[model_providers.<id>]``), the bundled model catalog, the ``auth.json`` of an API-key login,
and ``config/read`` / ``config/value/write`` answers whose errors, versions and file edits are the
real server's (comments and key order kept).

Boundary: files under ``CODEX_HOME`` (and ``/etc/codex``) only. It knows nothing of threads,
JSON-RPC or the server, which wires these functions to methods.

    layers = load_layers(codex_home, cli_overrides=("model=\\"o3\\"",))
    layers.startup_warnings()        # configWarning params after initialize
    config = layers.resolve(ThreadConfigOverrides(model="gpt-5.5"))   # raises ConfigError
    config.provider.responses_url(); config.provider.auth_headers(codex_home)
    config = apply_turn_overrides(config, effort="high")             # sticky, per turn
    layers.configured_provider()     # should a real model serve turns?
"""

from __future__ import annotations

from codex_app_bridge.config._auth import delete_auth, read_api_key, read_auth, write_api_key
from codex_app_bridge.config._catalog import (
    DEFAULT_MODEL,
    CatalogPageError,
    catalog,
    catalog_model,
    fallback_model_warning,
    model_page,
)
from codex_app_bridge.config._collaboration import (
    MODE_DISPLAY_NAMES,
    collaboration_mode_kind,
    default_collaboration_mode,
    normalize_collaboration_mode,
)
from codex_app_bridge.config._errors import ConfigError
from codex_app_bridge.config._layers import (
    DEFAULT_SYSTEM_CONFIG,
    ConfigLayer,
    ConfigLayers,
    EffectiveConfig,
    ThreadConfigOverrides,
    apply_turn_overrides,
    load_layers,
    sandbox_policy_wire,
)
from codex_app_bridge.config._providers import ProviderInfo, built_in_providers
from codex_app_bridge.config._service import (
    ConfigEdit,
    ConfigWriteError,
    read_config,
    write_config,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_SYSTEM_CONFIG",
    "MODE_DISPLAY_NAMES",
    "CatalogPageError",
    "ConfigEdit",
    "ConfigError",
    "ConfigLayer",
    "ConfigLayers",
    "ConfigWriteError",
    "EffectiveConfig",
    "ProviderInfo",
    "ThreadConfigOverrides",
    "apply_turn_overrides",
    "built_in_providers",
    "catalog",
    "catalog_model",
    "collaboration_mode_kind",
    "default_collaboration_mode",
    "delete_auth",
    "fallback_model_warning",
    "load_layers",
    "model_page",
    "normalize_collaboration_mode",
    "read_api_key",
    "read_auth",
    "read_config",
    "sandbox_policy_wire",
    "write_api_key",
    "write_config",
]
