"""Where live action detection stands in one meeting (docs/api.md 2.9, migration 0021).

One row per meeting whose bot has ``enable_actions`` true, created by the detection worker
(:mod:`control_plane.intelligence.worker`) once the meeting is live. The worker of one replica
holds it by ``owner``/``lease_until`` (as the scheduler claims launches); the cursor
(``last_row``, ``context_ids``) moves in the same transaction that stores the window's actions,
so a window is either wholly stored with the cursor past it, or analysed again.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now


class ActionCursor(Base):
    """One meeting's detection cursor and the lease of the replica working on it.

    ``last_row`` is the highest ``segments.id`` (arrival order) of a window already done
    (0 before the first); ``context_ids`` the segment ids of that window, shown to the model
    as context with the next one. ``windows`` counts windows done, ``windows_failed`` those
    given up on (after the retries; their actions are lost and said so once in the log).
    ``owner``/``lease_until`` mark the one replica analysing the meeting; ``finished_at`` is
    set once the meeting is final and every stored segment was analysed (never claimed again).
    """

    __tablename__ = "action_cursors"
    __table_args__ = (Index("ix_action_cursors_finished_lease", "finished_at", "lease_until"),)

    meeting_id: Mapped[int] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), primary_key=True
    )
    last_row: Mapped[int] = mapped_column(Integer, default=0)
    context_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    windows: Mapped[int] = mapped_column(Integer, default=0)
    windows_failed: Mapped[int] = mapped_column(Integer, default=0)
    owner: Mapped[str | None] = mapped_column(String(128), default=None)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
