"""Inserts that a unique key makes idempotent, on PostgreSQL and SQLite alike.

A row the agent or a worker may report twice (an artifact, a chat message, an action, a
frame's receipt) is written with the database's own ``INSERT … ON CONFLICT`` rather than a
look-up before the insert and a caught ``IntegrityError`` after it: a concurrent writer of the
same key makes the statement wait for its commit (PostgreSQL) or run after it (SQLite, one
writer at a time) and then insert nothing, so the caller's transaction goes on and nothing is
half-written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import DeclarativeBase

Upsert = postgresql.Insert | sqlite.Insert
"""An ``INSERT`` that takes ``on_conflict_do_nothing`` / ``on_conflict_do_update``."""


def dialect_insert(session: AsyncSession, target: Table | type[DeclarativeBase]) -> Upsert:
    """An ``INSERT`` into ``target`` (a table or a mapped class) in the session's dialect.

    Raises:
        sqlalchemy.exc.UnboundExecutionError: The session has no bind.
    """
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(target)
    return sqlite.insert(target)


async def insert_once(
    session: AsyncSession,
    model: type[DeclarativeBase],
    values: Mapping[str, Any],
    *,
    key: Sequence[str],
) -> bool:
    """Insert one row of ``model`` in the caller's transaction unless its ``key`` is stored.

    Args:
        session: The open transaction (not committed here).
        model: The mapped class of the table.
        values: Column name → value of the new row.
        key: The columns of the unique constraint (or primary key) that make it idempotent.

    Returns:
        Whether the row was inserted (False: a row with that key exists, left as it is).

    Raises:
        sqlalchemy.exc.IntegrityError: Another constraint refused the row (a foreign key).
    """
    table = cast(Table, model.__table__)
    statement = (
        dialect_insert(session, model)
        .values(dict(values))
        .on_conflict_do_nothing(index_elements=list(key))
        .returning(*(table.c[name] for name in key))
    )
    return (await session.execute(statement)).first() is not None
