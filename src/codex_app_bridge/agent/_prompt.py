"""The text a model is given besides the conversation: base instructions and the contextual
messages Codex 0.163.0 records at a thread's first turn.

Role: the base-instructions developer message that opens every request's ``input`` (never
recorded in history, rebuilt per request with a per-thread id), the developer message of
contextual fragments (``developer_instructions``, ``<permissions instructions>``) and the user
message holding ``<environment_context>``, built where and how the real binary builds them
(spec/model-turn.md §3.1-3.2, ``captures/*/model_requests.jsonl``).

The instruction prose is the project's own (``DEFAULT_BASE_INSTRUCTIONS`` and the permission
sentences below); ``base_instructions`` / ``model_instructions_file`` / thread/start
``baseInstructions`` replace the base text. The environment context is data and follows the real
binary's format to the byte. Boundary: values in, ResponseItem dicts out; no I/O but the clock.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from typing import Any, Final

__all__ = [
    "DEFAULT_BASE_INSTRUCTIONS",
    "TURN_ABORTED_TEXT",
    "base_instructions_message",
    "collaboration_mode_text",
    "environment_context_text",
    "permissions_text",
    "world_state",
]

DEFAULT_BASE_INSTRUCTIONS: Final = """\
You are a software engineering agent working for a user inside their project, reached through \
a Codex-compatible app server (codex-app-bridge).

How you work:
- Read before you change. Look at the files, the tests and the history that matter to the task, \
then make the smallest change that does the job well.
- Use the tools you are offered. Commands run in the user's shell with the permissions \
described in the permissions message; respect them and ask for more only when the task needs it.
- Keep the user informed with short progress notes while you work, and end with a concise \
answer: what you did, what you found, and anything that still needs their attention.
- Never invent results. If a command fails or something is uncertain, say so plainly.
- Prefer clear, conventional code that matches the style around it; do not reformat unrelated \
code, do not add licence headers, and leave changes uncommitted unless asked.
- When the task is a question rather than a change, answer it directly and cite the files and \
lines you relied on.
"""
"""The project's own base instructions (used when no config or request replaces them)."""

TURN_ABORTED_TEXT: Final = (
    "<turn_aborted>\n"
    "The user stopped the previous turn before it finished. Commands started in it may have "
    "run partly, and background processes it started may still be running.\n"
    "</turn_aborted>"
)
"""The user message core records after an interrupted turn (a contextual marker: the
projection recognises ``<turn_aborted>``)."""

# a fixed namespace: the base-instructions message id is stable for a thread, as core's is
_BASE_NAMESPACE: Final = uuid.UUID("3b1d0c7e-52d4-4f7a-9b8e-6a2f61c0b7d5")


def base_instructions_message(thread_id: str, text: str) -> dict[str, Any]:
    """The developer message that opens every request (not part of history)."""
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid5(_BASE_NAMESPACE, thread_id)}",
        "role": "developer",
        "content": [{"type": "input_text", "text": text}],
    }


_SANDBOX_SENTENCES: Final = {
    "danger-full-access": (
        "`sandbox_mode` is `danger-full-access`: commands run without a filesystem sandbox and "
        "with network access."
    ),
    "workspace-write": (
        "`sandbox_mode` is `workspace-write`: commands may read any file and write inside the "
        "working directory and the configured writable roots; writing elsewhere needs the "
        "user's approval. Network access is off."
    ),
    "read-only": (
        "`sandbox_mode` is `read-only`: commands may read files but not write them; anything "
        "that writes needs the user's approval. Network access is off."
    ),
}

_APPROVAL_SENTENCES: Final = {
    "never": (
        "The approval policy is `never`: nothing can be escalated, so never set "
        "`sandbox_permissions`; such commands are rejected."
    ),
    "on-request": (
        "The approval policy is `on-request`: when a command needs more than the sandbox "
        "allows, run it with `sandbox_permissions` set to `require_escalated` and a short "
        "`justification`; the user decides."
    ),
    "on-failure": (
        "The approval policy is `on-failure`: commands run in the sandbox first; the user is "
        "asked before one is retried without it."
    ),
    "untrusted": (
        "The approval policy is `untrusted`: commands other than well-known read-only ones "
        "need the user's approval."
    ),
}


def permissions_text(sandbox_mode: str, approval_policy: object) -> str:
    """The ``<permissions instructions>`` fragment (the project's own wording)."""
    sandbox = _SANDBOX_SENTENCES.get(sandbox_mode, _SANDBOX_SENTENCES["read-only"])
    policy = approval_policy if isinstance(approval_policy, str) else "granular"
    approval = _APPROVAL_SENTENCES.get(
        policy,
        "The approval policy is granular: some requests are asked of the user, others are "
        "rejected without asking.",
    )
    return (
        "<permissions instructions>\n"
        "The sandbox decides which files commands may read or write. "
        f"{sandbox}\n{approval}\n"
        "</permissions instructions>"
    )


