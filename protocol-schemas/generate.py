#!/usr/bin/env python3
"""Regenerate the wire models and the exported schemas from the vendored upstream schema.

Inputs (committed): ``protocol-schemas/codex-app-server/<version>/``, the JSON Schema bundle that
``codex app-server generate-json-schema`` of the pinned codex release writes (descriptions
stripped), pinned by ``PINNED.json``.

Outputs (committed, never edited by hand):

* ``src/codex_app_bridge/protocol/v2/_generated.pyi``: pydantic v2 models for every definition of
  the v2 bundle, plus what the v1 bundle adds (``InitializeResponse``, ``ServerRequest`` and its
  params/responses, ``ClientNotification``), written by the pinned datamodel-code-generator from a
  normalised copy of the bundle (see ``build_bundle``): the typed surface, read by type checkers;
* ``src/codex_app_bridge/protocol/v2/_generated.py``: the same definitions as the module runs them,
  each in a function of its own, defined on first access with what it refers to
  (``protocol._lazy``, see ``lazy_module``), so that importing the models creates no class;
* ``src/codex_app_bridge/protocol/v2/_generated_names.py``: their names alone, so that the
  ``protocol.v2`` package lists what it exports without importing them (or pydantic);
* ``protocol-schemas/core/<Name>.json``: the JSON Schemas of our own hand-written core models
  (``codex_app_bridge.protocol.core.core_json_schemas()``).

Every run that writes also writes ``protocol-schemas/RECORD.json``: the sha256 of each input (this
script, ``PINNED.json``, every module of this package that the core schemas were made from), the
versions of the tools and libraries that shape the outputs (Python, datamodel-code-generator and
what it requires, pydantic, ruff and its configuration) and the sha256 of each output. ``--check``
first compares the tree with that record: when every input, version and output is still the
recorded one, the outputs are what the generator writes, and it stops there (about a second).
Anything else (a hand-edited output, a changed schema, model or generator, another library
version, a missing record) makes it regenerate everything and compare, as ``--check --full``
always does, so drift is always found; the record only saves the regeneration.

Usage::

    python protocol-schemas/generate.py            # rewrite the outputs and the record
    python protocol-schemas/generate.py --check    # exit 1 if an output is out of date
    python protocol-schemas/generate.py --check --full  # the same, never trusting the record
    python protocol-schemas/generate.py --vendor DIR  # re-vendor a fresh generate-json-schema DIR

The generator is pinned: a different datamodel-code-generator or ruff version is refused, since
either would change the bytes that ``--check`` compares.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import hashlib
import importlib
import importlib.metadata
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CODEX_VERSION = "0.163.0"
CODEX_SOURCE = (
    f"codex app-server generate-json-schema --out DIR, run with the codex binary of the PyPI "
    f"wheel openai-codex-cli-bin=={CODEX_VERSION} (empty CODEX_HOME, no --experimental); every "
    f"JSON-Schema 'description' annotation removed, files rewritten with 2-space indentation, "
    f"upstream key order and a trailing newline (protocol-schemas/generate.py --vendor DIR)"
)
DATAMODEL_CODEGEN_VERSION = "0.89.0"
RUFF_VERSION = "0.17.6"

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS_DIR = ROOT / "protocol-schemas"
VENDORED_DIR = SCHEMAS_DIR / "codex-app-server" / CODEX_VERSION
PINNED_PATH = VENDORED_DIR / "PINNED.json"
CORE_DIR = SCHEMAS_DIR / "core"
GENERATED_PATH = ROOT / "src" / "codex_app_bridge" / "protocol" / "v2" / "_generated.py"
GENERATED_STUB_PATH = GENERATED_PATH.with_suffix(".pyi")
RECORD_PATH = SCHEMAS_DIR / "RECORD.json"
PACKAGE = "codex_app_bridge"
GENERATED_NAMES_PATH = GENERATED_PATH.with_name("_generated_names.py")

V2_BUNDLE = "codex_app_server_protocol.v2.schemas.json"
FULL_BUNDLE = "codex_app_server_protocol.schemas.json"
BASE_CLASS = "codex_app_bridge.protocol._base.WireModel"
CORE_MODULE = "codex_app_bridge.protocol.core"

# Definitions of the full (v1 + v2) bundle that are not generated: the JSON-RPC envelope is small
# and hand-written (protocol/jsonrpc.py), and ``v2`` is the namespace holding the v2 definitions.
SKIPPED_FULL_BUNDLE_DEFINITIONS = frozenset(
    {
        "JSONRPCError",
        "JSONRPCErrorError",
        "JSONRPCMessage",
        "JSONRPCNotification",
        "JSONRPCRequest",
        "JSONRPCResponse",
        "v2",
    }
)

# Tag properties of the tagged unions, most preferred first (the serde ``tag = "..."`` of the
# upstream enums). A union is tagged when every branch is an object whose tag property is a
# required single-value string enum.
TAG_PROPERTIES = ("type", "method", "kind", "handlerType", "mode")

# Variant name stems where the tag alone would give two variants the same name.
VARIANT_STEMS: dict[tuple[str, str], str] = {
    ("McpServerElicitationRequestParams", "openai/form"): "OpenaiSlashForm",
}

# Definitions for inline objects that upstream leaves untitled and that would otherwise be
# numbered (``ResourceContent1``) or clash with a definition (``NetworkPolicyAmendment1``). Keys
# are JSON pointers into the definitions, after the tagged unions are split.
INLINE_NAMES: dict[str, str] = {
    "ResourceContent/anyOf/0": "TextResourceContent",
    "ResourceContent/anyOf/1": "BlobResourceContent",
    "ReviewDecision/oneOf/4/properties/network_policy_amendment": "NetworkPolicyAmendmentDecision",
}

# Notifications the real 0.163.0 server sends that its schema leaves out of the ServerNotification
# union (raw events, sent only to threads started with ``experimentalRawEvents: true``). They get
# an envelope model beside the union, named like the union variants.
EXTRA_SERVER_NOTIFICATIONS = {
    "rawResponseItem/completed": "RawResponseItemCompletedNotification",
    "rawResponse/completed": "RawResponseCompletedNotification",
}

# Null versus absent. Every field of a generated model is written on output, ``None`` as ``null``,
# as serde writes an ``Option`` without ``skip_serializing_if``. The fields below are the ones the
# real 0.163.0 binary leaves out when they are ``None`` (``exclude_if=is_none``), and only they.
# Source: the TypeScript bindings the same binary writes (``codex app-server generate-ts``) mark
# them optional without null (``name?: T``), which ts-rs emits for upstream's
# ``#[serde(default, skip_serializing_if = "Option::is_none")] #[ts(optional)]``. Fields marked
# ``name?: T | null`` (``#[ts(optional = nullable)]``) say nothing about serde: they are listed
# only where upstream's source skips them (CommandExecutionRequestApprovalParams, and a probed
# 0.163.0 approval request leaves them out); the server-written others are written as null
# (FileChangeRequestApprovalParams, ChatgptAuthTokensRefreshParams.previousAccountId and
# GetAccountTokenUsageResponse.threadUsage by upstream's source; McpServerOauthLoginCompleted-
# Notification.loginId and MisalignmentErrorDetails.reviewTarget unconfirmed), as are those of
# client request params, which only the server reads (null and absent mean the same to it).
# The round-trip tests over the real captures confirm the fields they contain. Keys are
# definition names after ``build_bundle`` (union variants by their generated names; an entry for
# a union applies to all its variants); values are wire names.
OMIT_WHEN_NONE: dict[str, tuple[str, ...]] = {
    "AccountRateLimitsReadClientRequest": ("params",),
    "AccountUsageReadClientRequest": ("params",),
    "AdditionalFileSystemPermissions": ("globScanMaxDepth", "entries"),
    "AdditionalToolsResponseItem": ("id",),
    "AgentMessageResponseItem": ("id", "internal_chat_message_metadata_passthrough"),
    "AppsInstalledParams": ("forceRefresh",),
    "AppsListParams": ("forceRefetch",),
    "AppsReadParams": ("includeTools",),
    "BlobResourceContent": ("mimeType", "_meta"),
    "ChatgptLoginAccountParams": ("codexStreamlinedLogin", "useHostedLoginSuccessPage"),
    "CommandExecParams": (
        "tty",
        "streamStdin",
        "streamStdoutStderr",
        "disableOutputCap",
        "disableTimeout",
    ),
    "CommandExecWriteParams": ("closeStdin",),
    "CommandExecutionRequestApprovalParams": (
        "approvalId",
        "reason",
        "networkApprovalContext",
        "command",
        "cwd",
        "commandActions",
        "proposedExecpolicyAmendment",
        "proposedNetworkPolicyAmendments",
    ),
    "CompactionResponseItem": ("id", "internal_chat_message_metadata_passthrough"),
    "ConfigBatchWriteParams": ("reloadUserConfig",),
    "ConfigReadParams": ("includeLayers",),
    "ConfigWarningNotification": ("path", "range"),
    "ContextCompactionResponseItem": (
        "id",
        "encrypted_content",
        "internal_chat_message_metadata_passthrough",
    ),
    "CustomToolCallOutputResponseItem": (
        "id",
        "name",
        "internal_chat_message_metadata_passthrough",
    ),
    "CustomToolCallResponseItem": (
        "encrypted_content",
        "id",
        "status",
        "namespace",
        "internal_chat_message_metadata_passthrough",
    ),
    "DynamicToolNamespaceTool": ("deferLoading",),
    "ExternalAgentConfigDetectParams": ("includeHome",),
    "FeedbackUploadParams": ("includeLogs",),
    "FindInPageResponsesApiWebSearchAction": ("url", "pattern"),
    "FsCopyParams": ("recursive",),
    "FunctionCallOutputResponseItem": (
        "id",
        "call_id",
        "name",
        "namespace",
        "internal_chat_message_metadata_passthrough",
    ),
    "FunctionCallResponseItem": (
        "encrypted_content",
        "status",
        "id",
        "namespace",
        "encrypted_function_args",
        "internal_chat_message_metadata_passthrough",
    ),
    "FunctionDynamicToolSpec": ("deferLoading",),
    "GetAccountParams": ("refreshToken",),
    "GetAccountRateLimitsParams": ("supportsLunaReserve", "excludeResetCreditDetails"),
    "GrantedPermissionProfile": ("network", "fileSystem"),
    "HooksListParams": ("cwds",),
    "ImageGenerationCallResponseItem": (
        "encrypted_content",
        "id",
        "revised_prompt",
        "internal_chat_message_metadata_passthrough",
    ),
    # transparentBackground is written as null (probed: thread/read of 0.163.0), although the
    # TypeScript bindings mark it optional
    "ImageGenerationThreadItem": ("savedPath",),
    "InitializeCapabilities": ("explicitGatewayOauth", "mcpServerOpenaiFormElicitation"),
    "InputImageContentItem": ("detail",),
    "InputImageFunctionCallOutputContentItem": ("detail",),
    "InternalChatMessageMetadataPassthrough": ("turn_id",),
    "LocalShellCallResponseItem": (
        "encrypted_content",
        "id",
        "internal_chat_message_metadata_passthrough",
    ),
    "McpElicitationBooleanSchema": ("title", "description", "default"),
    "McpElicitationLegacyTitledEnumSchema": ("title", "description", "enumNames", "default"),
    "McpElicitationNumberSchema": ("title", "description", "minimum", "maximum", "default"),
    "McpElicitationSchema": ("$schema", "required"),
    "McpElicitationStringSchema": (
        "title",
        "description",
        "minLength",
        "maxLength",
        "format",
        "default",
    ),
    "McpElicitationTitledMultiSelectEnumSchema": (
        "title",
        "description",
        "minItems",
        "maxItems",
        "default",
    ),
    "McpElicitationTitledSingleSelectEnumSchema": ("title", "description", "default"),
    "McpElicitationUntitledMultiSelectEnumSchema": (
        "title",
        "description",
        "minItems",
        "maxItems",
        "default",
    ),
    "McpElicitationUntitledSingleSelectEnumSchema": ("title", "description", "default"),
    "McpServerOauthLoginCompletedNotification": ("error",),
    "McpServerOauthLoginResponse": ("loginId",),
    "McpServerToolCallParams": ("arguments", "_meta"),
    "McpServerToolCallResponse": ("structuredContent", "isError", "_meta"),
    "McpToolCallThreadItem": ("mcpAppResourceUri",),
    "MessageResponseItem": (
        "encrypted_content",
        "status",
        "id",
        "phase",
        "internal_chat_message_metadata_passthrough",
    ),
    "MigrationDetails": ("memory",),
    "OpenPageResponsesApiWebSearchAction": ("url",),
    "OutputTextContentItem": ("annotations", "logprobs"),
    "PermissionsRequestApprovalResponse": ("strictAutoReview",),
    "PluginListParams": ("forceRefetch",),
    # not "content": serde skips it only when it holds no reasoning_text part, and writes None
    # as null (captured rollouts: "content": null), though the bindings call it optional
    "ReasoningResponseItem": ("id", "internal_chat_message_metadata_passthrough"),
    "RemoteControlDisableParams": ("ephemeral",),
    "RemoteControlEnableParams": ("ephemeral",),
    "Resource": ("annotations", "description", "mimeType", "size", "title", "icons", "_meta"),
    "ResourceTemplate": ("annotations", "title", "description", "mimeType"),
    "SearchResponsesApiWebSearchAction": ("query", "queries"),
    "ServerNotification": ("emittedAtMs",),
    "SkillInterface": (
        "displayName",
        "shortDescription",
        "iconSmall",
        "iconLarge",
        "brandColor",
        "defaultPrompt",
    ),
    "SkillMetadata": ("shortDescription", "interface", "dependencies"),
    "SkillToolDependency": ("description", "transport", "command", "url"),
    "SkillsListParams": ("cwds", "forceReload"),
    "TextResourceContent": ("mimeType", "_meta"),
    "ThreadForkParams": ("ephemeral", "excludeTurns"),
    "ThreadListParams": ("useStateDbOnly",),
    "ThreadNameUpdatedNotification": ("threadName",),
    "ThreadReadParams": ("includeTurns",),
    "ThreadResumeParams": ("excludeTurns",),
    "Tool": ("title", "description", "outputSchema", "annotations", "icons", "_meta"),
    "ToolSearchCallResponseItem": (
        "encrypted_content",
        "id",
        "status",
        "internal_chat_message_metadata_passthrough",
    ),
    "ToolSearchOutputResponseItem": ("id", "internal_chat_message_metadata_passthrough"),
    "TurnToolOutput": ("retain",),
    "WebSearchCallResponseItem": (
        "encrypted_content",
        "id",
        "status",
        "action",
        "internal_chat_message_metadata_passthrough",
    ),
}

# Fields the binary leaves out when ``None`` or empty (``skip_serializing_if = "Vec::is_empty"``,
# ``v3?: Array<RealtimeVoice>`` with a ``[]`` default): ``exclude_if=is_none_or_empty``.
OMIT_WHEN_EMPTY: dict[str, tuple[str, ...]] = {
    "RealtimeVoicesList": ("v3",),
}


# --------------------------------------------------------------------------------------------
# Vendoring: strip descriptions, write deterministically, pin with sha256
# --------------------------------------------------------------------------------------------

# JSON-Schema keywords whose value is a map from names to subschemas (the names are data: a
# property may be called "description").
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "definitions", "$defs", "dependencies"}
)
# Keywords whose value is data, never a schema: nothing inside is an annotation.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "required"})
_SCHEMA_KEYWORDS = frozenset(
    {
        "$schema", "$ref", "$id", "title", "description", "type", "properties", "required",
        "items", "additionalProperties", "oneOf", "anyOf", "allOf", "not", "enum", "const",
        "format", "default", "definitions", "minimum", "maximum", "pattern",
    }
)  # fmt: skip


def strip_descriptions(schema: Any) -> Any:
    """A copy of ``schema`` without any ``description`` annotation; data keys stay untouched."""
    if isinstance(schema, list):
        return [strip_descriptions(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in ("definitions", "$defs") and isinstance(value, dict):
            out[key] = {name: _strip_definition(sub) for name, sub in value.items()}
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        elif key in _DATA_KEYWORDS:
            out[key] = value
        else:
            out[key] = strip_descriptions(value)
    return out


def _strip_definition(entry: Any) -> Any:
    # ``definitions`` of the full bundle nests the v2 definitions one level deeper, under "v2": a
    # namespace (no schema keyword; only definitions, named like types) rather than a schema.
    if (
        isinstance(entry, dict)
        and entry
        and not (set(entry) & _SCHEMA_KEYWORDS)
        and all(isinstance(v, dict) and k[:1].isupper() for k, v in entry.items())
    ):
        return {name: _strip_definition(sub) for name, sub in entry.items()}
    return strip_descriptions(entry)


def dump_json_text(data: Any) -> str:
    """The one JSON text form of every file this script writes (deterministic)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def vendor(upstream_dir: Path) -> None:
    """Replace the vendored bundle by the schema files of ``upstream_dir`` and re-pin them."""
    files = sorted(p for p in upstream_dir.rglob("*.json") if p.is_file())
    if not files:
        raise SystemExit(f"no JSON files under {upstream_dir}")
    for old in sorted(VENDORED_DIR.rglob("*.json")) if VENDORED_DIR.exists() else []:
        old.unlink()
    pinned_files: dict[str, str] = {}
    upstream_files: dict[str, str] = {}
    for path in files:
        rel = path.relative_to(upstream_dir).as_posix()
        raw = path.read_bytes()
        text = dump_json_text(strip_descriptions(json.loads(raw)))
        target = VENDORED_DIR / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        pinned_files[rel] = sha256_bytes(text.encode("utf-8"))
        upstream_files[rel] = sha256_bytes(raw)
    pinned = {
        "codexVersion": CODEX_VERSION,
        "source": CODEX_SOURCE,
        "files": pinned_files,
        "upstreamFiles": upstream_files,
    }
    PINNED_PATH.write_text(dump_json_text(pinned), encoding="utf-8")
    print(f"vendored {len(files)} schema files into {VENDORED_DIR}")


