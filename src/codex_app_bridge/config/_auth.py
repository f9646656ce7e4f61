"""``CODEX_HOME/auth.json``: the API key ``account/login/start`` stores, as Codex 0.163.0 does.

Role: read, write and delete the login file. An API-key login writes
``{"auth_mode": "apikey", "OPENAI_API_KEY": <key>}`` pretty-printed with two spaces and no final
newline, mode 0600, replacing the file atomically; logout deletes it.

Boundary: this one file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Final, cast

__all__ = ["AUTH_FILE", "delete_auth", "read_api_key", "read_auth", "write_api_key"]

AUTH_FILE: Final = "auth.json"


def read_auth(codex_home: Path) -> dict[str, Any] | None:
    """The stored login, or ``None`` (no file, or not a JSON object)."""
    try:
        data = json.loads((codex_home / AUTH_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return cast("dict[str, Any]", data) if isinstance(data, dict) else None


def read_api_key(codex_home: Path) -> str | None:
    """The API key of an API-key login, or ``None``."""
    auth = read_auth(codex_home)
    if auth is None:
        return None
    key = auth.get("OPENAI_API_KEY")
    return key if isinstance(key, str) else None


def write_api_key(codex_home: Path, api_key: str) -> None:
    """Store an API-key login (replacing any other)."""
    codex_home.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"auth_mode": "apikey", "OPENAI_API_KEY": api_key}, indent=2)
    fd, tmp = tempfile.mkstemp(dir=codex_home, prefix=".auth.json.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, codex_home / AUTH_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def delete_auth(codex_home: Path) -> bool:
    """Forget the stored login; whether there was one."""
    try:
        (codex_home / AUTH_FILE).unlink()
    except FileNotFoundError:
        return False
    return True
