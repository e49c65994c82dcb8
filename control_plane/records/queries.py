"""The list query shared by ``GET /api/v1/meetings`` and ``GET /api/v1/bots``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, Select, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from control_plane.db.models.bot import Meeting
from control_plane.errors import ErrorItem, Validation
from control_plane.records.schemas import MeetingQuery
from control_plane.timestamps import RANGE_MESSAGE, parse_utc


def parse_bound(value: str | None, name: str) -> datetime | None:
    """An ISO 8601 ``date_from``/``date_to`` as aware UTC.

    Raises:
        Validation: 400 ``invalid_date`` when it is not ISO 8601 or outside the window of
            :func:`~control_plane.timestamps.bounded_utc`.
    """
    if value is None:
        return None
    try:
        return parse_utc(value)
    except ValueError as exc:
        # A well-formed timestamp outside the window says so, not "not ISO 8601".
        msg = RANGE_MESSAGE if str(exc) == RANGE_MESSAGE else "not ISO 8601"
        raise Validation(
            f"{name} is not an ISO 8601 timestamp in range ({msg})",
            status=400,
            code="invalid_date",
            errors=[ErrorItem(loc=["query", name], msg=msg, type="invalid_date")],
        ) from exc


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_Selected = TypeVar("_Selected", bound=Select[Any])


def _list_statement(
    workspace_id: uuid.UUID | None, query: MeetingQuery, selected: _Selected
) -> _Selected | None:
    """``selected`` narrowed to the page ``query`` asks of the workspace; None without one.

    Raises:
        Validation: 400 ``invalid_date`` (with or without a workspace).
    """
    date_from = parse_bound(query.date_from, "date_from")
    date_to = parse_bound(query.date_to, "date_to")
    if workspace_id is None:
        return None
    stmt = selected.where(Meeting.workspace_id == workspace_id)
    if query.meeting_id is not None:
        stmt = stmt.where(Meeting.id == query.meeting_id)
    if query.bot_id is not None:
        stmt = stmt.where(Meeting.bot_id == query.bot_id)
    if query.name:
        stmt = stmt.where(Meeting.name.ilike(_like_pattern(query.name), escape="\\"))
    if query.status is not None:
        stmt = stmt.where(Meeting.status == query.status.value)
    if date_from is not None:
        stmt = stmt.where(Meeting.created_at >= date_from)
    if date_to is not None:
        stmt = stmt.where(Meeting.created_at <= date_to)
    return (
        stmt.order_by(Meeting.created_at.desc(), Meeting.id.desc())
        .limit(query.limit)
        .offset(query.offset)
    )


async def list_meetings(
    session: AsyncSession, workspace_id: uuid.UUID | None, query: MeetingQuery
) -> Sequence[Meeting]:
    """The workspace's meetings matching ``query``, newest first (``created_at``, ``id`` desc).

    Raises:
        Validation: 400 ``invalid_date`` for a malformed ``date_from``/``date_to``.
    """
    stmt = _list_statement(workspace_id, query, select(Meeting))
    return [] if stmt is None else (await session.execute(stmt)).scalars().all()


async def list_meeting_rows(
    session: AsyncSession,
    workspace_id: uuid.UUID | None,
    query: MeetingQuery,
    columns: Sequence[InstrumentedAttribute[Any]],
) -> Sequence[Row[Any]]:
    """Like :func:`list_meetings`, but only ``columns``, as plain rows, not ORM objects.

    The rows give attribute access by column name.

    A list page needs a few columns of up to 200 rows; building an ORM instance per row (its
    state, identity-map entry and load guards) was a fifth of a list request's CPU
    (bench/api.py, py-spy), and decoding every row's ``settings`` JSON another share.

    Raises:
        Validation: 400 ``invalid_date`` for a malformed ``date_from``/``date_to``.
    """
    stmt = _list_statement(workspace_id, query, select(*columns))
    return [] if stmt is None else (await session.execute(stmt)).all()