def verify_pinned() -> None:
    """Fail unless the vendored files are exactly the ones PINNED.json lists, byte for byte."""
    pinned = json.loads(PINNED_PATH.read_text(encoding="utf-8"))
    if pinned.get("codexVersion") != CODEX_VERSION:
        raise SystemExit(
            f"PINNED.json pins codex {pinned.get('codexVersion')}, not {CODEX_VERSION}"
        )
    expected: dict[str, str] = pinned["files"]
    present = {
        p.relative_to(VENDORED_DIR).as_posix()
        for p in VENDORED_DIR.rglob("*.json")
        if p != PINNED_PATH
    }
    problems = [f"missing: {rel}" for rel in sorted(set(expected) - present)]
    problems += [f"not pinned: {rel}" for rel in sorted(present - set(expected))]
    for rel in sorted(set(expected) & present):
        actual = sha256_bytes((VENDORED_DIR / rel).read_bytes())
        if actual != expected[rel]:
            problems.append(f"sha256 mismatch: {rel}")
    if problems:
        raise SystemExit("vendored schema does not match PINNED.json:\n  " + "\n  ".join(problems))


# --------------------------------------------------------------------------------------------
# The normalised bundle datamodel-code-generator reads
# --------------------------------------------------------------------------------------------


def _load_vendored(name: str) -> dict[str, Any]:
    return json.loads((VENDORED_DIR / name).read_text(encoding="utf-8"))


