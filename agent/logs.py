"""Log output of the agent process: a static message plus the record's structured fields."""

from __future__ import annotations

import logging
import sys

# Attributes every LogRecord has; anything else came in through ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class FieldsFormatter(logging.Formatter):
    """``2026-11-21T10:00:00 INFO agent.bot bot status status=active status_reason=joined``."""

    def format(self, record: logging.LogRecord) -> str:
        """Render the record with its ``extra`` fields as ``key=value`` pairs."""
        base = super().format(record)
        fields = " ".join(
            f"{key}={value}" for key, value in vars(record).items() if key not in _STANDARD
        )
        return f"{base} {fields}" if fields else base


def configure_logging(level: str) -> None:
    """Send the agent's logs to stderr in :class:`FieldsFormatter` format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(FieldsFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
