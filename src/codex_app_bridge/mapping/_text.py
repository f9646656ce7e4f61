"""Text the app-server derives for display: a command line from argv, secrets masked, the
rendered text of a finished review.

* :func:`shlex_join` quotes like the Rust ``shlex`` crate (``try_join``) that Codex uses, which is
  *not* Python's ``shlex.join``: a word is left bare when it only holds ``+-./:@]_`` and ASCII
  letters and digits, single-quoted when it can be, double-quoted (``"`` and ``\\`` escaped with
  a backslash) when it contains ``'`` or ``\\``, and split into differently quoted runs when one
  quoting cannot hold it all (``it's`` gives ``"it's"``; Python would give ``'it'"'"'s'``). An
  argv with a NUL byte is shown as ``<command included NUL byte>``.
* :func:`redact_secrets` applies the four patterns of Codex's ``codex_secrets`` sanitizer (bearer
  tokens, ``sk-`` keys, AWS key ids, ``token=...`` style assignments), in its order and with its
  replacements; 0.163.0 masks command lines and command action texts with it.
* :func:`review_output_text` renders an ``ExitedReviewMode`` result as the ``review`` string of an
  ``exitedReviewMode`` item.

Boundary: pure string functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from codex_app_bridge.projection import rust_trim

__all__ = [
    "REVIEW_FALLBACK_MESSAGE",
    "redact_secrets",
    "review_output_text",
    "shlex_join",
]

REVIEW_FALLBACK_MESSAGE = "Reviewer failed to output a response."
"""The review text when the reviewer produced neither an explanation nor findings."""

_NUL_PLACEHOLDER = "<command included NUL byte>"

_UNQUOTED = frozenset("+-./:@]_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_UNQUOTED_OK, _SINGLE_OK, _DOUBLE_OK = 1, 2, 4


def _allowed(char: str) -> int:
    """The quoting styles one character may appear in (a bit set of the three)."""
    if ord(char) >= 0x80:
        return _SINGLE_OK | _DOUBLE_OK
    allowed = _UNQUOTED_OK if char in _UNQUOTED else 0
    if char not in "'^\\":
        allowed |= _SINGLE_OK
    if char not in "`$!^":
        allowed |= _DOUBLE_OK
    return allowed


def _quote_word(word: str) -> str:
    if not word:
        return "''"
    out: list[str] = []
    rest = word
    while rest:
        # a leading '^' is only safe right after an opening single quote (a bash quirk)
        ok = _SINGLE_OK if rest[0] == "^" else _UNQUOTED_OK | _SINGLE_OK | _DOUBLE_OK
        end = 1 if rest[0] == "^" else 0
        while end < len(rest):
            narrowed = ok & _allowed(rest[end])
            if not narrowed:
                break
            ok = narrowed
            end += 1
        chunk, rest = rest[:end], rest[end:]
        if ok & _UNQUOTED_OK:
            out.append(chunk)
        elif ok & _SINGLE_OK:
            out.append(f"'{chunk}'")
        else:
            escaped = re.sub(r'([$`"\\])', r"\\\1", chunk)
            out.append(f'"{escaped}"')
    return "".join(out)


def shlex_join(argv: Sequence[str]) -> str:
    """argv as one shell-quoted command line, quoted as Codex shows it (see the module doc)."""
    if any("\x00" in word for word in argv):
        return _NUL_PLACEHOLDER
    return " ".join(_quote_word(word) for word in argv)


_BEARER = re.compile(r"(?i:\bBearer)[ \t]+[A-Za-z0-9._~+/-]{16,}=*")
_OPENAI_KEY = re.compile(r"sk-[A-Za-z0-9]{20,}")
_AWS_KEY_ID = re.compile(r"\bAKIA[0-9A-Z]{16}\b")
_ASSIGNMENT = re.compile(
    r"(?i)\b(api[_-]?key|token|secret|password)\b(\s*[:=]\s*)([\"']?)[^\s\"']{8,}"
)
_REDACTED = "[REDACTED_SECRET]"


def redact_secrets(text: str) -> str:
    """``text`` with recognisable credentials replaced by ``[REDACTED_SECRET]``."""
    text = _BEARER.sub(f"Bearer {_REDACTED}", text)
    text = _OPENAI_KEY.sub(_REDACTED, text)
    text = _AWS_KEY_ID.sub(_REDACTED, text)
    return _ASSIGNMENT.sub(rf"\1\2\3{_REDACTED}", text)


def _rust_lines(text: str) -> list[str]:
    """Rust's ``str::lines``: split on ``\\n``, one trailing ``\\r`` dropped per line, no final
    empty line after a trailing newline."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _mapping(value: object) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _findings_block(findings: Iterable[object]) -> str:
    entries = [_mapping(finding) for finding in findings]
    lines = ["", "Full review comments:" if len(entries) > 1 else "Review comment:"]
    for finding in entries:
        location = _mapping(finding.get("code_location"))
        line_range = _mapping(location.get("line_range"))
        where = (
            f"{_text(location.get('absolute_file_path'))}:"
            f"{line_range.get('start', '')}-{line_range.get('end', '')}"
        )
        lines += ["", f"- {_text(finding.get('title'))} — {where}"]
        lines += [f"  {line}" for line in _rust_lines(_text(finding.get("body")))]
    return "\n".join(lines)


def review_output_text(review_output: object) -> str:
    """The ``review`` text of an ``exitedReviewMode`` item for a core ``ReviewOutputEvent``.

    The trimmed overall explanation and the findings block, separated by a blank line; the
    fallback message when there is neither (or no review output at all). Fields that are
    missing or of the wrong type count as empty.
    """
    output = _mapping(review_output)
    sections: list[str] = []
    explanation = rust_trim(_text(output.get("overall_explanation")))
    if explanation:
        sections.append(explanation)
    findings = output.get("findings")
    if isinstance(findings, list) and findings:
        block = rust_trim(_findings_block(cast("list[object]", findings)))
        if block:
            sections.append(block)
    return "\n\n".join(sections) if sections else REVIEW_FALLBACK_MESSAGE
