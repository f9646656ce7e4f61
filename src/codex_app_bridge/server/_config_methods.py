"""Handlers of the methods a configured model brings: ``model/*``, ``modelProvider/*``,
``config/*`` and ``account/*``, as Codex 0.163.0 answers them.

Role: wire the ``config`` package to the method table: :class:`ConfigMethods` (``model/list``,
``modelProvider/capabilities/read``, ``config/read``, ``config/value/write``,
``config/batchWrite``) and :class:`AccountMethods` (``account/read``, ``account/login/start``
with an API key, ``account/logout``, ``account/rateLimits/read``, ``account/usage/read``), and
:func:`config_method_specs`, their rows of the method table (the few whose params are not a
plain struct get their own decoder: ``account/logout`` takes none, ``account/login/start`` is a
tagged union).

Errors are the binary's (probed): a broken config answers ``-32603`` on ``config/read`` and
``modelProvider/capabilities/read`` while ``model/list`` and ``account/read`` answer from the
defaults; a refused write is ``-32600`` with ``data.config_write_error_code``. The account
methods that need a ChatGPT login answer its absence. Only the API-key login is supported: the
ChatGPT browser, device-code and Bedrock logins answer ``-32600`` saying so.

Boundary: it sees the server through ``ServerServices`` (its config layers and hub).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, cast

from codex_app_bridge.config import (
    CatalogPageError,
    ConfigEdit,
    ConfigError,
    ConfigWriteError,
    delete_auth,
    model_page,
    read_auth,
    read_config,
    write_api_key,
    write_config,
)
from codex_app_bridge.protocol.jsonrpc import ABSENT, JsonValue
from codex_app_bridge.protocol.v2 import (
    ConfigBatchWriteParams,
    ConfigReadParams,
    ConfigValueWriteParams,
    GetAccountParams,
    ModelListParams,
    ModelProviderCapabilitiesReadParams,
)
from codex_app_bridge.rpc import (
    INTERNAL_ERROR,
    MethodSpec,
    ModelParams,
    RequestContext,
    RpcError,
    invalid_request,
)
from codex_app_bridge.rpc.errors import missing_params_error, params_type_error
from codex_app_bridge.rpc.methods import RawParamsValue
from codex_app_bridge.server._handlers import CONFIG_METHODS
from codex_app_bridge.server._ids import parse_thread_id

if TYPE_CHECKING:
    from codex_app_bridge.server._services import ServerServices

__all__ = [
    "CONFIG_METHODS",
    "AccountMethods",
    "ConfigMethods",
    "config_method_specs",
]

_LOGIN_TYPES: Final = (
    "apiKey",
    "chatgpt",
    "chatgptDeviceCode",
    "chatgptAuthTokens",
    "amazonBedrock",
    "amazonBedrockAccessKeys",
)
_RATE_LIMITS_NO_LOGIN: Final = "codex account authentication required to read rate limits"
_RATE_LIMITS_API_KEY: Final = "chatgpt authentication required to read rate limits"
_USAGE_NO_LOGIN: Final = "codex account authentication required to read token usage"
_USAGE_API_KEY: Final = "chatgpt authentication required to read token usage"
_CAPABILITIES: Final = {"imageGeneration": True, "webSearch": True}


def _internal(message: str) -> RpcError:
    return RpcError(INTERNAL_ERROR, message)


def _write_error(exc: ConfigWriteError) -> RpcError:
    return RpcError(-32600, exc.message, {"config_write_error_code": exc.code})


class ConfigMethods:
    """``model/*``, ``modelProvider/*`` and ``config/*`` (see the module docstring)."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    def model_list(self, ctx: RequestContext, params: ModelListParams) -> dict[str, Any]:
        try:
            data, next_cursor = model_page(params.cursor, params.limit, bool(params.include_hidden))
        except CatalogPageError as exc:
            raise invalid_request(str(exc)) from None
        return {"data": data, "nextCursor": next_cursor}

    async def capabilities_read(
        self, ctx: RequestContext, params: ModelProviderCapabilitiesReadParams
    ) -> dict[str, Any]:
        try:
            self.server.config.resolve()
        except ConfigError as exc:
            raise _internal(exc.text_for("capabilities")) from None
        return dict(_CAPABILITIES)

    async def config_read(self, ctx: RequestContext, params: ConfigReadParams) -> dict[str, Any]:
        try:
            return read_config(self.server.config, include_layers=bool(params.include_layers))
        except ConfigError as exc:
            raise _internal(exc.text_for("config/read")) from None

    def _write(
        self, edits: list[ConfigEdit], file_path: str | None, expected_version: str | None
    ) -> dict[str, Any]:
        try:
            return write_config(
                self.server.config,
                edits,
                file_path=file_path,
                expected_version=expected_version,
            )
        except ConfigWriteError as exc:
            raise _write_error(exc) from None
        except ConfigError as exc:
            raise _internal(exc.message) from None

    async def config_value_write(
        self, ctx: RequestContext, params: ConfigValueWriteParams
    ) -> dict[str, Any]:
        edit = ConfigEdit(params.key_path, params.value, str(params.merge_strategy))
        return self._write([edit], params.file_path, params.expected_version)

    async def config_batch_write(
        self, ctx: RequestContext, params: ConfigBatchWriteParams
    ) -> dict[str, Any]:
        edits = [
            ConfigEdit(edit.key_path, edit.value, str(edit.merge_strategy)) for edit in params.edits
        ]
        return self._write(edits, params.file_path, params.expected_version)


class AccountMethods:
    """``account/*`` (see the module docstring)."""

    def __init__(self, server: ServerServices) -> None:
        self.server = server

    def _requires_openai_auth(self) -> bool:
        try:
            return self.server.config.resolve().provider.requires_openai_auth
        except ConfigError:
            return True  # a broken config answers from the defaults: the OpenAI provider

    def _auth_mode(self) -> str | None:
        auth = read_auth(self.server.config.codex_home)
        if auth is None:
            return None
        if isinstance(auth.get("OPENAI_API_KEY"), str):
            return "apikey"
        return "chatgpt" if auth.get("tokens") else None

    async def account_read(self, ctx: RequestContext, params: GetAccountParams) -> dict[str, Any]:
        requires = self._requires_openai_auth()
        account = {"type": "apiKey"} if requires and self._auth_mode() == "apikey" else None
        return {"account": account, "requiresOpenaiAuth": requires, "workspaceRouting": None}

    async def login_start(
        self, ctx: RequestContext, params: dict[str, JsonValue]
    ) -> dict[str, Any]:
        kind = params.get("type")
        if kind != "apiKey":
            raise invalid_request(
                f"account/login/start type `{kind}` is not supported by codex-app-bridge "
                "(only `apiKey`)"
            )
        api_key = params.get("apiKey")
        assert isinstance(api_key, str)  # checked by the params decoder
        write_api_key(self.server.config.codex_home, api_key)
        hub = self.server.hub

        async def announce() -> None:
            completed = {
                "loginId": None,
                "success": True,
                "error": None,
                "onboardingEntrypoint": None,
            }
            await hub.broadcast("account/login/completed", completed)
            await hub.broadcast("account/updated", {"authMode": "apikey", "planType": None})

        ctx.after_response(announce)
        return {"type": "apiKey"}

    async def logout(self, ctx: RequestContext, params: None) -> dict[str, Any]:
        delete_auth(self.server.config.codex_home)
        hub = self.server.hub

        async def announce() -> None:
            await hub.broadcast("account/updated", {"authMode": None, "planType": None})

        ctx.after_response(announce)
        return {}

    async def rate_limits_read(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        mode = self._auth_mode()
        raise invalid_request(_RATE_LIMITS_API_KEY if mode == "apikey" else _RATE_LIMITS_NO_LOGIN)

    async def usage_read(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        if isinstance(params, dict):
            thread_id = cast("dict[str, Any]", params).get("threadId")
            if isinstance(thread_id, str):
                parse_thread_id(thread_id)
        mode = self._auth_mode()
        raise invalid_request(_USAGE_API_KEY if mode == "apikey" else _USAGE_NO_LOGIN)


# ------------------------------------------------------------------ params decoders


class _UnitParams:
    """Params of a method that takes none: absent, ``null`` or ``{}``."""

    def decode(self, raw: RawParamsValue) -> None:
        if raw is ABSENT or raw is None or raw == {}:
            return
        raise params_type_error(raw, "unit")


class _OptionalObjectParams:
    """Nullable params (``GetAccountRateLimitsParams | null``): absent, ``null`` or an object."""

    def decode(self, raw: RawParamsValue) -> dict[str, JsonValue] | None:
        if raw is None or raw is ABSENT:
            return None
        if not isinstance(raw, dict):
            raise params_type_error(raw, "a map")
        return raw


class _LoginParams:
    """``LoginAccountParams``: a union tagged by ``type``."""

    def decode(self, raw: RawParamsValue) -> dict[str, JsonValue]:
        if raw is None or raw is ABSENT:
            raise missing_params_error()
        if not isinstance(raw, dict):
            raise params_type_error(raw, "internally tagged enum LoginAccountParams")
        kind = raw.get("type")
        if kind is None:
            raise invalid_request("Invalid request: missing field `type`")
        if kind not in _LOGIN_TYPES:
            names = ", ".join(f"`{name}`" for name in _LOGIN_TYPES)
            raise invalid_request(
                f"Invalid request: unknown variant `{kind}`, expected one of {names}"
            )
        if kind == "apiKey":
            from codex_app_bridge.protocol.v2 import ApiKeyLoginAccountParams

            ModelParams(ApiKeyLoginAccountParams).decode(raw)
        return raw


Route = Callable[[RequestContext, Any], Awaitable[object]]


def config_method_specs(server: ServerServices) -> dict[str, MethodSpec[Any]]:
    """The method-table rows of :data:`CONFIG_METHODS`, by name."""
    config = ConfigMethods(server)
    account = AccountMethods(server)
    specs: list[MethodSpec[Any]] = [
        MethodSpec("model/list", ModelParams(ModelListParams), None, immediate=config.model_list),
        MethodSpec(
            "modelProvider/capabilities/read",
            ModelParams(ModelProviderCapabilitiesReadParams),
            config.capabilities_read,
        ),
        MethodSpec("account/read", ModelParams(GetAccountParams), account.account_read),
        MethodSpec("account/login/start", _LoginParams(), account.login_start),
        MethodSpec("account/logout", _UnitParams(), account.logout),
        MethodSpec("account/rateLimits/read", _OptionalObjectParams(), account.rate_limits_read),
        MethodSpec("account/usage/read", _OptionalObjectParams(), account.usage_read),
        MethodSpec("config/read", ModelParams(ConfigReadParams), config.config_read),
        MethodSpec(
            "config/value/write", ModelParams(ConfigValueWriteParams), config.config_value_write
        ),
        MethodSpec(
            "config/batchWrite", ModelParams(ConfigBatchWriteParams), config.config_batch_write
        ),
    ]
    return {spec.name: spec for spec in specs}
