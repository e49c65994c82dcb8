"""Leases on meetings' action cursors: which replica analyses which meeting (docs/api.md 2.9).

A meeting whose bot has ``enable_actions`` true gets an
:class:`~control_plane.db.models.action_cursor.ActionCursor` row once it is live (or final for
less than the enrolment grace), made by :meth:`CursorLeases.enrol`. A replica's worker claims
rows whose lease is free or lapsed (``owner``, ``lease_until``): on PostgreSQL ``SELECT … FOR
UPDATE SKIP LOCKED`` then an update, on SQLite a conditional ``UPDATE`` per row (SQLite
serialises writers), as :mod:`control_plane.bots.scheduler` claims launches. While its lease
holds only the owner stores windows of the meeting; a replica that dies leaves a lapsed lease
that another claims, from the cursor the dead one last committed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, or_, select, true, update

from agent.contracts.status import FINAL_STATUSES, BotStatus
from control_plane.db.engine import Database
from control_plane.db.inserts import dialect_insert
from control_plane.db.models.action_cursor import ActionCursor
from control_plane.db.models.bot import Meeting

_SPEAKING = (BotStatus.JOINING, BotStatus.AWAITING_ADMISSION, BotStatus.ACTIVE, BotStatus.STOPPING)
"""Statuses in which a bot may be storing segments."""


@dataclass(frozen=True, slots=True)
class CursorLeases:
    """Enrols meetings and holds leases on their cursors for one worker.

    Args:
        database: The control plane's database.
        owner: This worker's id (unique per process; stored in ``owner``).
        lease: How long a claim or renewal holds.
        enrol_grace: How long after its end a meeting never enrolled (no replica ran while it
            was live) is still enrolled.
    """

    database: Database
    owner: str
    lease: timedelta
    enrol_grace: timedelta = timedelta(hours=1)

    async def enrol(self, now: datetime, limit: int = 500) -> int:
        """Create the cursor of up to ``limit`` meetings that detect actions and have none.

        Returns:
            How many rows were created (another replica may have made some first).
        """
        enabled = Meeting.settings["enable_actions"].as_boolean() == true()
        async with self.database.sessions.begin() as session:
            ids = (
                await session.scalars(
                    select(Meeting.id)
                    .where(
                        enabled,
                        Meeting.redacted.is_(False),
                        or_(
                            Meeting.status.in_([status.value for status in _SPEAKING]),
                            and_(
                                Meeting.status.in_([status.value for status in FINAL_STATUSES]),
                                Meeting.end_time >= now - self.enrol_grace,
                            ),
                        ),
                        ~exists().where(ActionCursor.meeting_id == Meeting.id),
                    )
                    .order_by(Meeting.id)
                    .limit(limit)
                )
            ).all()
            if not ids:
                return 0
            rows = [
                {
                    "meeting_id": meeting_id,
                    "last_row": 0,
                    "context_ids": [],
                    "windows": 0,
                    "windows_failed": 0,
                    "created_at": now,
                }
                for meeting_id in ids
            ]
            result = await session.execute(
                dialect_insert(session, ActionCursor).values(rows).on_conflict_do_nothing()
            )
        return max(0, int(getattr(result, "rowcount", 0) or 0))

    @staticmethod
    def _free(now: datetime) -> ColumnElement[bool]:
        """Unfinished, and the lease free or lapsed."""
        return and_(
            ActionCursor.finished_at.is_(None),
            or_(ActionCursor.lease_until.is_(None), ActionCursor.lease_until < now),
        )

    async def claim(self, now: datetime, limit: int) -> list[int]:
        """Claim up to ``limit`` meetings whose cursor is unfinished and free; their ids."""
        if limit <= 0:
            return []
        until = now + self.lease
        async with self.database.sessions.begin() as session:
            if self.database.dialect == "postgresql":
                rows = (
                    await session.scalars(
                        select(ActionCursor)
                        .where(self._free(now))
                        .order_by(ActionCursor.meeting_id)
                        .limit(limit)
                        .with_for_update(skip_locked=True)
                    )
                ).all()
                for row in rows:
                    row.owner, row.lease_until = self.owner, until
                return [row.meeting_id for row in rows]
            candidates = (
                await session.scalars(
                    select(ActionCursor.meeting_id)
                    .where(self._free(now))
                    .order_by(ActionCursor.meeting_id)
                    .limit(limit)
                )
            ).all()
            claimed = []
            for meeting_id in candidates:
                result = await session.execute(
                    update(ActionCursor)
                    .where(ActionCursor.meeting_id == meeting_id, self._free(now))
                    .values(owner=self.owner, lease_until=until)
                )
                if getattr(result, "rowcount", 0) == 1:
                    claimed.append(meeting_id)
            return claimed

    async def _update_held(
        self, meeting_id: int, condition: ColumnElement[bool], **values: Any
    ) -> bool:
        """Set ``values`` on ``meeting_id``'s cursor if this worker holds it and ``condition``.

        Returns:
            True when the row was updated; False when the cursor is not this worker's (another
            replica claimed it after the lease lapsed) or ``condition`` no longer holds.
        """
        async with self.database.sessions.begin() as session:
            result = await session.execute(
                update(ActionCursor)
                .where(
                    ActionCursor.meeting_id == meeting_id,
                    ActionCursor.owner == self.owner,
                    condition,
                )
                .values(**values)
            )
        return getattr(result, "rowcount", 0) == 1

    async def renew(self, meeting_id: int, now: datetime) -> bool:
        """Extend the lease on ``meeting_id``; False when it is no longer this worker's."""
        return await self._update_held(
            meeting_id, ActionCursor.finished_at.is_(None), lease_until=now + self.lease
        )

    async def release(self, meeting_ids: Iterable[int]) -> None:
        """Give up the leases on ``meeting_ids`` (another replica may claim them at once)."""
        ids = sorted(meeting_ids)
        if not ids:
            return
        async with self.database.sessions.begin() as session:
            await session.execute(
                update(ActionCursor)
                .where(ActionCursor.meeting_id.in_(ids), ActionCursor.owner == self.owner)
                .values(owner=None, lease_until=None)
            )

    async def finish(self, meeting_id: int, last_row: int, now: datetime) -> bool:
        """Mark the meeting done (final, everything analysed); False when it was not.

        Only while the cursor is still at ``last_row`` and this worker's.
        """
        return await self._update_held(
            meeting_id,
            ActionCursor.last_row == last_row,
            finished_at=now,
            owner=None,
            lease_until=None,
        )
