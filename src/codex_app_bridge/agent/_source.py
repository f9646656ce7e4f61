"""The model source: an ``EventSource`` whose sessions run turns against the configured provider.

Role: :class:`ModelSource` opens one :class:`~._session.ModelSession` per thread and holds what
sessions share: the HTTP clients (one connection pool per endpoint: URL, headers, retries), the
``CODEX_HOME/installation_id`` Codex sends with every request, the base instructions, the
built-in tool handlers (client dynamic tools, ``request_user_input``; ``_builtin``).

The HTTP stack is warmed off the event loop when the source is made (a worker thread imports
httpx and, for a provider that is not plain ``http``, loads the CA certificates), and a session
builds its endpoint's client when it opens, so a thread's first ``turn/start`` pays neither
(issue 20, first-delta latency).

Boundary: config and model packages below, sources' contract above; no JSON-RPC.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codex_app_bridge.agent._prompt import DEFAULT_BASE_INSTRUCTIONS
from codex_app_bridge.agent._session import ModelSession
from codex_app_bridge.sources import SessionConfig, SourceDefaults

if TYPE_CHECKING:
    from codex_app_bridge.agent._tools import ToolHandler
    from codex_app_bridge.config import ConfigLayers, EffectiveConfig
    from codex_app_bridge.machine import Bubblewrap, MachineTools
    from codex_app_bridge.model import ResponsesClient

__all__ = ["ModelSource", "warm"]

logger = logging.getLogger(__name__)


def _warm_http(tls: bool) -> None:
    try:
        from codex_app_bridge.model import warm_http_stack

        warm_http_stack(tls=tls)
    except Exception:  # pragma: no cover - the dependency is declared
        logger.exception("warming the HTTP stack")


def _uses_tls(base_url: str) -> bool:
    """Whether a provider's requests need the CA certificates (all but plain ``http``)."""
    return not base_url.lower().startswith("http://")


def warm(layers: ConfigLayers | None = None) -> None:
    """Import and build what a first model turn needs (HTTP stack, the machine's tools, the
    core models of recorded items and events), so ``turn/start`` -> first delta pays none of
    it; the CA certificates only when the configured provider is not plain ``http``. Run in a
    worker thread when ``serve`` picks the model source."""
    try:
        tls = True
        if layers is not None:
            try:
                tls = _uses_tls(layers.resolve().provider.base_url)
            except Exception:  # a broken config.toml fails its request, not the warm-up
                tls = False
        import codex_app_bridge.machine  # noqa: F401  # pyright: ignore[reportUnusedImport]
        from codex_app_bridge.protocol.core import (
            RESPONSE_ITEM_ADAPTER,
            AgentMessageItem,
            ItemStartedEvent,
            TaskStartedEvent,
            TokenCountEvent,
            UserMessageItem,
        )

        RESPONSE_ITEM_ADAPTER.validate_python(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ""}]}
        )
        ItemStartedEvent(
            thread_id="", turn_id="", item=AgentMessageItem(id="", content=[]), started_at_ms=0
        )
        UserMessageItem(id="", content=[])
        TaskStartedEvent(turn_id="")
        TokenCountEvent()
        # last: a thread's session, opened by its first turn, builds its HTTP client then
        # (``serve`` begins this warm-up once no request is being handled: a turn/start sent
        # right behind the thread/start answer shares the interpreter with it)
        _warm_http(tls)
    except Exception:  # a warm-up never fails the server
        logger.exception("warming the model source")