def _pascal(tag: str) -> str:
    """``thread/tokenUsage/updated`` -> ``ThreadTokenUsageUpdated``; ``project_roots`` ->
    ``ProjectRoots``: the readable stem of a union variant's generated name."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", tag) if p]
    return "".join(p[0].upper() + p[1:] for p in parts)


def _walk_refs(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node
        for value in node.values():
            yield from _walk_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk_refs(item)


def _merge_full_bundle(definitions: dict[str, Any]) -> None:
    """Add what only the full bundle defines (server requests, InitializeResponse, ...)."""
    full = _load_vendored(FULL_BUNDLE)["definitions"]
    for name, schema in full.items():
        if name in SKIPPED_FULL_BUNDLE_DEFINITIONS:
            continue
        schema = copy.deepcopy(schema)
        for ref in _walk_refs(schema):
            # the full bundle refers to v2 types as #/definitions/v2/<Name>
            ref["$ref"] = ref["$ref"].replace("#/definitions/v2/", "#/definitions/")
        if name in definitions:
            mine = {k: v for k, v in definitions[name].items() if k not in ("$schema", "title")}
            theirs = {k: v for k, v in schema.items() if k not in ("$schema", "title")}
            if mine != theirs:
                raise SystemExit(f"{name} differs between {V2_BUNDLE} and {FULL_BUNDLE}")
            continue
        definitions[name] = schema


def _flatten_string_enums(schema: dict[str, Any]) -> None:
    """``oneOf`` of string enums (one branch per documented value) -> one string enum."""
    branches = schema.get("oneOf")
    if not isinstance(branches, list) or not branches:
        return
    values: list[str] = []
    for branch in branches:
        if not (
            isinstance(branch, dict)
            and branch.get("type") == "string"
            and isinstance(branch.get("enum"), list)
            and set(branch) <= {"type", "enum", "title"}
        ):
            return
        values.extend(branch["enum"])
    del schema["oneOf"]
    schema["type"] = "string"
    schema["enum"] = values


def _tidy(node: Any) -> None:
    """Drop what would only add noise or override the base class in the generated code.

    * ``title`` of a schema that is not an object: upstream titles every tag property and enum
      ("Item/startedNotificationMethod"); the titles of inline objects stay, they name classes;
    * a boolean ``additionalProperties`` beside ``properties``: every wire model keeps unknown
      fields (``WireModel``: ``extra="allow"``, lossless), which serde's ``deny_unknown_fields``
      would refuse on input; maps (objects without properties) keep theirs.
    """
    if isinstance(node, list):
        for item in node:
            _tidy(item)
        return
    if not isinstance(node, dict):
        return
    if "title" in node and not (node.get("type") == "object" or "properties" in node):
        del node["title"]
    if isinstance(node.get("additionalProperties"), bool) and "properties" in node:
        del node["additionalProperties"]
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for sub in value.values():
                _tidy(sub)
        elif key not in _DATA_KEYWORDS:
            _tidy(value)


def _tag_of(branch: Any) -> tuple[str, str] | None:
    """(tag property, tag value) of a union branch, or None when it has no such tag."""
    if not isinstance(branch, dict) or branch.get("type") != "object":
        return None
    props = branch.get("properties", {})
    for tag in TAG_PROPERTIES:
        prop = props.get(tag)
        if (
            isinstance(prop, dict)
            and prop.get("type") == "string"
            and isinstance(prop.get("enum"), list)
            and len(prop["enum"]) == 1
            and tag in branch.get("required", [])
        ):
            return tag, prop["enum"][0]
    return None


def _tagged_union_property(branches: list[Any]) -> str | None:
    tags = [_tag_of(b) for b in branches]
    if not tags or any(t is None for t in tags):
        return None
    names = {t[0] for t in tags if t is not None}
    return names.pop() if len(names) == 1 else None


def _hoist_tagged_union(name: str, schema: dict[str, Any], definitions: dict[str, Any]) -> None:
    """Give each branch of a tagged union its own definition ``<PascalTag><Union>`` and a
    discriminator, so the union becomes ``Annotated[A | B | ..., Field(discriminator=tag)]``.

    Properties declared beside the ``oneOf`` (``emittedAtMs`` of ServerNotification, the common
    fields of HookMetadata) belong to every branch and are copied into each one.
    """
    branches = schema["oneOf"]
    tag = _tagged_union_property(branches)
    if tag is None:
        return
    shared_props: dict[str, Any] = schema.pop("properties", {})
    shared_required: list[str] = schema.pop("required", [])
    schema.pop("type", None)
    mapping: dict[str, str] = {}
    refs: list[dict[str, str]] = []
    for branch in branches:
        value = branch["properties"][tag]["enum"][0]
        variant = copy.deepcopy(branch)
        variant_name = f"{VARIANT_STEMS.get((name, value), _pascal(value))}{name}"
        if len(branches) == 1:
            variant_name = name  # a one-branch union is that branch
        variant["title"] = variant_name
        variant["properties"] = {**variant["properties"], **copy.deepcopy(shared_props)}
        variant["required"] = [*variant.get("required", []), *shared_required]
        if variant_name in definitions and len(branches) > 1:
            raise SystemExit(f"union variant name {variant_name} collides with a definition")
        if value in mapping:
            raise SystemExit(f"{name}: two branches tagged {tag}={value!r}")
        mapping[value] = f"#/definitions/{variant_name}"
        if len(branches) == 1:
            definitions[name] = variant
            return
        definitions[variant_name] = variant
        refs.append({"$ref": f"#/definitions/{variant_name}"})
    schema["oneOf"] = refs
    schema["discriminator"] = {"propertyName": tag, "mapping": mapping}


def _add_extra_server_notifications(definitions: dict[str, Any]) -> None:
    union_methods = set(definitions["ServerNotification"]["discriminator"]["mapping"])
    template = definitions["ErrorServerNotification"]
    for method, params in EXTRA_SERVER_NOTIFICATIONS.items():
        if method in union_methods:
            raise SystemExit(f"{method} is now in the ServerNotification union: drop it here")
        if params not in definitions:
            raise SystemExit(f"{params} is not defined by the schema")
        variant = copy.deepcopy(template)
        variant_name = f"{_pascal(method)}ServerNotification"
        variant["title"] = variant_name
        variant["properties"]["method"]["enum"] = [method]
        variant["properties"]["params"] = {"$ref": f"#/definitions/{params}"}
        definitions[variant_name] = variant


def _name_inline_objects(definitions: dict[str, Any]) -> None:
    """Move the ``INLINE_NAMES`` objects into definitions of their own, referenced in place."""
    for pointer, name in INLINE_NAMES.items():
        *parents, last = pointer.split("/")
        node: Any = definitions
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.get(part)
            if node is None:
                raise SystemExit(f"INLINE_NAMES: nothing at {pointer}")
        key: Any = int(last) if isinstance(node, list) else last
        target = node[key]
        if target.get("type") != "object" or "title" in target or name in definitions:
            raise SystemExit(f"INLINE_NAMES: {pointer} is not an untitled object or {name} exists")
        definitions[name] = {**target, "title": name}
        node[key] = {"$ref": f"#/definitions/{name}"}


def _mark_omitted(definitions: dict[str, Any]) -> None:
    """Mark the ``OMIT_WHEN_NONE`` / ``OMIT_WHEN_EMPTY`` properties for ``exclude_if``; an entry
    for a union applies to all its variants."""
    tables = ((OMIT_WHEN_NONE, "is_none"), (OMIT_WHEN_EMPTY, "is_none_or_empty"))
    for table, predicate in tables:
        for name, fields in table.items():
            schema = definitions.get(name)
            if schema is None:
                raise SystemExit(f"omit table names an unknown definition {name}")
            if "discriminator" in schema:
                mapping = schema["discriminator"]["mapping"]
                targets = [ref.split("/")[-1] for ref in mapping.values()]
            else:
                targets = [name]
            for target in targets:
                variant = definitions[target]
                for field in fields:
                    props = variant.get("properties", {})
                    if field not in props or field in variant.get("required", []):
                        raise SystemExit(
                            f"omit table: {target}.{field} is not an optional property"
                        )
                    if props[field] is True:  # "any JSON value", spelled so it can carry the mark
                        props[field] = {}
                    props[field]["x-exclude_if"] = predicate


def build_bundle() -> dict[str, Any]:
    """The v2 bundle, completed and normalised for code generation.

    1. the definitions only the full bundle has are merged in (refs rewritten to this bundle);
    2. ``oneOf`` lists of string enums become one enum (one ``Literal``);
    3. tagged unions get one named definition per variant and a discriminator;
    4. envelope models are added for the notifications missing from the union;
    5. the fields of ``OMIT_WHEN_NONE`` / ``OMIT_WHEN_EMPTY`` are marked for ``exclude_if``.
    """
    bundle = _load_vendored(V2_BUNDLE)
    definitions: dict[str, Any] = bundle["definitions"]
    _merge_full_bundle(definitions)
    for name, schema in definitions.items():
        schema.pop("$schema", None)
        _flatten_string_enums(schema)
        _tidy(schema)
        if schema.get("type") == "object" or "properties" in schema:
            schema["title"] = name  # the class is named after the definition
    for name in list(definitions):
        schema = definitions[name]
        if isinstance(schema.get("oneOf"), list):
            _hoist_tagged_union(name, schema, definitions)
    _name_inline_objects(definitions)
    _mark_omitted(definitions)
    _add_extra_server_notifications(definitions)
    return {
        "$schema": bundle["$schema"],
        "title": "CodexAppServerProtocol",
        "definitions": dict(sorted(definitions.items())),
    }


# --------------------------------------------------------------------------------------------
# Code generation
# --------------------------------------------------------------------------------------------

DATAMODEL_CODEGEN_ARGS = (
    "--input-file-type", "jsonschema",
    "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.11",
    "--base-class", BASE_CLASS,
    "--snake-case-field",             # Python names snake_case, wire names as aliases
    "--use-annotated",
    "--use-union-operator",
    "--use-standard-collections",
    "--use-double-quotes",
    "--disable-timestamp",            # deterministic output
    "--enum-field-as-literal", "all",  # enums and discriminators are Literals
    "--use-one-literal-as-default",   # TextUserInput(text=...) needs no type="text"
    "--strict-nullable",              # a field with a default is not Optional unless nullable
    "--use-type-alias",               # unions are type aliases: TypeAdapter(ThreadItem)
    "--use-title-as-name",
    "--skip-root-model",
    "--field-extra-keys-without-x-prefix", "x-exclude_if",
    "--formatters", "builtin",        # ruff formats the result (format_source)
)  # fmt: skip

_EXCLUDE_IF_MARKS = {
    'json_schema_extra={"exclude_if": "is_none"}': "exclude_if=is_none",
    'json_schema_extra={"exclude_if": "is_none_or_empty"}': "exclude_if=is_none_or_empty",
}
_GENERATED_HEADER = f'''"""Wire models of the codex app-server protocol {CODEX_VERSION} (v2 + the v1 handshake).

