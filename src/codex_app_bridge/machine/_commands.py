"""Reading a command as core reads it: its argv, its summary for clients, its environment, and
``apply_patch`` run through the shell.

* ``shell_argv``: ``[shell, "-lc", cmd]`` (``login``) or ``[shell, "-c", cmd]``.
* ``parsed_command``: core's ``ParsedCommand`` list (``read`` / ``list_files`` / ``search`` /
  ``unknown``) for a simple command; anything with pipes, redirections or several commands is
  one ``unknown``.
* ``exec_env``: the inherited environment plus the variables 0.163.0 adds (probed).
* ``intercepted_patch``: the patch text and directory of ``apply_patch <<'EOF' … EOF`` (also
  ``applypatch``, after ``cd DIR &&``), which core applies itself instead of running.
* ``plain_commands``: the commands of a script of plain words joined by ``&&`` ``||`` ``;``
  ``|``, as core's exec policy reads it.
* ``proposed_prefix``: the exec-policy amendment an approval request proposes.

Pure.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "CODEX_VERSION",
    "exec_env",
    "intercepted_patch",
    "parsed_command",
    "plain_commands",
    "proposed_prefix",
    "shell_argv",
]

CODEX_VERSION: Final = "0.163.0"
_SIMPLE: Final = re.compile(r"^[\w./@%+=:,~-]+( +[\w./@%+=:,~-]+)*$")
_HEREDOC: Final = re.compile(
    r"^\s*(?:cd\s+(?P<dir>\S+)\s*&&\s*)?(?:apply_patch|applypatch)\s+<<\s*(?P<q>['\"]?)"
    r"(?P<tag>\w+)(?P=q)\s*\n(?P<body>.*)\n(?P=tag)\s*$",
    re.DOTALL,
)


def default_shell(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    shell = env.get("SHELL")
    return shell if shell and os.path.isabs(shell) else "/bin/bash"


def shell_argv(cmd: str, *, shell: str | None = None, login: bool = True) -> list[str]:
    return [shell or default_shell(), "-lc" if login else "-c", cmd]


def _split(cmd: str) -> list[str] | None:
    if not _SIMPLE.match(cmd.strip()):
        return None
    try:
        return shlex.split(cmd)
    except ValueError:
        return None


def parsed_command(cmd: str) -> list[dict[str, Any]]:
    """Core's summary of ``cmd`` for clients (``commandActions``)."""
    words = _split(cmd)
    if words:
        name, args = words[0], [w for w in words[1:] if not w.startswith("-")]
        if name in ("cat", "head", "tail", "less", "more", "nl") and len(args) == 1:
            return [
                {"type": "read", "cmd": cmd, "name": os.path.basename(args[0]), "path": args[0]}
            ]
        if name in ("ls", "tree") and len(args) <= 1:
            return [{"type": "list_files", "cmd": cmd, "path": args[0] if args else None}]
        if name in ("rg", "grep") and 1 <= len(args) <= 2:
            path = args[1] if len(args) == 2 else None
            return [{"type": "search", "cmd": cmd, "query": args[0], "path": path}]
    return [{"type": "unknown", "cmd": cmd}]


_SEPARATORS: Final = frozenset({"&&", "||", ";", "|"})


def plain_commands(cmd: str) -> list[list[str]] | None:
    """The commands of a script made only of plain words (quoted or not) joined by ``&&``,
    ``||``, ``;`` or ``|``, as core's exec policy reads a ``bash -lc`` script; ``None`` for
    anything else (redirections, subshells, expansions, several lines, comments)."""
    if any(c in cmd for c in "$`\n#"):
        return None
    lexer = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    try:
        for token in lexer:
            if token in _SEPARATORS:
                if not commands[-1]:
                    return None
                commands.append([])
            elif token and all(c in "();<>|&" for c in token):
                return None  # a redirection, a subshell, a background job
            else:
                commands[-1].append(token)
    except ValueError:  # an unclosed quote
        return None
    return commands if commands[-1] else None


def proposed_prefix(cmd: str, argv: Sequence[str], prefix_rule: Sequence[str] | None) -> list[str]:
    """The rule an approval request proposes: the model's ``prefix_rule``, else the first
    command of a script of plain commands (``true && sleep 1 && touch x``: ``["true"]``, even
    a known-safe one), else the whole argv (probed)."""
    if prefix_rule:
        return list(prefix_rule)
    commands = plain_commands(cmd)
    return commands[0] if commands else list(argv)


def exec_env(
    base: Mapping[str, str],
    *,
    thread_id: str,
    call_id: str,
    codex_home: str,
) -> dict[str, str]:
    """The environment of a model's command (0.163.0's additions over the server's own)."""
    env = dict(base)
    env.update(
        {
            "NO_COLOR": "1",
            "TERM": "dumb",
            "LANG": "C.UTF-8",
            "LC_CTYPE": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "COLORTERM": "",
            "PAGER": "cat",
            "GIT_PAGER": "cat",
            "GH_PAGER": "cat",
            "CODEX_CI": "1",
            "CODEX_THREAD_ID": thread_id,
            "CODEX_SESSION_ID": thread_id,
            "CODEX_TOOL_CALL_ID": call_id,
            "CODEX_VERSION": CODEX_VERSION,
            "CODEX_HOME": codex_home,
            "CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS": "1",
        }
    )
    return env


def intercepted_patch(cmd: str) -> tuple[str, str | None] | None:
    """``(patch text, directory or None)`` when ``cmd`` runs ``apply_patch`` on a heredoc."""
    match = _HEREDOC.match(cmd)
    if match is None:
        return None
    return match.group("body"), match.group("dir")