class ModelSource:
    """Turns from the provider ``config.toml`` names (see the module docstring)."""

    continues_goals = True
    """A thread's active goal gets goal-continuation turns (``server._goal_turns``): the model
    decides when the goal is done."""

    def __init__(
        self,
        layers: ConfigLayers,
        *,
        codex_home: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.layers = layers
        self.codex_home = Path(codex_home) if codex_home is not None else None
        self.environ = environ
        self._clients: dict[tuple[Any, ...], ResponsesClient] = {}
        self._installation_id: str | None = None
        self._bubblewrap: Bubblewrap | None = None
        tls = False
        try:
            config = layers.resolve()
            self._defaults = SourceDefaults(
                model=config.model, model_provider=config.model_provider_id
            )
            tls = _uses_tls(config.provider.base_url)
        except Exception:
            self._defaults = SourceDefaults(model="gpt-6.1-sol", model_provider="openai")
        threading.Thread(target=_warm_http, args=(tls,), name="warm-httpx", daemon=True).start()

    @property
    def defaults(self) -> SourceDefaults:
        return self._defaults

    # --- shared by sessions -----------------------------------------------------------------

    @property
    def installation_id(self) -> str:
        """``CODEX_HOME/installation_id`` (made once, as Codex does; in memory without a home)."""
        if self._installation_id is None:
            self._installation_id = self._read_installation_id()
        return self._installation_id

    def _read_installation_id(self) -> str:
        if self.codex_home is None:
            return str(uuid.uuid4())
        path = self.codex_home / "installation_id"
        try:
            text = path.read_text(encoding="utf-8").strip()
            if text:
                return str(uuid.UUID(text))
        except (OSError, ValueError):
            pass
        value = str(uuid.uuid4())
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(value, encoding="utf-8")
        except OSError:
            logger.warning("cannot write %s", path)
        return value

    def user_agent(self, originator: str | None) -> str:
        from codex_app_bridge._version import CODEX_PROTOCOL_VERSION

        name = originator or "codex_app_bridge"
        return f"{name}/{CODEX_PROTOCOL_VERSION}"

    def base_instructions(self, settings: EffectiveConfig) -> str:
        return settings.base_instructions or DEFAULT_BASE_INSTRUCTIONS

    def skills_instructions(self, settings: EffectiveConfig, cwd: str) -> str | None:
        """The ``<skills_instructions>`` fragment of a thread's first context: the skills found
        now under ``CODEX_HOME``, the home directory, the bundled ones and the project
        (``_skills``), or ``None`` when there are none."""
        from codex_app_bridge.agent._skills import find_skills, skill_roots, skills_instructions

        home = self.codex_home if self.codex_home is not None else Path.home() / ".codex"
        user_home = (self.environ or os.environ).get("HOME")
        roots = skill_roots(
            home,
            Path(cwd),
            home=Path(user_home) if user_home else None,
            config=settings.raw,
        )
        return skills_instructions(find_skills(roots, settings.raw))

    def client_for(self, settings: EffectiveConfig) -> ResponsesClient | str:
        """The client of the thread's provider, or the turn's error text (a missing
        ``env_key`` variable: ``Missing environment variable: ...``)."""
        from codex_app_bridge.config import ConfigError
        from codex_app_bridge.model import Endpoint, ResponsesClient

        provider = settings.provider
        home = self.codex_home if self.codex_home is not None else Path.home() / ".codex"
        try:
            headers = provider.auth_headers(home, self.environ)
        except ConfigError as exc:
            return exc.message
        url = provider.responses_url()
        key = (
            url,
            tuple(sorted(headers.items())),
            provider.request_max_retries,
            provider.stream_idle_timeout_ms,
        )
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = ResponsesClient(
                Endpoint(
                    url,
                    headers,
                    request_max_retries=provider.request_max_retries,
                    stream_idle_timeout_s=provider.stream_idle_timeout_ms / 1000,
                )
            )
        return client

    def builtin_tool(self, name: str, config: SessionConfig) -> ToolHandler | None:
        from codex_app_bridge.agent._builtin import builtin_tool

        return builtin_tool(name, config)

    def machine_tools(self) -> MachineTools:
        """A thread's local tools (``machine``), sandboxed with the server's bubblewrap."""
        from codex_app_bridge.machine import Bubblewrap, MachineTools

        if self._bubblewrap is None:
            self._bubblewrap = Bubblewrap.find()
        home = self.codex_home if self.codex_home is not None else Path.home() / ".codex"
        return MachineTools(bubblewrap=self._bubblewrap, codex_home=str(home))

    # --- sessions ---------------------------------------------------------------------------

    def settings_for(self, config: SessionConfig) -> EffectiveConfig:
        """The session's settings: the server's resolved config, else the layers' defaults."""
        import dataclasses

        from codex_app_bridge.config import EffectiveConfig, ThreadConfigOverrides

        if isinstance(config.settings, EffectiveConfig):
            settings = config.settings
        else:
            settings = self.layers.resolve(ThreadConfigOverrides(cwd=config.cwd))
        if settings.cwd is None:
            settings = dataclasses.replace(settings, cwd=config.cwd)
        return settings

    def open_session(self, config: SessionConfig) -> ModelSession:
        from codex_app_bridge.config import ConfigError, EffectiveConfig, built_in_providers

        broken: str | None = None
        try:
            settings = self.settings_for(config)
        except ConfigError as exc:  # every turn of the session fails with the real text
            broken = exc.message
            provider = built_in_providers()["openai"]
            settings = EffectiveConfig(
                model=config.model, model_provider_id=provider.id, provider=provider, cwd=config.cwd
            )
        session = ModelSession(self, config, settings)
        session.broken = broken
        if broken is not None:
            return session
        client = self.client_for(settings)
        if not isinstance(client, str):
            client.warm()
        return session
