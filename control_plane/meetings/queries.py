"""The list query shared by ``GET /api/v1/meetings`` and ``GET /api/v1/bots``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute, load_only

from control_plane.api.timestamps import parse_utc
from control_plane.db.models.bot import Meeting
from control_plane.errors import ErrorItem, Validation
from control_plane.meetings.schemas import MeetingQuery


def parse_bound(value: str | None, name: str) -> datetime | None:
    """An ISO 8601 ``date_from``/``date_to`` as aware UTC.

    Raises:
        Validation: 400 ``invalid_date`` when it is not ISO 8601.
    """
    if value is None:
        return None
    try:
        return parse_utc(value)
    except ValueError as exc:
        raise Validation(
            f"{name} is not an ISO 8601 timestamp",
            status=400,
            code="invalid_date",
            errors=[ErrorItem(loc=["query", name], msg="not ISO 8601", type="invalid_date")],
        ) from exc


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def list_meetings(
    session: AsyncSession,
    workspace_id: uuid.UUID | None,
    query: MeetingQuery,
    *,
    columns: Sequence[QueryableAttribute[Any]] = (),
) -> Sequence[Meeting]:
    """The workspace's meetings matching ``query``, newest first (``created_at``, ``id`` desc).

    ``columns``, when given, are the only ones loaded (the rest stay unloaded; touching them
    would be an error): the meeting list needs a few, and decoding every row's ``settings``
    JSON was a measurable share of a list request (bench/api.py).

    Raises:
        Validation: 400 ``invalid_date`` for a malformed ``date_from``/``date_to``.
    """
    date_from = parse_bound(query.date_from, "date_from")
    date_to = parse_bound(query.date_to, "date_to")
    if workspace_id is None:
        return []
    stmt = select(Meeting).where(Meeting.workspace_id == workspace_id)
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
    stmt = (
        stmt.order_by(Meeting.created_at.desc(), Meeting.id.desc())
        .limit(query.limit)
        .offset(query.offset)
    )
    if columns:
        stmt = stmt.options(load_only(*columns, raiseload=True))
    return (await session.execute(stmt)).scalars().all()
