"""Logging set-up for every command: logs go to stderr only, never stdout.

``LOG_LEVEL`` (default ``WARNING``; one of ``LEVELS``, any case) sets the level; ``LOG_FORMAT=json`` switches to one JSON object
per line.
"""

from __future__ import annotations

import logging
import os
import sys

import orjson


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def configure_logging() -> None:
    """Send logs to stderr at ``LOG_LEVEL``; ``ValueError`` (saying what is expected) when it
    names no level."""
    text = os.environ.get("LOG_LEVEL", "").strip() or "WARNING"
    level = logging.getLevelNamesMapping().get(text.upper())
    if level is None or text.upper() == "NOTSET":
        raise ValueError(f"LOG_LEVEL={text} is not a level: expected one of {', '.join(LEVELS)}")
    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("LOG_FORMAT", "").lower() == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
