"""JSON logs: one object per line with a static ``msg`` plus structured fields.

Log with ``log.info("bot launched", extra={"bot_id": ...})``: every ``extra`` field becomes a
key. Transcript text, participant names and chat are personal data and never go in a log.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

_STANDARD_ATTRS = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as ``{"ts", "level", "logger", "msg", ...extra, "exc"?}``."""

    def format(self, record: logging.LogRecord) -> str:
        """``record`` as one JSON object on one line (no trailing newline).

        ``ts`` is ISO 8601 UTC with milliseconds, ``level`` the lower-case level name; attributes
        a caller added with ``extra=`` are kept, except ``_``-prefixed ones; ``exc`` holds the
        formatted traceback when the record carries one; values JSON cannot encode are written as
        their ``str()``.
        """
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name not in _STANDARD_ATTRS and not name.startswith("_"):
                entry[name] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str) -> None:
    """Send the root logger's records to stderr as JSON lines at ``level``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
