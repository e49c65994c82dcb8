"""Declarative base of every ORM model: constraint naming convention and a UTC DateTime type.

The naming convention gives every index and constraint a deterministic name, so Alembic
migrations (including SQLite batch mode) can refer to them on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, MetaData
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on both databases.

    PostgreSQL stores ``timestamptz``; SQLite has no time zones, so values are stored as naive
    UTC and made aware again when read. Naive values written are taken as UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """``value`` as stored: aware UTC on PostgreSQL, naive UTC on SQLite; None stays None.

        A naive ``value`` is taken as UTC; an aware one is converted to UTC.
        """
        if value is None:
            return None
        aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if dialect.name == "sqlite":
            return aware.replace(tzinfo=None)
        return aware

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        """A stored ``value`` as an aware UTC datetime; None stays None.

        Raises:
            TypeError: The database returned something other than a datetime.
        """
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime from the database, got {type(value).__name__}")
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utc_now() -> datetime:
    """The current time as aware UTC (column defaults)."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Base class of every ORM model; ``Base.metadata`` is what Alembic compares against."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
