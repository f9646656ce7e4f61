"""Layers and the effective config: precedence, providers, start-up checks, turn overrides."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codex_app_bridge.config import (
    ConfigError,
    ConfigLayers,
    ThreadConfigOverrides,
    apply_turn_overrides,
    load_layers,
    write_api_key,
)

FALLBACK = (
    "Model metadata for `{}` not found. Defaulting to fallback metadata; this can degrade "
    "performance and cause issues."
)
MOCK = """model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:9/v1"
"""


def layers(
    tmp_path: Path,
    user: str | None = None,
    system: str | None = None,
    cli: tuple[str, ...] = (),
    environ: dict[str, str] | None = None,
) -> ConfigLayers:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if user is not None:
        (home / "config.toml").write_text(user, encoding="utf-8")
    system_path = tmp_path / "etc" / "config.toml"
    if system is not None:
        system_path.parent.mkdir(exist_ok=True)
        system_path.write_text(system, encoding="utf-8")
    return load_layers(home, cli, system_config=system_path, environ=environ or {})


@pytest.mark.parametrize(
    ("system", "user", "cli", "overrides", "expected"),
    [
        (None, None, (), None, "gpt-6.1-sol"),
        ('model = "sys"', None, (), None, "sys"),
        ('model = "sys"', 'model = "user"', (), None, "user"),
        (None, 'model = "user"', ('model="cli"',), None, "cli"),
        (None, None, ('model="cli"',), ThreadConfigOverrides(config={"model": "map"}), "map"),
        (
            None,
            None,
            ('model="cli"',),
            ThreadConfigOverrides(config={"model": "map"}, model="param"),
            "param",
        ),
    ],
)
def test_layers_take_precedence_system_user_cli_thread_map_then_params(
    tmp_path: Path,
    system: str | None,
    user: str | None,
    cli: tuple[str, ...],
    overrides: ThreadConfigOverrides | None,
    expected: str,
) -> None:
    config = layers(tmp_path, user, system, cli).resolve(overrides)
    assert config.model == expected
    assert config.model_from_config is (expected != "gpt-6.1-sol")


def test_tables_merge_key_by_key_across_layers_and_dotted_thread_keys(tmp_path: Path) -> None:
    config = layers(
        tmp_path,
        MOCK + "request_max_retries = 7\n",
        cli=("model_providers.mock.stream_max_retries=2",),
    ).resolve(ThreadConfigOverrides(config={"model_providers.mock.stream_idle_timeout_ms": 1500}))
    provider = config.provider
    assert (provider.id, provider.name, provider.base_url) == (
        "mock",
        "mock",
        "http://127.0.0.1:9/v1",
    )
    assert (provider.request_max_retries, provider.stream_max_retries) == (7, 2)
    assert provider.stream_idle_timeout_ms == 1500
    assert config.provider_from_config


def test_a_cli_value_that_is_not_toml_is_a_string_and_one_without_equals_is_refused(
    tmp_path: Path,
) -> None:
    assert layers(tmp_path, cli=("model=gpt x",)).resolve().model == "gpt x"
    assert layers(tmp_path, cli=("novalue",)).startup_error() == (
        "error parsing -c overrides: Invalid override (missing '='): novalue"
    )


@pytest.mark.parametrize(
    ("user", "cli", "strict", "expected"),
    [
        (None, ("model=5",), False, "invalid type: integer `5`, expected a string\nin `model`\n"),
        (
            None,
            ("sandbox_mode=1",),
            False,
            "invalid type: unit variant, expected string only\nin `sandbox_mode`\n",
        ),
        (None, ("model_provider=nope",), False, "Model provider `nope` not found"),
        (
            'approval_policy = "untrusted"\n',
            (),
            False,
            'approval_policy = "untrusted" is no longer supported; remove this setting',
        ),
        ("foo = 1\n", (), False, None),
        ("model = 5\n", (), False, None),  # a broken file is reported, never fatal
        ("x = 1\nfoo = 1\n", (), True, "<home>/config.toml:1:1: unknown configuration field `x`"),
        (
            '[model_providers.m]\nname="x"\nbase_url="u"\nfoo=1\n',
            (),
            True,
            "<home>/config.toml:4:1: unknown configuration field `model_providers.m.foo`",
        ),
        (None, ("bar=1",), True, "unknown configuration field `bar` in -c/--config override"),
        # -c naming a provider of the file: refused only when the file fails (the fallback,
        # the defaults under -c, does not know it)
        ('[model_providers.m]\nname = "x"\nbase_url = "u"\n', ("model_provider=m",), False, None),
        (
            'model = 5\n[model_providers.m]\nname = "x"\nbase_url = "u"\n',
            ("model_provider=m",),
            False,
            "Model provider `m` not found",
        ),
        # without -c the fallback is the defaults alone, which always load: not fatal
        ('model_provider = "nope"\nmodel = 5\n', (), False, None),
    ],
)
def test_startup_errors_are_the_binarys(
    tmp_path: Path, user: str | None, cli: tuple[str, ...], strict: bool, expected: str | None
) -> None:
    found = layers(tmp_path, user, cli=cli).startup_error(strict=strict)
    home = str(tmp_path / "home")
    assert (None if found is None else found.replace(home, "<home>")) == expected


def test_the_defaults_alone_always_load(tmp_path: Path) -> None:
    # what ``startup_error`` relies on to check no file before the server starts without -c
    assert layers(tmp_path).load_error() is None
    assert layers(tmp_path, environ={"OPENAI_API_KEY": "k"}).load_error() is None


def test_a_thread_config_map_error_names_the_key_without_a_position(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        layers(tmp_path).resolve(ThreadConfigOverrides(config={"model_reasoning_summary": "zz"}))
    assert caught.value.message == (
        "failed to load configuration: unknown variant `zz`, expected one of `auto`, `concise`, "
        "`detailed`, `none`\nin `model_reasoning_summary`\n"
    )
    with pytest.raises(ConfigError) as caught:
        layers(tmp_path).resolve(ThreadConfigOverrides(model_provider="nope2"))
    assert caught.value.message == "failed to load configuration: Model provider `nope2` not found"


def test_an_unknown_provider_in_the_file_yields_to_an_explicit_one(tmp_path: Path) -> None:
    config = layers(tmp_path, 'model_provider = "nope"\n')
    with pytest.raises(ConfigError):
        config.resolve()
    assert config.resolve(ThreadConfigOverrides(model_provider="openai")).provider.name == "OpenAI"


def test_files_are_read_again_when_they_change(tmp_path: Path) -> None:
    config = layers(tmp_path, 'model = "one"\n')
    assert config.resolve().model == "one"
    path = tmp_path / "home" / "config.toml"
    path.write_text('model = "two, longer"\n', encoding="utf-8")
    assert config.resolve().model == "two, longer"
    path.unlink()
    assert config.resolve().model == "gpt-6.1-sol"


@pytest.mark.parametrize(
    ("user", "cli", "auth", "env", "expected"),
    [
        (None, (), False, {}, False),
        ('model = "x"\n', (), False, {}, False),
        (MOCK, (), False, {}, True),
        (None, ('model_provider="openai"',), False, {}, True),
        (None, (), True, {}, True),
        (None, (), False, {"OPENAI_API_KEY": "sk-env"}, True),
        (None, (), False, {"OPENAI_API_KEY": "  "}, False),
    ],
)
def test_the_model_source_serves_when_a_provider_is_configured_or_openai_has_a_key(
    tmp_path: Path,
    user: str | None,
    cli: tuple[str, ...],
    auth: bool,
    env: dict[str, str],
    expected: bool,
) -> None:
    config = layers(tmp_path, user, cli=cli, environ=env)
    if auth:
        write_api_key(config.codex_home, "sk-login")
    assert config.configured_provider() is expected


def test_retries_have_codex_defaults_and_caps_and_the_url_carries_the_query(
    tmp_path: Path,
) -> None:
    config = layers(
        tmp_path,
        MOCK + 'request_max_retries = 1000\nquery_params = { "api-version" = "2026-01-01" }\n',
    ).resolve()
    provider = config.provider
    assert provider.request_max_retries == 100
    assert provider.stream_max_retries == 5
    assert provider.stream_idle_timeout_ms == 300_000
    assert provider.responses_url() == "http://127.0.0.1:9/v1/responses?api-version=2026-01-01"


def test_authorization_comes_from_env_key_then_bearer_then_the_login(tmp_path: Path) -> None:
    text = MOCK + (
        'env_key = "MOCK_KEY"\nenv_key_instructions = "Set it."\n'
        'experimental_bearer_token = "tok"\nrequires_openai_auth = true\n'
        'http_headers = { "x-a" = "1" }\nenv_http_headers = { "x-b" = "B", "x-c" = "C" }\n'
    )
    provider = layers(tmp_path, text).resolve().provider
    home = tmp_path / "home"
    write_api_key(home, "sk-login")
    env = {"MOCK_KEY": "sk-env", "B": "bee", "C": " "}
    assert provider.auth_headers(home, env) == {
        "x-a": "1",
        "x-b": "bee",
        "Authorization": "Bearer sk-env",
    }
    with pytest.raises(ConfigError) as caught:
        provider.auth_headers(home, {"MOCK_KEY": ""})
    assert caught.value.message == "Missing environment variable: `MOCK_KEY`. Set it."
    bearer = layers(tmp_path, MOCK + 'experimental_bearer_token = "tok"\n').resolve().provider
    assert bearer.auth_headers(home, {})["Authorization"] == "Bearer tok"
    login = layers(tmp_path, MOCK + "requires_openai_auth = true\n").resolve().provider
    assert login.auth_headers(home, {})["Authorization"] == "Bearer sk-login"
    plain = layers(tmp_path, MOCK).resolve().provider
    assert "Authorization" not in plain.auth_headers(home, {})


def test_the_openai_built_in_sends_its_version_header_and_moves_with_openai_base_url(
    tmp_path: Path,
) -> None:
    provider = layers(tmp_path, 'openai_base_url = "http://127.0.0.1:9/v1"\n').resolve().provider
    assert provider.responses_url() == "http://127.0.0.1:9/v1/responses"
    headers = provider.auth_headers(tmp_path / "home", {"OPENAI_ORGANIZATION": "org"})
    assert headers == {"version": "0.163.0", "OpenAI-Organization": "org"}


def test_base_instructions_come_from_the_param_then_the_file_then_instructions(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "prose.md").write_text("from the file", encoding="utf-8")
    config = layers(tmp_path, 'instructions = "inline"\nmodel_instructions_file = "prose.md"\n')
    assert config.resolve().base_instructions == "from the file"
    assert layers(tmp_path, 'instructions = "inline"\n').resolve().base_instructions == "inline"
    assert config.resolve(ThreadConfigOverrides(base_instructions="param")).base_instructions == (
        "param"
    )
    assert layers(tmp_path, "").resolve().base_instructions is None


def test_sandbox_and_permission_profile_echo_as_the_binary(tmp_path: Path) -> None:
    default = layers(tmp_path).resolve()
    assert default.sandbox_policy() == {"type": "readOnly", "networkAccess": False}
    assert default.active_permission_profile == {"id": ":read-only", "extends": None}
    chosen = layers(tmp_path).resolve(ThreadConfigOverrides(sandbox="read-only"))
    assert chosen.active_permission_profile is None
    workspace = layers(
        tmp_path,
        'sandbox_mode = "workspace-write"\n[sandbox_workspace_write]\nnetwork_access = true\n'
        'writable_roots = ["/tmp"]\n',
    ).resolve()
    assert workspace.sandbox_policy() == {
        "type": "workspaceWrite",
        "writableRoots": ["/tmp"],
        "networkAccess": True,
        "excludeTmpdirEnvVar": False,
        "excludeSlashTmp": False,
    }


@pytest.mark.parametrize(
    ("model", "tier", "expected", "warned"),
    [
        ("gpt-5.5", "fast", "priority", False),
        ("gpt-5.5", "priority", "priority", False),
        ("gpt-5.5", "flex", "flex", False),
        ("gpt-5.5", "bogus", None, True),
        ("mock-model", "fast", None, True),
    ],
)
def test_a_service_tier_the_model_does_not_advertise_is_dropped_with_a_warning(
    tmp_path: Path, model: str, tier: str, expected: str | None, warned: bool
) -> None:
    config = layers(tmp_path).resolve(ThreadConfigOverrides(model=model, service_tier=tier))
    assert config.service_tier == expected
    normalized = "priority" if tier == "fast" else tier
    assert config.warnings == (
        (
            f"Configured service tier `{normalized}` is not advertised as supported for model "
            f"`{model}` and will be omitted from requests.",
        )
        if warned
        else ()
    )
    # the turns warn of fallback metadata, not of the tier
    assert apply_turn_overrides(config).warnings == (
        (FALLBACK.format(model),) if model == "mock-model" else ()
    )


def test_turn_overrides_stick_and_warn_of_fallback_metadata_on_every_turn(
    tmp_path: Path,
) -> None:
    start = layers(tmp_path, MOCK).resolve()
    assert start.warnings == ()  # the catalog default needs no warning
    first = apply_turn_overrides(start, model="mock-model-2", effort="high", summary="none")
    assert (first.model, first.model_reasoning_effort) == ("mock-model-2", "high")
    assert first.model_reasoning_summary == "none"
    assert first.warnings == (
        "Model metadata for `mock-model-2` not found. Defaulting to fallback metadata; this can "
        "degrade performance and cause issues.",
    )
    second = apply_turn_overrides(first)
    assert (second.model, second.model_reasoning_effort) == ("mock-model-2", "high")
    assert second.warnings == first.warnings
    back = apply_turn_overrides(second, model="gpt-5.5", sandbox_mode="workspace-write")
    assert back.warnings == ()
    assert back.model_info is not None
    assert back.sandbox_policy()["type"] == "workspaceWrite"


def test_a_missing_system_file_is_an_empty_layer_named_by_its_path(tmp_path: Path) -> None:
    config = layers(tmp_path)
    system = config.system()
    assert not system.exists
    assert system.name() == {"type": "system", "file": str(tmp_path / "etc" / "config.toml")}
    assert (
        system.version == "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    )
    assert os.path.basename(str(config.user_path)) == "config.toml"


def test_a_missing_file_is_read_once_until_it_appears(tmp_path: Path) -> None:
    # every thread/start resolves the layers: a missing /etc/codex/config.toml was read again
    # each time, its new layer kept in the cache, so the last one made under a load stayed in
    # the arenas that load filled (issue 23's soak); read again once the file is there
    config = layers(tmp_path)
    first = config.system()
    assert config.system() is first
    config.system_path.parent.mkdir()
    config.system_path.write_text('model = "sys"', encoding="utf-8")
    assert config.system().exists
