"""The five wire unions as lenient, validated-once ``TypeAdapter``s, and JSON helpers.

Each adapter accepts every variant the schema names, picked by its tag in one dictionary lookup,
and turns a tag it does not know into an ``Unknown*`` model that keeps every field and is written
back unchanged (architecture: unknown variants are preserved, never rejected). A known tag with
a malformed body is a ``pydantic.ValidationError`` whose location starts with the tag
(``item/started.params.item``). Nothing here does I/O; the rpc layer decides what an unknown
client request is answered with.

Naming: ``<UNION>_ADAPTER`` validates ``Any<Union>``, the generated schema union ``<Union>`` plus
the ``Unknown<Union>`` fallback (and, for notifications, the two raw-response notifications the
schema leaves out); ``parse_<union>(data)`` is ``<UNION>_ADAPTER.validate_json(data)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, Union, get_args, get_origin

from pydantic import Discriminator, Tag, TypeAdapter
from typing_extensions import TypeAliasType

from codex_app_bridge.protocol._base import WireModel, union_adapter
from codex_app_bridge.protocol._tagged import UNKNOWN_TAG, tag_of
from codex_app_bridge.protocol.v2 import _generated

if TYPE_CHECKING:
    from codex_app_bridge.protocol.v2._generated import (
        ClientRequest,
        RawResponseCompletedServerNotification,
        RawResponseItemCompletedServerNotification,
        ServerNotification,
        ServerRequest,
        ThreadItem,
        UserInput,
    )

__all__ = [
    "CLIENT_REQUEST_ADAPTER",
    "SERVER_NOTIFICATION_ADAPTER",
    "SERVER_REQUEST_ADAPTER",
    "THREAD_ITEM_ADAPTER",
    "USER_INPUT_ADAPTER",
    "AnyClientRequest",
    "AnyServerNotification",
    "AnyServerRequest",
    "AnyThreadItem",
    "AnyUserInput",
    "UnknownClientRequest",
    "UnknownServerNotification",
    "UnknownServerRequest",
    "UnknownThreadItem",
    "UnknownUserInput",
    "dump_dict",
    "dump_json",
    "parse_client_request",
    "parse_server_notification",
    "parse_server_request",
    "parse_thread_item",
    "parse_user_input",
    "tags_of",
]


class _UnknownMessage(WireModel):
    """An unknown notification or request: its ``params`` are kept as an extra field."""

    @property
    def params(self) -> Any:
        """The ``params`` member as received (``None`` when absent)."""
        return (self.model_extra or {}).get("params")


class UnknownServerNotification(_UnknownMessage):
    """A notification whose ``method`` this protocol version does not define.

    ``params``, ``emittedAtMs`` and anything else are kept as extra fields, in order.
    """

    method: str


class UnknownClientRequest(_UnknownMessage):
    """A client request whose ``method`` is not in the stable schema: an experimental or legacy
    method (see ``methods``) or one the real server answers with ``unknown variant``."""

    id: str | int
    method: str


class UnknownServerRequest(_UnknownMessage):
    """A server-to-client request whose ``method`` this protocol version does not define."""

    id: str | int
    method: str


class UnknownThreadItem(WireModel):
    """A thread item of a ``type`` this protocol version does not define; every field is kept."""

    type: str


class UnknownUserInput(WireModel):
    """A user input of a ``type`` this protocol version does not define; every field is kept."""

    type: str


def _models(tp: Any) -> list[type[WireModel]]:
    """The model classes of a (possibly aliased, annotated, nested) union, in order."""
    if isinstance(tp, TypeAliasType):
        return _models(tp.__value__)
    if get_origin(tp) is Annotated:
        return _models(get_args(tp)[0])
    args = get_args(tp)
    if args:
        return [model for arg in args for model in _models(arg)]
    if isinstance(tp, type) and issubclass(tp, WireModel):
        return [tp]
    raise TypeError(f"not a union of wire models: {tp!r}")


def _tag_value(model: type[WireModel], tag: str) -> str:
    default = model.model_fields[tag].default
    if not isinstance(default, str):
        raise TypeError(f"{model.__name__}.{tag} is not a one-value Literal")
    return default


def tags_of(union: Any, tag: str) -> tuple[str, ...]:
    """The tag values of a generated union, in schema order (``method`` of each notification)."""
    seen: dict[str, None] = {}
    for model in _models(union):
        seen.setdefault(_tag_value(model, tag), None)
    return tuple(seen)


def _lenient_union(variants: Iterable[Any], tag: str, unknown: type[WireModel]) -> Any:
    """A runtime union type discriminated by ``tag`` with ``unknown`` for any other tag value.

    Variants sharing one tag value (``image`` user input by URL or by file id) form one choice,
    told apart by pydantic's smart union mode.
    """
    by_tag: dict[str, list[type[WireModel]]] = {}
    for variant in variants:
        for model in _models(variant):
            by_tag.setdefault(_tag_value(model, tag), []).append(model)
    known = frozenset(by_tag)

    def discriminate(value: Any) -> str:
        # a missing or non-string tag selects the Unknown* model too, whose own fields reject it
        found = tag_of(value, tag)
        return found if found in known else UNKNOWN_TAG

    choices: list[Any] = [
        Annotated[Union[tuple(models)] if len(models) > 1 else models[0], Tag(value)]  # noqa: UP007
        for value, models in by_tag.items()
    ]
    choices.append(Annotated[unknown, Tag(UNKNOWN_TAG)])
    return Annotated[Union[tuple(choices)], Discriminator(discriminate)]  # noqa: UP007


def _adapter(title: str, variants: Iterable[Any], tag: str, unknown: type[WireModel]) -> Any:
    return union_adapter(_lenient_union(variants, tag, unknown), title=title)


if TYPE_CHECKING:
    AnyServerNotification: TypeAlias = Union[  # noqa: UP007 - evaluated at runtime on TypeAliasTypes
        ServerNotification,
        RawResponseItemCompletedServerNotification,
        RawResponseCompletedServerNotification,
        UnknownServerNotification,
    ]
    AnyClientRequest: TypeAlias = Union[ClientRequest, UnknownClientRequest]  # noqa: UP007
    AnyServerRequest: TypeAlias = Union[ServerRequest, UnknownServerRequest]  # noqa: UP007
    AnyThreadItem: TypeAlias = Union[ThreadItem, UnknownThreadItem]  # noqa: UP007
    AnyUserInput: TypeAlias = Union[UserInput, UnknownUserInput]  # noqa: UP007

    SERVER_NOTIFICATION_ADAPTER: TypeAdapter[AnyServerNotification]
    CLIENT_REQUEST_ADAPTER: TypeAdapter[AnyClientRequest]
    SERVER_REQUEST_ADAPTER: TypeAdapter[AnyServerRequest]
    THREAD_ITEM_ADAPTER: TypeAdapter[AnyThreadItem]
    USER_INPUT_ADAPTER: TypeAdapter[AnyUserInput]


# The unions and their adapters are made when first read (module ``__getattr__``): each needs
# every model of its union, which the generated module creates on first access only.
_LAZY: dict[str, Callable[[], Any]] = {
    "AnyServerNotification": lambda: Union[  # noqa: UP007 - runtime union of TypeAliasTypes
        _generated.ServerNotification,
        _generated.RawResponseItemCompletedServerNotification,
        _generated.RawResponseCompletedServerNotification,
        UnknownServerNotification,
    ],
    "AnyClientRequest": lambda: Union[_generated.ClientRequest, UnknownClientRequest],  # noqa: UP007
    "AnyServerRequest": lambda: Union[_generated.ServerRequest, UnknownServerRequest],  # noqa: UP007
    "AnyThreadItem": lambda: Union[_generated.ThreadItem, UnknownThreadItem],  # noqa: UP007
    "AnyUserInput": lambda: Union[_generated.UserInput, UnknownUserInput],  # noqa: UP007
    "SERVER_NOTIFICATION_ADAPTER": lambda: _adapter(
        "ServerNotification",
        [
            _generated.ServerNotification,
            _generated.RawResponseItemCompletedServerNotification,
            _generated.RawResponseCompletedServerNotification,
        ],
        "method",
        UnknownServerNotification,
    ),
    "CLIENT_REQUEST_ADAPTER": lambda: _adapter(
        "ClientRequest", [_generated.ClientRequest], "method", UnknownClientRequest
    ),
    "SERVER_REQUEST_ADAPTER": lambda: _adapter(
        "ServerRequest", [_generated.ServerRequest], "method", UnknownServerRequest
    ),
    "THREAD_ITEM_ADAPTER": lambda: _adapter(
        "ThreadItem", [_generated.ThreadItem], "type", UnknownThreadItem
    ),
    "USER_INPUT_ADAPTER": lambda: _adapter(
        "UserInput", [_generated.UserInput], "type", UnknownUserInput
    ),
}


def __getattr__(name: str) -> Any:
    factory = _LAZY.get(name)
    if factory is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
    value = globals()[name] = factory()
    return value


def _named(name: str) -> Any:
    """A lazily made module attribute, from inside the module (where globals are not routed
    through ``__getattr__``)."""
    value = globals().get(name)
    return value if value is not None else __getattr__(name)


def parse_server_notification(data: str | bytes | bytearray) -> AnyServerNotification:
    """One server notification (``{"method", "params", "emittedAtMs"}``) from JSON text."""
    adapter: TypeAdapter[Any] = _named("SERVER_NOTIFICATION_ADAPTER")
    return adapter.validate_json(data)


def parse_client_request(data: str | bytes | bytearray) -> AnyClientRequest:
    """One client request (``{"id", "method", "params"}``) from JSON text."""
    adapter: TypeAdapter[Any] = _named("CLIENT_REQUEST_ADAPTER")
    return adapter.validate_json(data)


def parse_server_request(data: str | bytes | bytearray) -> AnyServerRequest:
    """One server-to-client request (``{"id", "method", "params"}``) from JSON text."""
    adapter: TypeAdapter[Any] = _named("SERVER_REQUEST_ADAPTER")
    return adapter.validate_json(data)


def parse_thread_item(data: str | bytes | bytearray) -> AnyThreadItem:
    """One thread item from JSON text."""
    adapter: TypeAdapter[Any] = _named("THREAD_ITEM_ADAPTER")
    return adapter.validate_json(data)


def parse_user_input(data: str | bytes | bytearray) -> AnyUserInput:
    """One user input from JSON text."""
    adapter: TypeAdapter[Any] = _named("USER_INPUT_ADAPTER")
    return adapter.validate_json(data)


def dump_json(model: WireModel) -> bytes:
    """The wire JSON of any wire model (a union variant, params, a response), as compact bytes.

    Written by pydantic-core with wire names; null versus absent as the model declares it.
    """
    return model.__pydantic_serializer__.to_json(model, by_alias=True)


def dump_dict(model: WireModel) -> dict[str, Any]:
    """The wire form of a wire model as plain JSON-able Python data."""
    return model.model_dump(mode="json", by_alias=True)
