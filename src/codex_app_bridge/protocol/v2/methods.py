"""Method names of the codex app-server protocol 0.163.0, in the order the real server uses.

* ``ALL_CLIENT_REQUEST_METHODS``: every method the 0.163.0 binary dispatches, in the order its
  ``unknown variant `...`, expected one of ...`` error lists them (probed from the binary; the
  conformance tests check it again). The rpc layer writes that error from this tuple.
* ``CLIENT_REQUEST_METHODS``: the stable ones, exactly the ``ClientRequest`` union of the vendored
  schema (``ClientRequest.json``), same order; they have generated models.
* ``EXPERIMENTAL_CLIENT_REQUEST_METHODS``: methods that need ``capabilities.experimentalApi``.
  The vendored (stable) schema does not mark them, it leaves them out; this list is what
  ``codex app-server generate-json-schema --experimental`` adds to ``ClientRequest.json``
  (checked by a conformance test). They have no generated models: their requests parse into
  ``UnknownClientRequest``.
* ``LEGACY_CLIENT_REQUEST_METHODS``: v1 methods the binary still routes but no schema lists.
* Server-side tags: ``SERVER_NOTIFICATION_METHODS`` and ``SERVER_REQUEST_METHODS`` come from the
  generated unions; ``RAW_SERVER_NOTIFICATION_METHODS`` are the opt-in raw-event notifications
  the binary sends but the schema leaves out of the union.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

__all__ = [
    "ALL_CLIENT_REQUEST_METHODS",
    "CLIENT_NOTIFICATION_METHODS",
    "CLIENT_REQUEST_METHODS",
    "EXPERIMENTAL_CLIENT_REQUEST_METHODS",
    "EXPERIMENTAL_SERVER_REQUEST_METHODS",
    "LEGACY_CLIENT_REQUEST_METHODS",
    "RAW_SERVER_NOTIFICATION_METHODS",
    "SERVER_NOTIFICATION_METHODS",
    "SERVER_REQUEST_METHODS",
]

ALL_CLIENT_REQUEST_METHODS: tuple[str, ...] = (
    "initialize",
    "server/diagnostics",
    "userVerification/status",
    "userVerification/enroll",
    "userVerification/delete",
    "userVerification/verify",
    "userVerification/cancel",
    "thread/start",
    "thread/resume",
    "thread/fork",
    "thread/archive",
    "thread/delete",
    "thread/unsubscribe",
    "thread/increment_elicitation",
    "thread/decrement_elicitation",
    "thread/name/set",
    "thread/prediction/request",
    "thread/goal/set",
    "thread/goal/get",
    "thread/goal/clear",
    "thread/queue/add",
    "thread/queue/list",
    "thread/queue/update",
    "thread/queue/delete",
    "thread/queue/reorder",
    "thread/queue/start",
    "thread/metadata/update",
    "thread/attachment/add",
    "thread/attachment/list",
    "thread/attachmentOwner/list",
    "thread/attachment/remove",
    "thread/section/move",
    "thread/settings/update",
    "thread/memoryMode/set",
    "memory/status",
    "memory/reset",
    "rollout/compress",
    "thread/unarchive",
    "thread/compact/start",
    "thread/shellCommand",
    "thread/approveGuardianDeniedAction",
    "thread/backgroundTerminals/clean",
    "thread/backgroundTerminals/list",
    "thread/backgroundTerminals/terminate",
    "thread/revert",
    "thread/list",
    "project/list",
    "project/read",
    "project/create",
    "project/import",
    "project/update",
    "project/move",
    "project/delete",
    "threadSection/list",
    "threadSection/create",
    "threadSection/update",
    "threadSection/delete",
    "thread/search",
    "thread/searchOccurrences",
    "thread/loaded/list",
    "thread/read",
    "thread/readState/update",
    "thread/turns/list",
    "thread/items/list",
    "thread/items/read",
    "thread/inject_items",
    "skills/list",
    "skills/extraRoots/set",
    "hooks/list",
    "marketplace/add",
    "marketplace/remove",
    "marketplace/upgrade",
    "plugin/list",
    "plugin/search",
    "plugin/installed",
    "plugin/reconcile",
    "plugin/read",
    "plugin/skill/read",
    "plugin/share/save",
    "plugin/share/updateTargets",
    "plugin/share/list",
    "plugin/share/checkout",
    "plugin/share/delete",
    "app/read",
    "app/list",
    "app/installed",
    "fs/readFile",
    "fs/writeFile",
    "fs/createDirectory",
    "fs/getMetadata",
    "fs/readDirectory",
    "fs/remove",
    "fs/copy",
    "fs/watch",
    "fs/unwatch",
    "skills/config/write",
    "plugin/install",
    "plugin/uninstall",
    "turn/start",
    "turn/settings/update",
    "turn/steer",
    "turn/interrupt",
    "thread/realtime/start",
    "thread/realtime/appendAudio",
    "thread/realtime/appendText",
    "thread/realtime/appendSpeech",
    "thread/realtime/stop",
    "thread/timeline/list",
    "thread/realtime/listVoices",
    "review/start",
    "model/list",
    "account/gatewayOAuth/read",
    "account/gatewayOAuth/login",
    "account/gatewayOAuth/cancel",
    "modelProvider/capabilities/read",
    "experimentalFeature/list",
    "permissionProfile/list",
    "experimentalFeature/enablement/set",
    "remoteControl/enable",
    "remoteControl/disable",
    "remoteControl/status/read",
    "remoteControl/pairing/start",
    "remoteControl/pairing/status",
    "remoteControl/client/list",
    "remoteControl/client/revoke",
    "collaborationMode/list",
    "mock/experimentalMethod",
    "environment/add",
    "environment/info",
    "environment/status",
    "mcpServer/oauth/login",
    "config/mcpServer/reload",
    "mcpServerStatus/list",
    "mcpServer/resource/read",
    "mcpServer/event/stream/start",
    "mcpServer/event/stream/stop",
    "mcpServer/tool/call",
    "windowsSandbox/setupStart",
    "windowsSandbox/readiness",
    "account/login/start",
    "account/bedrock/discover",
    "account/bedrock/setup",
    "account/bedrock/checkGovCloudRequirements",
    "account/login/cancel",
    "account/logout",
    "account/rateLimits/read",
    "account/rateLimitResetCredit/consume",
    "account/usage/read",
    "account/workspaceMessages/read",
    "account/sendAddCreditsNudgeEmail",
    "feedback/upload",
    "command/exec",
    "command/exec/write",
    "command/exec/terminate",
    "command/exec/resize",
    "process/spawn",
    "process/writeStdin",
    "process/kill",
    "process/resizePty",
    "config/read",
    "externalAgentConfig/detect",
    "externalAgentConfig/import",
    "externalAgentConfig/import/recordHistory",
    "externalAgentConfig/import/readHistories",
    "config/value/write",
    "config/batchWrite",
    "configRequirements/read",
    "account/read",
    "getConversationSummary",
    "gitDiffToRemote",
    "getAuthStatus",
    "fuzzyFileSearch",
    "fuzzyFileSearch/sessionStart",
    "fuzzyFileSearch/sessionUpdate",
    "fuzzyFileSearch/sessionStop",
)

EXPERIMENTAL_CLIENT_REQUEST_METHODS: tuple[str, ...] = (
    "server/diagnostics",
    "userVerification/status",
    "userVerification/enroll",
    "userVerification/delete",
    "userVerification/verify",
    "userVerification/cancel",
    "thread/increment_elicitation",
    "thread/decrement_elicitation",
    "thread/prediction/request",
    "thread/queue/add",
    "thread/queue/list",
    "thread/queue/update",
    "thread/queue/delete",
    "thread/queue/reorder",
    "thread/queue/start",
    "thread/settings/update",
    "thread/memoryMode/set",
    "memory/status",
    "memory/reset",
    "rollout/compress",
    "thread/backgroundTerminals/clean",
    "thread/backgroundTerminals/list",
    "thread/backgroundTerminals/terminate",
    "project/list",
    "project/read",
    "project/create",
    "project/import",
    "project/update",
    "project/move",
    "project/delete",
    "thread/search",
    "thread/searchOccurrences",
    "thread/readState/update",
    "thread/items/read",
    "plugin/search",
    "turn/settings/update",
    "thread/realtime/start",
    "thread/realtime/appendAudio",
    "thread/realtime/appendText",
    "thread/realtime/appendSpeech",
    "thread/realtime/stop",
    "thread/timeline/list",
    "thread/realtime/listVoices",
    "remoteControl/enable",
    "remoteControl/disable",
    "remoteControl/status/read",
    "remoteControl/pairing/start",
    "remoteControl/pairing/status",
    "remoteControl/client/list",
    "remoteControl/client/revoke",
    "collaborationMode/list",
    "mock/experimentalMethod",
    "environment/add",
    "environment/info",
    "environment/status",
    "mcpServer/event/stream/start",
    "mcpServer/event/stream/stop",
    "account/bedrock/discover",
    "account/bedrock/setup",
    "account/bedrock/checkGovCloudRequirements",
    "process/spawn",
    "process/writeStdin",
    "process/kill",
    "process/resizePty",
    "fuzzyFileSearch/sessionStart",
    "fuzzyFileSearch/sessionUpdate",
    "fuzzyFileSearch/sessionStop",
)

LEGACY_CLIENT_REQUEST_METHODS: tuple[str, ...] = (
    "getConversationSummary",
    "gitDiffToRemote",
    "getAuthStatus",
)

CLIENT_REQUEST_METHODS: tuple[str, ...] = tuple(
    method
    for method in ALL_CLIENT_REQUEST_METHODS
    if method not in EXPERIMENTAL_CLIENT_REQUEST_METHODS
    and method not in LEGACY_CLIENT_REQUEST_METHODS
)

if TYPE_CHECKING:
    CLIENT_NOTIFICATION_METHODS: tuple[str, ...]
    SERVER_NOTIFICATION_METHODS: tuple[str, ...]
    SERVER_REQUEST_METHODS: tuple[str, ...]


# Read from the generated unions when first used (module ``__getattr__``): listing a union's
# tags creates every model of the union, which nothing needs to answer ``initialize``.
def _tags(union: str) -> Callable[[], tuple[str, ...]]:
    def read() -> tuple[str, ...]:
        # the models (and pydantic) are loaded here, not when the method names are imported
        from codex_app_bridge.protocol.v2 import _generated
        from codex_app_bridge.protocol.v2._adapters import tags_of

        return tags_of(getattr(_generated, union), "method")

    return read


_FROM_UNIONS: dict[str, Callable[[], tuple[str, ...]]] = {
    "CLIENT_NOTIFICATION_METHODS": _tags("ClientNotification"),
    "SERVER_NOTIFICATION_METHODS": _tags("ServerNotification"),
    "SERVER_REQUEST_METHODS": _tags("ServerRequest"),
}


def __getattr__(name: str) -> tuple[str, ...]:
    factory = _FROM_UNIONS.get(name)
    if factory is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name)
    value = globals()[name] = factory()
    return value


RAW_SERVER_NOTIFICATION_METHODS: tuple[str, ...] = (
    "rawResponseItem/completed",
    "rawResponse/completed",
)

# ``generate-json-schema --experimental`` adds one server request; no notification.
EXPERIMENTAL_SERVER_REQUEST_METHODS: tuple[str, ...] = ("currentTime/read",)
