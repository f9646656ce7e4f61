"""The codex app-server 0.163.0 wire protocol (v2 plus the v1 handshake) as pydantic models.

Every definition of the upstream JSON Schema bundle has a model here, generated into
``_generated`` by ``protocol-schemas/generate.py`` and re-exported under its schema name
(``Thread``, ``Turn``, ``ThreadStartParams``, ``ItemCompletedNotification``, ...). This package is
pure data: no I/O, no JSON-RPC envelope (``protocol.jsonrpc``), no domain logic.

Conventions

* Python names are snake_case, the wire names are aliases; models are written with the aliases.
  Unknown fields are kept and written back (``WireModel``).
* Tagged unions are ``Annotated[A | B | ..., Field(discriminator=tag)]`` type aliases. Their
  variants are named ``<PascalCaseTag><Union>``: ``AgentMessageThreadItem`` (``type:
  "agentMessage"``), ``TextUserInput``, ``ItemStartedServerNotification`` (``method:
  "item/started"``), ``TurnStartClientRequest``, ``ItemCommandExecutionRequestApprovalServerRequest``.
  The tag field defaults to its only value: ``TextUserInput(text="hi")``.
* Null versus absent follows the real binary: a ``None`` field is written as ``null`` unless the
  binary omits it (``exclude_if``, e.g. ``McpToolCallThreadItem.mcp_app_resource_uri``); see
  ``OMIT_WHEN_NONE`` in ``protocol-schemas/generate.py``.
* ``emittedAtMs``: every server notification of 0.163.0 carries it beside ``method``/``params``;
  the schema declares it on the ``ServerNotification`` envelope, so every notification model has
  an explicit ``emitted_at_ms: int | None``. A notification built without it is written without
  it; whoever sends a notification stamps the wall clock into it at emission, as the real server
  does. Parsing and writing back keeps it.
* ``rawResponseItem/completed`` and ``rawResponse/completed`` (opt-in raw events) are sent by the
  binary but left out of the schema's ``ServerNotification`` union; they have their own models,
  ``RawResponseItemCompletedServerNotification`` and ``RawResponseCompletedServerNotification``
  (params ``RawResponseItemCompletedNotification`` / ``RawResponseCompletedNotification``), built
  like any other notification and accepted by ``SERVER_NOTIFICATION_ADAPTER``.

Adapters (validated once, at the edge): ``SERVER_NOTIFICATION_ADAPTER``,
``CLIENT_REQUEST_ADAPTER``, ``SERVER_REQUEST_ADAPTER``, ``THREAD_ITEM_ADAPTER``,
``USER_INPUT_ADAPTER``; ``<UNION>_ADAPTER`` validates ``Any<Union>``: the variants of the schema
union, and an ``Unknown<Union>`` model (every field kept, written back unchanged) for a tag the
schema does not define. ``parse_<union>(json)`` and ``dump_json(model)`` / ``dump_dict(model)``
convert from and to wire JSON. Method name lists live in ``codex_app_bridge.protocol.v2.methods``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codex_app_bridge.protocol.v2 import _generated_names

if TYPE_CHECKING:
    from codex_app_bridge.protocol.v2._adapters import (
        CLIENT_REQUEST_ADAPTER,
        SERVER_NOTIFICATION_ADAPTER,
        SERVER_REQUEST_ADAPTER,
        THREAD_ITEM_ADAPTER,
        USER_INPUT_ADAPTER,
        AnyClientRequest,
        AnyServerNotification,
        AnyServerRequest,
        AnyThreadItem,
        AnyUserInput,
        UnknownClientRequest,
        UnknownServerNotification,
        UnknownServerRequest,
        UnknownThreadItem,
        UnknownUserInput,
        dump_dict,
        dump_json,
        parse_client_request,
        parse_server_notification,
        parse_server_request,
        parse_thread_item,
        parse_user_input,
    )
    from codex_app_bridge.protocol.v2._generated import *  # noqa: F403 - the generated surface

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
]
_ADAPTER_NAMES = frozenset(__all__)
if TYPE_CHECKING:
    from codex_app_bridge.protocol.v2 import _generated

    __all__ += _generated.__all__
else:
    __all__ += _generated_names.GENERATED_NAMES
_GENERATED_NAMES = frozenset(_generated_names.GENERATED_NAMES)


def __getattr__(name: str) -> object:
    # Every name is looked up on first use (then cached here): a model is created only when
    # something reads it (``protocol._lazy``), the adapters when one of them is read. The
    # generated module itself (and pydantic) is imported only then: the package and its
    # ``methods`` cost nothing to import.
    if name in _ADAPTER_NAMES:
        from codex_app_bridge.protocol.v2 import _adapters

        value: object = getattr(_adapters, name)
    elif name in _GENERATED_NAMES:
        from codex_app_bridge.protocol.v2 import _generated

        value = getattr(_generated, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
