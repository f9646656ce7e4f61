"""The method table: one list of ``MethodSpec`` drives dispatch, errors and completeness tests.

A ``MethodSpec`` names a client request method and says how to serve it:

* ``params``: how the raw ``params`` member is decoded (``ModelParams`` for a pydantic model with
  the real server's serde-worded errors, ``RawParams`` for a plain object); decoding happens
  before the gate, as in the real server (a bad ``params`` is reported even before initialize);
* ``handler``: ``async (ctx, params) -> result``; ``None`` (and no ``immediate``) marks a method
  the protocol has but this server does not support: it is still a *known* method (never "unknown
  variant"), and calling it answers the table's ``unsupported_error`` naming the method (the
  server layer decides the text);
* ``immediate``: instead of ``handler``, a plain ``(ctx, params) -> result`` for a method that
  answers from memory without waiting for anything: the connection calls it on its processing
  loop as the request arrives, with no task of its own (the request path's main cost when a
  client pipelines requests), unless earlier requests with its scope key are still pending;
* ``scope``: ``params -> key | None``; requests with the same non-``None`` key are handled FIFO
  (e.g. the ``threadId`` of thread/* and turn/* methods), others run concurrently;
  ``connection_scoped`` keys are namespaced by connection (for connection-owned resources);
* ``experimental``: for the server layer's gate (``… requires experimentalApi capability``);
* ``inline``: handled on the connection's processing loop itself, before the next request is even
  looked at (``initialize``: the following request must see the connection initialized).

The table keeps the declaration order: the unknown-method error lists every name in that order.
This module knows nothing of threads or turns: a scope key is just a hashable value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeAlias, TypeVar, cast, get_args

import orjson

from codex_app_bridge.protocol.jsonrpc import ABSENT, Absent, JsonValue
from codex_app_bridge.rpc.errors import (
    METHOD_NOT_FOUND,
    RpcError,
    invalid_request,
    missing_params_error,
    params_error,
    params_length_error,
    params_type_error,
    unknown_method_error,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from codex_app_bridge.rpc._context import RequestContext

__all__ = [
    "Handler",
    "ImmediateHandler",
    "MethodSpec",
    "MethodTable",
    "ModelParams",
    "ParamsSpec",
    "RawParams",
    "default_unsupported_error",
]

P = TypeVar("P")
P_co = TypeVar("P_co", covariant=True)
M = TypeVar("M", bound="BaseModel")

RawParamsValue: TypeAlias = "JsonValue | Absent"

Handler: TypeAlias = "Callable[[RequestContext, P], Awaitable[object]]"
"""``async (ctx, params) -> result``: the result is a pydantic model, ``bytes``/``orjson.Fragment``
(pre-encoded JSON) or plain JSON-able data; raising ``RpcError`` answers an error."""

ImmediateHandler: TypeAlias = "Callable[[RequestContext, P], object]"
"""``(ctx, params) -> result``, the same contract as ``Handler`` without awaiting."""


class ParamsSpec(Protocol[P_co]):
    """Decodes the raw ``params`` member (``ABSENT`` when missing); raises ``RpcError``."""

    def decode(self, raw: RawParamsValue) -> P_co: ...


_PlainField: TypeAlias = "tuple[str, type, bool, int | None]"
"""A field ``ModelParams`` may fill without validating: its name, its exact type (``str``,
``bool`` or ``int``), whether ``null`` is allowed, and an integer's lower bound (``ge``)."""

_PLAIN_INT_LIMIT: Final = 2**31
"""Integers at or beyond this are left to the validator (the wire's integer ranges)."""


def _plain_fields(model: type[BaseModel]) -> dict[str, _PlainField]:
    """Wire name -> ``_PlainField`` of each of ``model``'s fields that a plain value fills as
    validation would: a ``str``, ``bool`` or ``int`` (or one of them or ``None``), with no
    constraint but an integer's ``ge``; none at all when the model has validators of its own."""
    decorators = model.__pydantic_decorators__
    if (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
    ):
        return {}
    plain: dict[str, _PlainField] = {}
    for name, info in model.model_fields.items():
        kind: Any = info.annotation
        args = get_args(kind)
        optional = type(None) in args
        if optional and len(args) == 2:
            kind = args[0] if args[1] is type(None) else args[1]
        elif args:
            continue
        if kind not in (str, bool, int):
            continue
        minimum: int | None = None
        if info.metadata:
            bound = info.metadata[0]
            if len(info.metadata) > 1 or kind is not int or type(bound).__name__ != "Ge":
                continue
            minimum = bound.ge
        plain[info.alias or name] = (name, kind, optional, minimum)
    return plain