def collaboration_mode_text(instructions: str) -> str:
    """The ``<collaboration_mode>`` fragment: the mode's instructions between its tags (core
    adds no line breaks)."""
    return f"<collaboration_mode>{instructions}</collaboration_mode>"


def _timezone() -> str:
    tz = os.environ.get("TZ", "").strip().lstrip(":")
    if tz:
        return tz
    try:
        link = os.readlink("/etc/localtime")
    except OSError:
        return "Etc/UTC"
    marker = "zoneinfo/"
    return link[link.index(marker) + len(marker) :] if marker in link else "Etc/UTC"


def _shell() -> str:
    shell = os.environ.get("SHELL", "").strip()
    return os.path.basename(shell) if shell else "bash"


def _permission_profile(sandbox_mode: str, cwd: str, writable_roots: list[str]) -> str:
    if sandbox_mode == "danger-full-access":
        return (
            '<permission_profile type="disabled"><file_system type="unrestricted" />'
            "</permission_profile>"
        )
    entries = ['<entry access="read"><special>:root</special></entry>']
    if sandbox_mode == "workspace-write":
        entries.extend(
            f'<entry access="write"><path>{root}</path></entry>' for root in [cwd, *writable_roots]
        )
        entries.append('<entry access="write"><special>:slash_tmp</special></entry>')
        entries.append('<entry access="write"><special>:tmpdir</special></entry>')
        entries.extend(
            f'<entry access="read"><path>{cwd}/{name}</path></entry>'
            for name in (".git", ".agents", ".codex", ".aws")
        )
    return (
        '<permission_profile type="managed"><file_system type="restricted">'
        + "".join(entries)
        + "</file_system></permission_profile>"
    )


def environment_context_text(
    cwd: str, sandbox_mode: str, writable_roots: list[str] | None = None
) -> str:
    """The ``<environment_context>`` fragment, in the real binary's format."""
    today = time.strftime("%Y-%m-%d", time.localtime())
    profile = _permission_profile(sandbox_mode, cwd, writable_roots or [])
    return (
        "<environment_context>\n"
        f"  <cwd>{cwd}</cwd>\n"
        f"  <shell>{_shell()}</shell>\n"
        f"  <current_date>{today}</current_date>\n"
        f"  <timezone>{_timezone()}</timezone>\n"
        f"  <filesystem><workspace_roots><root>{cwd}</root></workspace_roots>{profile}"
        "</filesystem>\n"
        "</environment_context>"
    )


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def world_state(
    *,
    model: str,
    mode_kind: str,
    mode_instructions: str | None,
    cwd: str,
    sandbox_mode: str,
    writable_roots: list[str] | None,
    permissions: str | None,
    skills: str | None,
) -> dict[str, Any]:
    """The ``world_state`` snapshot 0.163.0 writes to its rollout after a context baseline (a
    thread's first context, a compaction), in its layout. Instruction texts are represented by
    SHA-1 fingerprints of the bridge's own texts (the binary fingerprints its own, so a binary
    continuing a bridge thread sees them differ and records its own context again), the skills
    list by its body."""
    profile = _permission_profile(sandbox_mode, cwd, writable_roots or [])
    body = None
    if skills is not None:
        body = skills.removeprefix("<skills_instructions>").removesuffix("</skills_instructions>")
    return {
        "agents_md": {},
        "apps_instructions": False,
        "collaboration_mode": {
            "mode": mode_kind,
            "model": model,
            "instructions": _digest(mode_instructions or ""),
        },
        "context_window_guidance": "",
        "environments": {
            "environments": {"local": {"cwd": cwd, "status": "available", "shell": _shell()}},
            "current_date": time.strftime("%Y-%m-%d", time.localtime()),
            "timezone": _timezone(),
            "filesystem": (
                f"<filesystem><workspace_roots><root>{cwd}</root></workspace_roots>{profile}"
                "</filesystem>"
            ),
        },
        "environments_instructions": False,
        "git_attribution": False,
        "host_skills": {} if body is None else {"body": body, "includeInstructions": True},
        "managed_developer_instructions": {},
        "model": model,
        "model_catalog": _digest(model),
        "multi_agent_mode": {},
        "permissions": (
            {}
            if permissions is None
            else {"instructions": _digest(permissions), "approved_command_prefixes": []}
        ),
        "persistent_mode": {},
        "plugins_instructions": False,
        "realtime": {"active": False},
        "skills": {"includeInstructions": True},
    }