GENERATED by protocol-schemas/generate.py from protocol-schemas/codex-app-server/{CODEX_VERSION}/
with datamodel-code-generator {DATAMODEL_CODEGEN_VERSION}: do not edit by hand, change the
generator and rerun it. Import these models from ``codex_app_bridge.protocol.v2``.
"""
'''


def check_tool_versions() -> None:
    """Refuse to run with generator or formatter versions other than the pinned ones."""
    for dist, pinned in (
        ("datamodel-code-generator", DATAMODEL_CODEGEN_VERSION),
        ("ruff", RUFF_VERSION),
    ):
        try:
            installed = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            raise SystemExit(
                f"{dist}=={pinned} is not installed; install the test extra: "
                f"pip install -e '.[test]'"
            ) from None
        if installed != pinned:
            raise SystemExit(
                f"{dist} {installed} is installed but the generator is pinned to {pinned}: "
                f"pip install '{dist}=={pinned}' (another version writes other bytes)"
            )


def format_source(source: str, filename: str) -> str:
    """``ruff format`` with the project's configuration (pyproject.toml)."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", filename, "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"ruff format failed:\n{result.stderr}")
    return result.stdout


def _count_marks(bundle: dict[str, Any]) -> int:
    return sum(
        1
        for schema in bundle["definitions"].values()
        for prop in schema.get("properties", {}).values()
        if isinstance(prop, dict) and "x-exclude_if" in prop
    )


