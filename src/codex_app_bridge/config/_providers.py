"""Model providers: the built-ins of Codex 0.163.0 merged with ``[model_providers.<id>]``.

Role: :class:`ProviderInfo` is one resolved provider (defaults and caps applied:
``request_max_retries`` 4 and ``stream_max_retries`` 5, both capped at 100, ``stream_idle_timeout_ms``
300000), with the two things a turn needs from it: the POST URL (:meth:`ProviderInfo.responses_url`)
and the request's authorization and provider headers (:meth:`ProviderInfo.auth_headers`), in
Codex's order: ``env_key`` (a missing or blank variable fails the turn with Codex's text), then
``experimental_bearer_token``, then, only for providers that require OpenAI auth, the API key an
``account/login/start`` stored in ``CODEX_HOME/auth.json``.

Boundary: environment and ``auth.json`` reads only; no network.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from codex_app_bridge._version import CODEX_PROTOCOL_VERSION
from codex_app_bridge.config._auth import read_api_key
from codex_app_bridge.config._errors import ConfigError

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "OPENAI_PROVIDER_ID",
    "ProviderInfo",
    "built_in_providers",
    "provider_from_table",
]

OPENAI_PROVIDER_ID: Final = "openai"
DEFAULT_OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_REQUEST_MAX_RETRIES: Final = 4
DEFAULT_STREAM_MAX_RETRIES: Final = 5
MAX_RETRIES: Final = 100
DEFAULT_STREAM_IDLE_TIMEOUT_MS: Final = 300_000
_OPENAI_ENV_KEY: Final = "OPENAI_API_KEY"


@dataclass(frozen=True)
class ProviderInfo:
    """One model provider, resolved (see the module docstring)."""

    id: str
    name: str
    base_url: str
    wire_api: str = "responses"
    env_key: str | None = None
    env_key_instructions: str | None = None
    experimental_bearer_token: str | None = None
    http_headers: dict[str, str] = field(default_factory=dict[str, str])
    env_http_headers: dict[str, str] = field(default_factory=dict[str, str])
    query_params: dict[str, str] = field(default_factory=dict[str, str])
    request_max_retries: int = DEFAULT_REQUEST_MAX_RETRIES
    stream_max_retries: int = DEFAULT_STREAM_MAX_RETRIES
    stream_idle_timeout_ms: int = DEFAULT_STREAM_IDLE_TIMEOUT_MS
    requires_openai_auth: bool = False
    supports_websockets: bool = False
    built_in: bool = False

    def responses_url(self) -> str:
        """``base_url`` + ``/responses`` + the query parameters."""
        url = self.base_url.rstrip("/") + "/responses"
        if self.query_params:
            url += "?" + urllib.parse.urlencode(self.query_params)
        return url

    def auth_headers(
        self, codex_home: str | os.PathLike[str], environ: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The provider's headers and ``Authorization`` for one request.

        Raises :class:`ConfigError` with the turn's error text when ``env_key`` names a variable
        that is unset or blank (``Missing environment variable: `VAR`.`` + instructions)."""
        env = os.environ if environ is None else environ
        headers = dict(self.http_headers)
        for header, variable in self.env_http_headers.items():
            value = env.get(variable, "")
            if value.strip():
                headers[header] = value
        token: str | None = None
        if self.env_key is not None:
            value = env.get(self.env_key, "")
            if not value.strip():
                message = f"Missing environment variable: `{self.env_key}`."
                if self.env_key_instructions:
                    message += f" {self.env_key_instructions}"
                raise ConfigError(message)
            token = value
        elif self.experimental_bearer_token is not None:
            token = self.experimental_bearer_token
        elif self.requires_openai_auth:
            token = read_api_key(Path(codex_home))
            if token is None and self.id == OPENAI_PROVIDER_ID:
                token = env.get(_OPENAI_ENV_KEY) or None
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return headers


def built_in_providers(openai_base_url: str | None = None) -> dict[str, ProviderInfo]:
    """The providers every config has (``openai_base_url`` moves the OpenAI one)."""
    return {
        OPENAI_PROVIDER_ID: ProviderInfo(
            id=OPENAI_PROVIDER_ID,
            name="OpenAI",
            base_url=openai_base_url or DEFAULT_OPENAI_BASE_URL,
            http_headers={"version": CODEX_PROTOCOL_VERSION},
            env_http_headers={
                "OpenAI-Organization": "OPENAI_ORGANIZATION",
                "OpenAI-Project": "OPENAI_PROJECT",
            },
            requires_openai_auth=True,
            supports_websockets=True,
            built_in=True,
        ),
        "amazon-bedrock": ProviderInfo(
            id="amazon-bedrock",
            name="Amazon Bedrock",
            base_url="https://bedrock-mantle.us-east-1.api.aws/openai/v1",
            built_in=True,
        ),
        "ollama": ProviderInfo(
            id="ollama", name="gpt-oss", base_url="http://localhost:11434/v1", built_in=True
        ),
        "lmstudio": ProviderInfo(
            id="lmstudio", name="gpt-oss", base_url="http://localhost:1234/v1", built_in=True
        ),
    }


def _retries(value: Any, default: int) -> int:
    return min(value if isinstance(value, int) else default, MAX_RETRIES)


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in cast("dict[str, Any]", value).items()}


def provider_from_table(provider_id: str, table: Mapping[str, Any]) -> ProviderInfo:
    """A ``[model_providers.<id>]`` table (already validated) as a provider."""
    idle = table.get("stream_idle_timeout_ms")
    base_url = table.get("base_url")
    return ProviderInfo(
        id=provider_id,
        name=str(table.get("name", "")),
        base_url=DEFAULT_OPENAI_BASE_URL if base_url is None else str(base_url),
        wire_api=str(table.get("wire_api", "responses")),
        env_key=table.get("env_key"),
        env_key_instructions=table.get("env_key_instructions"),
        experimental_bearer_token=table.get("experimental_bearer_token"),
        http_headers=_strings(table.get("http_headers")),
        env_http_headers=_strings(table.get("env_http_headers")),
        query_params=_strings(table.get("query_params")),
        request_max_retries=_retries(table.get("request_max_retries"), DEFAULT_REQUEST_MAX_RETRIES),
        stream_max_retries=_retries(table.get("stream_max_retries"), DEFAULT_STREAM_MAX_RETRIES),
        stream_idle_timeout_ms=idle if isinstance(idle, int) else DEFAULT_STREAM_IDLE_TIMEOUT_MS,
        requires_openai_auth=bool(table.get("requires_openai_auth", False)),
        supports_websockets=bool(table.get("supports_websockets", False)),
    )
