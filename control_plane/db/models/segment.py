"""Transcript segments of a meeting (docs/api.md 2.6), stored idempotently by the agent's id."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime


class Segment(Base):
    """One transcript segment; ``start``/``end`` are seconds from when the bot joined.

    ``segment_id`` is the agent's stable id (a final segment replaces its partials).
    """

    __tablename__ = "segments"
    __table_args__ = (
        UniqueConstraint("meeting_id", "segment_id"),
        Index("ix_segments_meeting_start", "meeting_id", "start"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    meeting_id: Mapped[int] = mapped_column(ForeignKey("meetings.id", ondelete="CASCADE"))
    segment_id: Mapped[str] = mapped_column(String(64))
    start: Mapped[float] = mapped_column(Float)
    end: Mapped[float] = mapped_column(Float)
    absolute_start_time: Mapped[datetime] = mapped_column(UtcDateTime)
    absolute_end_time: Mapped[datetime] = mapped_column(UtcDateTime)
    text: Mapped[str] = mapped_column(Text)
    speaker: Mapped[str | None] = mapped_column(String(300), default=None)
    language: Mapped[str | None] = mapped_column(String(16), default=None)
    completed: Mapped[bool] = mapped_column(Boolean, default=True)
    tier: Mapped[str] = mapped_column(String(16), default="realtime")
