"""What a creation sends to the database: the statements of each transaction that inserts a bot.

``async with creation_tables(engine) as creations:`` records, for every committed transaction
of ``engine`` that inserts into ``meetings``, its statements as table names (``SELECT`` for a
read, the table for an ``INSERT``), in order. Used to pin how many round trips a creation costs
(docs/architecture.md: the creation path).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


def _table(statement: str) -> str:
    return statement.split()[2] if statement.lstrip().startswith("INSERT") else "SELECT"


@asynccontextmanager
async def creation_tables(engine: Engine) -> AsyncIterator[list[list[str]]]:
    """Yield the list that fills with one entry per committed bot creation (see module)."""
    open_statements: dict[int, list[str]] = {}
    creations: list[list[str]] = []

    def on_begin(conn: Any) -> None:
        open_statements[id(conn)] = []

    def on_statement(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if id(conn) in open_statements and not statement.lstrip().upper().startswith("BEGIN"):
            open_statements[id(conn)].append(statement)

    def on_commit(conn: Any) -> None:
        statements = open_statements.pop(id(conn), [])
        if any(s.lstrip().startswith("INSERT INTO meetings") for s in statements):
            creations.append([_table(s) for s in statements])

    event.listen(engine, "begin", on_begin)
    event.listen(engine, "before_cursor_execute", on_statement)
    event.listen(engine, "commit", on_commit)
    try:
        yield creations
    finally:
        event.remove(engine, "begin", on_begin)
        event.remove(engine, "before_cursor_execute", on_statement)
        event.remove(engine, "commit", on_commit)