def _postprocess(source: str) -> str:
    """Turn the omit-when-none marks into ``exclude_if=is_none`` and put our header on top."""
    for mark, replacement in _EXCLUDE_IF_MARKS.items():
        source = source.replace(mark, replacement)
    base_import = "from codex_app_bridge.protocol._base import WireModel\n"
    if source.count(base_import) != 1:
        raise SystemExit("unexpected import layout in the datamodel-codegen output")
    source = source.replace(
        base_import,
        "from codex_app_bridge.protocol._base import WireModel, is_none, is_none_or_empty\n",
    )
    body = source[source.index("from __future__ import annotations") :]
    exported: list[str] = []
    for node in ast.parse(body).body:
        if isinstance(node, ast.ClassDef):
            exported.append(node.name)
        elif isinstance(node, ast.Assign):
            exported.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    all_list = "".join(f'    "{name}",\n' for name in sorted(exported))
    return f"{_GENERATED_HEADER}\n{body.rstrip()}\n\n\n__all__ = [\n{all_list}]\n"


def render_models() -> str:
    """The text of ``_generated.pyi``: the models as datamodel-codegen writes them."""
    bundle = build_bundle()
    with tempfile.TemporaryDirectory(prefix="codex-wire-") as tmp:
        bundle_path = Path(tmp) / "codex_app_server_protocol.json"
        out_path = Path(tmp) / "_generated.py"
        bundle_path.write_text(dump_json_text(bundle), encoding="utf-8")
        result = subprocess.run(
            [
                sys.executable, "-W", "ignore", "-m", "datamodel_code_generator",
                "--input", str(bundle_path), "--output", str(out_path),
                *DATAMODEL_CODEGEN_ARGS,
            ],
            capture_output=True,
            text=True,
            cwd=tmp,
            check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise SystemExit(f"datamodel-codegen failed:\n{result.stderr}")
        source = out_path.read_text(encoding="utf-8")
    # Each marked property gives at least one mark (a property shared by the branches of an
    # inline union gives one per branch).
    if sum(source.count(mark) for mark in _EXCLUDE_IF_MARKS) < _count_marks(bundle):
        raise SystemExit("datamodel-codegen dropped some omit-when-none marks")
    return format_source(_postprocess(source), str(GENERATED_PATH.relative_to(ROOT)))


_LAZY_HEADER = f'''"""Wire models of the codex app-server protocol {CODEX_VERSION}: the runtime half.

GENERATED by protocol-schemas/generate.py: do not edit by hand. The definitions, typed and
readable, are in ``_generated.pyi``; here each one is the body of a function, run the first time
its name is read from this module, together with the names it refers to (``protocol._lazy``).
Import these models from ``codex_app_bridge.protocol.v2``.
"""
'''


def _defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name) and t.id != "__all__"]
    return []