class ModelParams(Generic[M]):
    """Params validated by a pydantic model, strictly as serde would (no ``"1"`` -> ``1``).

    ``struct_name`` and ``field_count`` are the Rust struct's name and number of fields, used by
    the messages for non-object params (``… expected struct ThreadListParams with 16 elements``);
    they default to the model's class name and field count. ``field_order`` gives the Rust
    struct's first fields (wire names) where they differ from the model's (generated models are
    alphabetical; the other fields follow in model order): positional params are read in that
    order (``initialize [1,2]`` names
    ``ClientInfo``, the struct's first field, as the real server).
    """

    def __init__(
        self,
        model: type[M],
        *,
        struct_name: str | None = None,
        field_count: int | None = None,
        field_order: Sequence[str] | None = None,
    ) -> None:
        self.model = model
        self.struct_name = struct_name or model.__name__
        self.field_count = len(model.model_fields) if field_count is None else field_count
        wire_names = [info.alias or name for name, info in model.model_fields.items()]
        first = tuple(field_order or ())
        self.field_order: tuple[str, ...] = first + tuple(n for n in wire_names if n not in first)
        self._plain_fields: dict[str, _PlainField] | None = None
        self._required = frozenset(
            name for name, info in model.model_fields.items() if info.is_required()
        )
        self.min_items = self.field_count
        """Elements a positional form needs: serde fills the fields with ``#[serde(default)]``
        (absent from the wire rather than null: ``exclude_if``) at the end of a short
        sequence, so ``skills/list []`` or ``thread/read ["id"]`` are read (probed)."""
        if self.field_count == len(wire_names):
            fields = {info.alias or name: info for name, info in model.model_fields.items()}
            needed = [
                index
                for index, wire in enumerate(self.field_order)
                if fields[wire].is_required() or fields[wire].exclude_if is None
            ]
            self.min_items = needed[-1] + 1 if needed else 0

    def decode(self, raw: RawParamsValue) -> M:
        if raw is ABSENT or raw is None:
            raise missing_params_error()
        if isinstance(raw, dict):
            return self._validate(raw)
        if isinstance(raw, list):
            return self._decode_positional(raw)
        raise params_type_error(raw, f"struct {self.struct_name}")

    def _validate(self, obj: dict[str, JsonValue]) -> M:
        plain = self._plain(obj)
        if plain is not None:
            return plain
        # Validate the JSON text in strict mode: JSON-mode strictness is serde's (strings for
        # enums are fine, "1" for an integer or 1 for a boolean are not).
        from pydantic import ValidationError  # loaded with the model already

        try:
            return self.model.model_validate_json(orjson.dumps(obj), strict=True)
        except ValidationError as exc:
            error = params_error(exc, self.model, obj)
            assert error is not None
            raise error from None

    def _plain(self, obj: dict[str, JsonValue]) -> M | None:
        """The model of params whose every member is a plain field given a value of exactly its
        type (``{"threadId": "…"}``, ``{"limit": 25, "cursor": null}``, ``{}``), built without
        validating: what strict validation would make of them, without building the model's
        validator (a first request of its kind pays that, about as long as the request). ``None``
        when anything needs the validator (it then says what is wrong, as serde would)."""
        fields = self._plain_fields
        if fields is None:
            fields = self._plain_fields = _plain_fields(self.model)
        if not fields:
            return None
        values: dict[str, object] = {}
        for wire, value in obj.items():
            plain = fields.get(wire)
            if plain is None:
                return None
            name, kind, optional, minimum = plain
            if value is None:
                if not optional:
                    return None
            elif type(value) is not kind or (
                minimum is not None and not minimum <= cast("int", value) < _PLAIN_INT_LIMIT
            ):
                return None
            values[name] = value
        if not self._required.issubset(values):
            return None
        return self.model.model_construct(set(values), **values)

    def _decode_positional(self, items: list[JsonValue]) -> M:
        # Serde reads a struct from a sequence field by field; errors in present elements come
        # first, then a short sequence is "invalid length".
        if len(items) > self.field_count:
            raise invalid_request(
                f"Invalid request: invalid length {len(items)}, expected {self.field_count} "
                "elements in sequence"
            )
        given = dict(zip(self.field_order, items, strict=False))
        from pydantic import ValidationError  # loaded with the model already

        try:
            value = self.model.model_validate_json(orjson.dumps(given), strict=True)
        except ValidationError as exc:
            error = params_error(exc, self.model, given, ignore_missing=True)
            if error is not None:
                raise error from None
            value = None
        if len(items) < self.min_items or value is None:
            raise params_length_error(len(items), self.struct_name, self.field_count)
        return value


