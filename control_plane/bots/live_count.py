"""How many bots of a workspace are live (``requested`` … ``stopping``), for its quota.

On SQLite the number is read from ``workspace_live_bots``, which triggers on ``meetings`` keep
(migration 0009): one row instead of counting index entries on the event loop's thread in the
write transaction (:mod:`control_plane.db.inline_sqlite`), which cost about 3 ms per creation
with 15,000 live bots (bench/api.py mixed run). On PostgreSQL the rows are counted, at most
``limit`` of them, in the server.
"""

from __future__ import annotations

import uuid

from sqlalchemy import Integer, Uuid, column, func, select, table
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.status import LIVE_STATUSES
from control_plane.db.models.bot import Meeting

_LIVE = tuple(status.value for status in LIVE_STATUSES)
_COUNTS = table("workspace_live_bots", column("workspace_id", Uuid()), column("live", Integer()))


async def live_bots(session: AsyncSession, workspace_id: uuid.UUID, limit: int) -> int:
    """The workspace's live bots as of ``session``'s transaction.

    Args:
        session: The creating transaction's session (on SQLite it holds the write lock, so
            the figure stays exact until it commits).
        workspace_id: The workspace.
        limit: PostgreSQL counts no further than this (the answer is then ``limit``).

    Returns:
        The number of bots with a status in ``LIVE_STATUSES`` (0 for none).
    """
    if session.get_bind().dialect.name == "sqlite":
        stored = await session.scalar(
            select(_COUNTS.c.live).where(_COUNTS.c.workspace_id == workspace_id)
        )
        return int(stored or 0)
    rows = (
        select(Meeting.id)
        .where(Meeting.workspace_id == workspace_id, Meeting.status.in_(_LIVE))
        .limit(limit)
        .subquery()
    )
    return int(await session.scalar(select(func.count()).select_from(rows)) or 0)
