"""``ConfigError``: a configuration Codex refuses, with the texts each request reports it by.

Role: one error value for every way a configuration fails (a file that cannot be read or
parsed, a value of the wrong type, an unknown provider, a removed setting), carrying what the
real server says about it on each path: ``thread/start`` answers ``failed to load
configuration: <detail>`` (:attr:`ConfigError.message`), ``config/read`` and
``modelProvider/capabilities/read`` their own prefixes (:meth:`ConfigError.text_for`), and the
``configWarning`` after ``initialize`` the detail with the file position (:meth:`warning`).

Boundary: values only.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["ConfigError", "ErrorKind"]

ErrorKind = Literal["read", "schema", "semantic", "turn"]
"""``read``: a file cannot be read or parsed; ``schema``: a value serde refuses; ``semantic``: a
valid table Codex refuses later (unknown provider, legacy profile); ``turn``: a problem found
when a request is built (a missing ``env_key`` variable)."""


class ConfigError(Exception):
    """A configuration Codex refuses (see the module docstring)."""

    def __init__(
        self,
        message: str,
        *,
        detail: str | None = None,
        kind: ErrorKind = "turn",
        plain: str | None = None,
        file: str | None = None,
        start: tuple[int, int] | None = None,
        end: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        """The text the requesting client sees (``thread/start``'s for a loading error)."""
        self.detail = message if detail is None else detail
        """The cause without a request prefix (``<file>:<line>:<col>: <text>`` for a file)."""
        self.kind: ErrorKind = kind
        self.plain = self.detail if plain is None else plain
        """The cause as the merged config reports it (``<text>\\nin `<key>`\\n``, no position)."""
        self.file = file
        self.start = start
        self.end = end

    @classmethod
    def loading(
        cls,
        detail: str,
        kind: ErrorKind,
        *,
        plain: str | None = None,
        file: str | None = None,
        start: tuple[int, int] | None = None,
        end: tuple[int, int] | None = None,
    ) -> ConfigError:
        return cls(
            f"failed to load configuration: {detail}",
            detail=detail,
            kind=kind,
            plain=plain,
            file=file,
            start=start,
            end=end,
        )

    def text_for(self, method: Literal["config/read", "capabilities"]) -> str:
        """The ``-32603`` text of ``config/read`` or ``modelProvider/capabilities/read``."""
        if method == "capabilities":
            return f"failed to resolve feature override precedence: {self.detail}"
        if self.kind == "read":
            return f"failed to read configuration layers: {self.detail}"
        if self.kind == "schema":
            return f"invalid configuration: {self.plain}"
        return f"failed to resolve feature override precedence: {self.detail}"

    def warning(self) -> dict[str, Any]:
        """The ``configWarning`` params announcing this error after ``initialize``."""
        params: dict[str, Any] = {
            "summary": "Invalid configuration; using defaults.",
            "details": self.detail,
        }
        if self.file is not None and self.start is not None and self.end is not None:
            params["path"] = self.file
            params["range"] = {
                "start": {"line": self.start[0], "column": self.start[1]},
                "end": {"line": self.end[0], "column": self.end[1]},
            }
        return params