class AnyParams:
    """Params of a method this server does not implement: whatever they are, the answer is the
    method's "not supported" error (its real params type is not modelled here, so refusing
    ``null`` or ``[]`` would be a difference of its own: the real server reads either for some
    methods, ``configRequirements/read null``, ``skills/list []``)."""

    def decode(self, raw: RawParamsValue) -> RawParamsValue:
        return raw


class RawParams:
    """Params kept as the raw JSON object (for generic handlers)."""

    def __init__(self, struct_name: str | None = None) -> None:
        self.expected = f"struct {struct_name}" if struct_name else "a map"

    def decode(self, raw: RawParamsValue) -> dict[str, JsonValue]:
        if raw is ABSENT or raw is None:
            raise missing_params_error()
        if not isinstance(raw, dict):
            raise params_type_error(raw, self.expected)
        return raw


@dataclass(frozen=True, slots=True)
class MethodSpec(Generic[P]):
    """One client request method (see the module docstring)."""

    name: str
    params: ParamsSpec[P]
    handler: Handler[P] | None = None
    scope: Callable[[P], Hashable | None] | None = None
    connection_scoped: bool = False
    experimental: bool = False
    inline: bool = False
    immediate: ImmediateHandler[P] | None = None

    def __post_init__(self) -> None:
        if self.handler is not None and self.immediate is not None:
            raise ValueError(f"method {self.name!r} has both a handler and an immediate handler")

    @property
    def supported(self) -> bool:
        return self.handler is not None or self.immediate is not None

    def scope_key(self, params: P, connection_id: int) -> Hashable | None:
        """The serialization key of a request with these params, or ``None`` (concurrent)."""
        if self.scope is None:
            return None
        key = self.scope(params)
        if key is None:
            return None
        return (connection_id, key) if self.connection_scoped else key


def default_unsupported_error(spec: MethodSpec[Any]) -> RpcError:
    """What a known but unsupported method answers unless the server layer says otherwise."""
    return RpcError(METHOD_NOT_FOUND, f"{spec.name} is not supported by codex-app-bridge")


class MethodTable:
    """An ordered, name-unique collection of ``MethodSpec``."""

    def __init__(
        self,
        specs: Iterable[MethodSpec[Any]],
        *,
        unsupported_error: Callable[[MethodSpec[Any]], RpcError] = default_unsupported_error,
    ) -> None:
        self._specs: dict[str, MethodSpec[Any]] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"method {spec.name!r} is listed twice")
            self._specs[spec.name] = spec
        self._unsupported_error = unsupported_error
        self.names: tuple[str, ...] = tuple(self._specs)

    def __iter__(self) -> Iterator[MethodSpec[Any]]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def get(self, name: str) -> MethodSpec[Any] | None:
        return self._specs.get(name)

    @property
    def supported_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self if spec.supported)

    @property
    def unsupported_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self if not spec.supported)

    def unknown_method_error(self, method: str) -> RpcError:
        """``Invalid request: unknown variant `x`, expected one of `…`, …`` (every name, in order)."""
        return unknown_method_error(method, self.names)

    def unsupported_error(self, spec: MethodSpec[Any]) -> RpcError:
        """The error a known but unsupported method answers."""
        return self._unsupported_error(spec)
