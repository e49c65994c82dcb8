"""Log output of the agent process: a static message plus the record's structured fields."""

from __future__ import annotations

import logging
import math
import sys
import time

# Attributes every LogRecord has; anything else came in through ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class FieldsFormatter(logging.Formatter):
    """``2026-11-21T10:00:00 INFO agent.meeting.bot bot status status=active``."""

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


class LossReport:
    """Warns while something is being lost, at once and then at most every ``every_s`` seconds.

    A count that only reaches the log at the end of a meeting is found too late (stop 14's
    soak dropped three quarters of its recording's audio and said so once, as the bot left).

    Args:
        logger: Where the warnings go.
        message: The warning's text, e.g. ``"recording dropped audio frames"``.
        every_s: Least seconds between two warnings.
    """

    def __init__(self, logger: logging.Logger, message: str, every_s: float = 30.0) -> None:
        self._log = logger
        self._message = message
        self._every = every_s
        self._last = -math.inf
        self.total = 0

    def lost(self, count: int = 1) -> None:
        """Count ``count`` more lost items; warn with the total if the last warning is old."""
        self.total += count
        now = time.monotonic()
        if now - self._last >= self._every:
            self._last = now
            self._log.warning(self._message, extra={"dropped": self.total})
