"""``initialize``'s params decoded without the wire models say what the model says.

``InitializeParamsSpec`` reads the usual shape itself and hands anything else to the generated
``InitializeParams`` model: for any JSON value, what it decodes equals what the model decodes
(the same client name, version, experimental flag and opt-outs), and whatever the model refuses
it refuses with the model's own error."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codex_app_bridge.protocol.jsonrpc import ABSENT
from codex_app_bridge.protocol.v2 import InitializeParams, dump_dict
from codex_app_bridge.rpc import ModelParams, RpcError
from codex_app_bridge.server._handshake import (
    ClientHello,
    InitializeParamsSpec,
    plain_client_hello,
)

_MODEL = ModelParams(InitializeParams, field_order=("clientInfo", "capabilities"))

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=4)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
_TEXT = st.text(max_size=6)
_MOSTLY_TEXT = st.one_of(_TEXT, _TEXT, _TEXT, _SCALARS)
_MOSTLY_BOOL = st.one_of(st.booleans(), st.booleans(), _SCALARS)
_CAPABILITIES = (
    st.none()
    | st.fixed_dictionaries(
        {},
        optional={
            "experimentalApi": _MOSTLY_BOOL,
            "requestAttestation": _MOSTLY_BOOL,
            "explicitGatewayOauth": _MOSTLY_BOOL,
            "mcpServerOpenaiFormElicitation": _MOSTLY_BOOL,
            "extensions": st.one_of(st.none(), st.dictionaries(_TEXT, _JSON, max_size=2), _JSON),
            "optOutNotificationMethods": st.one_of(
                st.none(), st.lists(_TEXT, max_size=3), st.lists(_SCALARS, max_size=2)
            ),
            "experimental_api": _MOSTLY_BOOL,
            "somethingNew": _JSON,
        },
    )
    | _JSON
)
_CLIENT_INFO = (
    st.fixed_dictionaries(
        {"name": _MOSTLY_TEXT, "version": _MOSTLY_TEXT},
        optional={"title": st.one_of(st.none(), _MOSTLY_TEXT), "extra": _JSON, "name_": _JSON},
    )
    | st.fixed_dictionaries({}, optional={"name": _MOSTLY_TEXT, "client_info": _JSON})
    | _JSON
)
_DICT_PARAMS = st.fixed_dictionaries(
    {"clientInfo": _CLIENT_INFO}, optional={"capabilities": _CAPABILITIES, "x": _JSON}
)
_USUAL_PARAMS = st.fixed_dictionaries(
    {
        "clientInfo": st.fixed_dictionaries(
            {"name": _TEXT, "version": _TEXT}, optional={"title": _TEXT}
        )
    },
    optional={
        "capabilities": st.none()
        | st.fixed_dictionaries(
            {},
            optional={
                "experimentalApi": st.booleans(),
                "optOutNotificationMethods": st.none() | st.lists(_TEXT, max_size=3),
                "extensions": st.none() | st.dictionaries(_TEXT, _SCALARS, max_size=2),
                "explicitGatewayOauth": st.none() | st.booleans(),
                "other": _JSON,
            },
        )
    },
)
_PARAMS = st.one_of(
    _USUAL_PARAMS,
    _USUAL_PARAMS,
    _DICT_PARAMS,
    _DICT_PARAMS,
    _DICT_PARAMS,
    st.fixed_dictionaries({"client_info": _CLIENT_INFO}, optional={"clientInfo": _CLIENT_INFO}),
    st.lists(st.one_of(_CLIENT_INFO, _CAPABILITIES), max_size=3),
    _JSON,
)


def _by_model(raw: Any) -> tuple[object, ...] | str:
    """What the model decodes, read from its wire form (the oracle)."""
    try:
        wire = dump_dict(_MODEL.decode(raw))
    except RpcError as exc:
        return exc.message
    capabilities = wire.get("capabilities") or {}
    return (
        wire["clientInfo"]["name"],
        wire["clientInfo"]["version"],
        capabilities.get("experimentalApi") is True,
        tuple(capabilities.get("optOutNotificationMethods") or ()),
    )


def _by_spec(raw: Any) -> tuple[object, ...] | str:
    try:
        hello = InitializeParamsSpec().decode(raw)
    except RpcError as exc:
        return exc.message
    return (hello.name, hello.version, hello.experimental_api, hello.opt_out_notification_methods)


@settings(max_examples=400, deadline=None)
@given(raw=_PARAMS)
def test_initialize_params_decode_as_the_model_decodes_them(raw: Any) -> None:
    assert _by_spec(raw) == _by_model(raw)


def test_the_usual_params_are_read_without_the_model() -> None:
    usual = {
        "clientInfo": {"name": "codex_vscode", "title": "Codex", "version": "0.1.0"},
        "capabilities": {"experimentalApi": True, "optOutNotificationMethods": ["a/b"]},
    }
    assert plain_client_hello(usual) == ClientHello("codex_vscode", "0.1.0", True, ("a/b",))
    assert plain_client_hello({"clientInfo": {"name": "c", "version": "1"}}) == ClientHello(
        "c", "1"
    )


def test_anything_else_goes_to_the_model() -> None:
    for raw in (
        ABSENT,
        None,
        [{"name": "c", "version": "1"}],
        {"clientInfo": {"name": "c", "version": 1}},
        {"client_info": {"name": "c", "version": "1"}},
        {"clientInfo": {"name": "c", "version": "1"}, "capabilities": {"experimentalApi": None}},
    ):
        assert plain_client_hello(raw) is None
    assert _by_spec({"clientInfo": {"name": "c", "version": 1}}) == (
        "Invalid request: invalid type: integer `1`, expected a string"
    )