def _referenced_names(node: ast.stmt, defined: set[str]) -> list[str]:
    """The module names a definition refers to, in annotations and string forward refs too."""
    found: dict[str, None] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in defined:
            found[sub.id] = None
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                parsed = ast.parse(sub.value, mode="eval")
            except SyntaxError:
                continue
            found.update(
                (n.id, None)
                for n in ast.walk(parsed)
                if isinstance(n, ast.Name) and n.id in defined
            )
    for own in _defined_names(node):
        found.pop(own, None)
    return list(found)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
"""A line with its end, split as ``ast`` splits source (``\\r\\n``, ``\\r``, ``\\n`` only)."""


def _source_segment(lines: list[str], node: ast.stmt) -> str:
    """``ast.get_source_segment(source, node)`` from the lines of ``source`` split once by
    ``_LINE`` (the standard function splits the whole source again on every call, character by
    character: quadratic over the thousand definitions of the stub, 80 s of CPU)."""
    assert node.end_lineno is not None
    assert node.end_col_offset is not None
    first, last = node.lineno - 1, node.end_lineno - 1
    start = lines[first].encode()[node.col_offset :].decode()
    if first == last:
        return lines[first].encode()[node.col_offset : node.end_col_offset].decode()
    end = lines[last].encode()[: node.end_col_offset].decode()
    return "".join([start, *lines[first + 1 : last], end])


