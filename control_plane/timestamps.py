"""The API's timestamp type: in, any ISO 8601 offset (naive = UTC); out, UTC with ``Z``.

docs/api.md 2.1: ``2026-11-21T09:30:00Z`` — microseconds dropped on output, written by
:func:`agent.contracts.timestamps.format_utc` as the agent's events and the webhooks are. An input
timestamp must lie in [``EARLIEST``, ``LATEST``) once converted to UTC (a conversion that overflows
Python's datetime, e.g. ``0001-01-01T00:00:00+14:00``, is out of range too): the window leaves room
for the offsets the service adds (join offsets, lifetimes) without overflow.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, PlainSerializer, WithJsonSchema

from agent.contracts.timestamps import as_utc, format_utc

EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
"""The earliest timestamp an input may carry (inclusive)."""
LATEST = datetime(9998, 1, 1, tzinfo=UTC)
"""The first timestamp past what an input may carry."""
RANGE_MESSAGE = "timestamps must lie between 0002-01-01T00:00:00Z and 9997-12-31T23:59:59Z"


def bounded_utc(value: datetime) -> datetime:
    """:func:`as_utc` of an input timestamp, checked to lie in [``EARLIEST``, ``LATEST``).

    Raises:
        ValueError: The conversion overflows or the instant is outside the window.
    """
    try:
        utc = as_utc(value)
    except OverflowError as exc:
        raise ValueError(RANGE_MESSAGE) from exc
    if not EARLIEST <= utc < LATEST:
        raise ValueError(RANGE_MESSAGE)
    return utc


def parse_utc(text: str) -> datetime:
    """Parse an ISO 8601 timestamp into aware UTC.

    Raises:
        ValueError: ``text`` is not ISO 8601 or lies outside the window of :func:`bounded_utc`.
    """
    return bounded_utc(datetime.fromisoformat(text.strip().replace("z", "Z")))


UtcDateTime = Annotated[
    datetime,
    AfterValidator(bounded_utc),
    PlainSerializer(format_utc, return_type=str, when_used="json"),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "examples": ["2026-11-21T09:30:00Z"],
            "description": "ISO 8601; between 0002-01-01T00:00:00Z and 9997-12-31T23:59:59Z.",
        }
    ),
]
"""A timestamp field of a request or response model."""
