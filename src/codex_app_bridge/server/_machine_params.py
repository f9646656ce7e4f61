"""Params of the experimental machine methods 0.163.0 serves but whose JSON Schemas it does not
export (``process/*``, ``fuzzyFileSearch/session*``): shaped from the methods as the binary
answers them (``spec/machine-tools.md`` §7.2, §7.5). Their notifications' schemas are exported
(``ProcessOutputDeltaNotification``, ``ProcessExitedNotification``,
``FuzzyFileSearchSession{Updated,Completed}Notification``) and the answers are checked
against them.

Boundary: wire models only.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from codex_app_bridge.protocol._base import WireModel

__all__ = [
    "FuzzyFileSearchSessionStartParams",
    "FuzzyFileSearchSessionStopParams",
    "FuzzyFileSearchSessionUpdateParams",
    "ProcessKillParams",
    "ProcessResizePtyParams",
    "ProcessSpawnParams",
    "ProcessTerminalSize",
    "ProcessWriteStdinParams",
]


class ProcessTerminalSize(WireModel):
    cols: Annotated[int, Field(ge=0)]
    rows: Annotated[int, Field(ge=0)]


class ProcessSpawnParams(WireModel):
    command: list[str]
    cwd: str
    process_handle: Annotated[str, Field(alias="processHandle")]
    env: dict[str, Any] | None = None
    tty: bool | None = None
    size: ProcessTerminalSize | None = None
    stream_stdin: Annotated[bool | None, Field(alias="streamStdin")] = None
    stream_stdout_stderr: Annotated[bool | None, Field(alias="streamStdoutStderr")] = None
    timeout_ms: Annotated[int | None, Field(alias="timeoutMs", ge=0)] = None
    output_bytes_cap: Annotated[int | None, Field(alias="outputBytesCap", ge=0)] = None


class ProcessWriteStdinParams(WireModel):
    process_handle: Annotated[str, Field(alias="processHandle")]
    delta_base64: Annotated[str | None, Field(alias="deltaBase64")] = None
    close_stdin: Annotated[bool | None, Field(alias="closeStdin")] = None


class ProcessResizePtyParams(WireModel):
    process_handle: Annotated[str, Field(alias="processHandle")]
    size: ProcessTerminalSize


class ProcessKillParams(WireModel):
    process_handle: Annotated[str, Field(alias="processHandle")]


class FuzzyFileSearchSessionStartParams(WireModel):
    session_id: Annotated[str, Field(alias="sessionId")]
    roots: list[str]


class FuzzyFileSearchSessionUpdateParams(WireModel):
    session_id: Annotated[str, Field(alias="sessionId")]
    query: str


class FuzzyFileSearchSessionStopParams(WireModel):
    session_id: Annotated[str, Field(alias="sessionId")]