def lazy_module(models: str) -> str:
    """The text of ``_generated.py`` from the text of the stub: one function per definition.

    Each definition keeps its source; ``global`` makes a class keep its plain ``__qualname__``.
    The table maps every name, in module order, to its function and the names it refers to.
    """
    tree = ast.parse(models)
    lines = _LINE.findall(models)
    statements = [node for node in tree.body if _defined_names(node)]
    defined = {name for node in statements for name in _defined_names(node)}
    imports = [
        _source_segment(lines, node)
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
    ]
    # no ``from __future__ import annotations``: pydantic takes each field's type as the class
    # body made it instead of compiling and evaluating its text (about a fifth of making a
    # class). The definitions come in an order where each names only those before it (a
    # function defines what it refers to first), so every annotation can be made with its class;
    # a forward reference would fail as its class is made (``tests/protocol/test_lazy_build``
    # makes them all)
    parts = [
        _LAZY_HEADER,
        *(f"{line}\n" for line in imports),
        "from codex_app_bridge.protocol._lazy import LazyNamespace\n",
        "from codex_app_bridge.protocol.v2._generated_names import GENERATED_NAMES\n",
    ]
    table: list[str] = []
    for node in statements:
        names = _defined_names(node)
        source = _source_segment(lines, node)
        body = "\n".join(f"    {line}" if line else "" for line in source.splitlines())
        func = f"_define_{names[0]}"
        parts.append(f"\n\ndef {func}() -> None:\n    global {', '.join(names)}\n{body}\n")
        refs = _referenced_names(node, defined)
        table.extend(f"    {name!r}: ({func}, {tuple(refs)!r}),\n" for name in names)
    parts.append(
        "\n\n_NAMESPACE = LazyNamespace(\n    __name__,\n    globals(),\n    {\n"
        + "".join(table)
        + "    },\n)\n\n\n"
        "def __getattr__(name: str) -> object:\n    return _NAMESPACE.load(name)\n\n\n"
        "def __dir__() -> list[str]:\n    return sorted({*globals(), *__all__})\n\n\n"
        "__all__ = list(GENERATED_NAMES)  # what ``names_module`` lists: these definitions\n"
    )
    return "".join(parts)


_NAMES_HEADER = f'''"""The names of the wire models of the codex app-server protocol {CODEX_VERSION}.

GENERATED by protocol-schemas/generate.py: do not edit by hand. What ``_generated`` defines, listed
without importing it: ``codex_app_bridge.protocol.v2`` exports these names and loads the models
(and pydantic) only when one of them is read.
"""
'''


def names_module(models: str) -> str:
    """The text of ``_generated_names.py``: the names ``lazy_module`` defines, in its order."""
    tree = ast.parse(models)
    defined = {name for node in tree.body for name in _defined_names(node)}
    names = "".join(f"    {name!r},\n" for name in sorted(defined))
    return (
        _NAMES_HEADER
        + "\nfrom __future__ import annotations\n\n"
        + f"GENERATED_NAMES: tuple[str, ...] = (\n{names})\n"
    )


def render_core_schemas() -> dict[Path, str]:
    """``protocol-schemas/core/<Name>.json`` for every hand-written core model."""
    sys.path.insert(0, str(ROOT / "src"))
    try:
        core = importlib.import_module(CORE_MODULE)
    finally:
        sys.path.pop(0)
    schemas: dict[str, dict[str, Any]] = core.core_json_schemas()
    return {
        CORE_DIR / f"{name}.json": dump_json_text(schema)
        for name, schema in sorted(schemas.items())
    }


def outputs() -> dict[Path, str]:
    """Every generated file, path -> text."""
    models = render_models()
    lazy = format_source(lazy_module(models), str(GENERATED_PATH.relative_to(ROOT)))
    names = format_source(names_module(models), str(GENERATED_NAMES_PATH.relative_to(ROOT)))
    result = {GENERATED_STUB_PATH: models, GENERATED_PATH: lazy, GENERATED_NAMES_PATH: names}
    result.update(render_core_schemas())
    return result


def _diff_summary(rel: Path, old: str, new: str, limit: int = 40) -> str:
    diff = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), str(rel), f"{rel} (regenerated)", lineterm="", n=1
        )
    )
    more = [f"... {len(diff) - limit} more diff lines"] if len(diff) > limit else []
    return "\n".join(diff[:limit] + more)


def _stale_core_files(expected: dict[Path, str], core_present: bool) -> list[Path]:
    if not core_present or not CORE_DIR.exists():
        return []
    return sorted(set(CORE_DIR.glob("*.json")) - set(expected))


def check(expected: dict[Path, str], *, core_present: bool) -> int:
    """Compare the committed outputs with freshly generated ones; 1 on any drift."""
    drift: list[str] = []
    for path, text in expected.items():
        rel = path.relative_to(ROOT)
        if not path.exists():
            drift.append(f"{rel}: missing")
            continue
        old = path.read_text(encoding="utf-8")
        if old != text:
            drift.append(f"{rel}: out of date\n{_diff_summary(rel, old, text)}")
    for stale in _stale_core_files(expected, core_present):
        drift.append(f"{stale.relative_to(ROOT)}: no core model exports it any more")
    if drift:
        print("generated files are out of date (run: python protocol-schemas/generate.py)")
        for entry in drift:
            print(entry)
        return 1
    print(f"up to date: {len(expected)} generated file(s)")
    return 0


def write(expected: dict[Path, str], *, core_present: bool) -> None:
    """(Re)write the outputs that changed; remove core schemas no model exports any more."""
    for path, text in expected.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    for stale in _stale_core_files(expected, core_present):
        stale.unlink()
        print(f"removed {stale.relative_to(ROOT)}")


# --------------------------------------------------------------------------------------------
# The record of the last run: what --check compares before it regenerates anything
# --------------------------------------------------------------------------------------------

_RECORD_NOTE = (
    "Written by protocol-schemas/generate.py with the outputs: the sha256 of every input and output "
    "of that run and the versions that shaped them. generate.py --check regenerates nothing while "
    "all of them still match. Never edit by hand: run generate.py."
)
_SHAPING_DISTRIBUTIONS = ("datamodel-code-generator", "pydantic", "pydantic-core", "ruff")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _requirement_names(dist: str) -> Iterator[str]:
    """The distributions ``dist`` requires, extras left out (names as written)."""
    for requirement in importlib.metadata.requires(dist) or []:
        if re.search(r"\bextra\b", requirement.partition(";")[2]):
            continue
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        if match:
            yield match.group(0)


def environment() -> dict[str, str]:
    """The versions that shape the outputs: Python, the generator and every installed distribution
    it requires (transitively), pydantic (the core schemas), ruff and its configuration."""
    versions: dict[str, str] = {"python": "{}.{}".format(*sys.version_info[:2])}
    pending = list(_SHAPING_DISTRIBUTIONS)
    while pending:
        dist = pending.pop()
        key = re.sub(r"[-_.]+", "-", dist).lower()
        if key in versions:
            continue
        try:
            versions[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue  # a requirement for another platform or Python
        pending.extend(_requirement_names(dist))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    ruff_config = json.dumps(pyproject.get("tool", {}).get("ruff", {}), sort_keys=True)
    versions["ruff configuration (pyproject.toml [tool.ruff], sha256)"] = sha256_bytes(
        ruff_config.encode("utf-8")
    )
    return dict(sorted(versions.items()))


def loaded_inputs() -> list[Path]:
    """This script, PINNED.json (which pins every vendored file) and the source of every module of
    the package loaded so far (after ``outputs()``: what the core schemas were made from)."""
    modules: set[Path] = set()
    for name, module in list(sys.modules.items()):
        if name != PACKAGE and not name.startswith(f"{PACKAGE}."):
            continue
        origin = getattr(module, "__file__", None)
        if origin is None:
            continue
        path = Path(origin).resolve()
        if not path.is_relative_to(ROOT / "src"):
            raise SystemExit(f"{name} was imported from {path}, not from {ROOT / 'src'}")
        modules.add(path)
    return [Path(__file__).resolve(), PINNED_PATH, *sorted(modules)]


def make_record(inputs: list[Path], expected: dict[Path, str]) -> dict[str, Any]:
    return {
        "note": _RECORD_NOTE,
        "environment": environment(),
        "inputs": {_rel(path): sha256_bytes(path.read_bytes()) for path in inputs},
        "outputs": {
            _rel(path): sha256_bytes(text.encode("utf-8"))
            for path, text in sorted(expected.items())
        },
    }


def record_differences() -> list[str]:
    """Why the record cannot vouch for the outputs (empty: every input, version and output is the
    recorded one, and no core schema is there that the record does not list)."""
    if not RECORD_PATH.exists():
        return [f"no {_rel(RECORD_PATH)}"]
    try:
        record = json.loads(RECORD_PATH.read_text(encoding="utf-8"))
        recorded_env: dict[str, str] = record["environment"]
        files: dict[str, str] = {**record["inputs"], **record["outputs"]}
        output_names = set(record["outputs"])
    except (ValueError, KeyError, TypeError):
        return [f"{_rel(RECORD_PATH)} is not a record generate.py wrote"]
    differences = [
        f"{name} {version} (recorded: {recorded_env.get(name, 'none')})"
        for name, version in environment().items()
        if recorded_env.get(name) != version
    ]
    differences += [
        f"{name} is no longer used" for name in sorted(set(recorded_env) - set(environment()))
    ]
    for rel, digest in files.items():
        path = ROOT / rel
        if not path.is_file():
            differences.append(f"{rel}: missing")
        elif sha256_bytes(path.read_bytes()) != digest:
            differences.append(f"{rel}: changed")
    present = {_rel(path) for path in CORE_DIR.glob("*.json")} if CORE_DIR.exists() else set()
    differences += [f"{rel}: not recorded" for rel in sorted(present - output_names)]
    return differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if an output is out of date")
    parser.add_argument(
        "--full", action="store_true", help="with --check: regenerate even if the record matches"
    )
    parser.add_argument("--vendor", type=Path, metavar="DIR", help="re-vendor a schema directory")
    args = parser.parse_args(argv)
    if args.vendor is not None:
        vendor(args.vendor)
    verify_pinned()
    check_tool_versions()
    if args.check and not args.full:
        differences = record_differences()
        if not differences:
            recorded = len(json.loads(RECORD_PATH.read_text(encoding="utf-8"))["outputs"])
            print(
                f"up to date: {recorded} generated file(s), inputs and outputs as recorded in "
                f"{_rel(RECORD_PATH)}"
            )
            return 0
        print(f"regenerating to compare, the record does not match: {'; '.join(differences)}")
    expected = outputs()
    core_present = any(path.parent == CORE_DIR for path in expected)
    if args.check:
        status = check(expected, core_present=core_present)
        if status == 0 and not args.full:
            print(f"(run python protocol-schemas/generate.py to refresh {_rel(RECORD_PATH)})")
        return status
    write(expected, core_present=core_present)
    RECORD_PATH.write_text(dump_json_text(make_record(loaded_inputs(), expected)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
