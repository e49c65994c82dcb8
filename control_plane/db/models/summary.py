"""The summary of a whole meeting, written by the summary worker at its end (docs/api.md 2.14).

One row per meeting whose bot reached a final status with ``enable_actions`` true: created
``pending`` by the status hook in the transaction that made the meeting final, then ``ready``
(summary, decisions and action items written) or ``failed`` (attempts spent; ``error`` says
why). Migration 0020.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now


class MeetingSummary(Base):
    """The summary of one meeting and the worker's claim on it.

    ``status`` is ``pending``, ``ready`` or ``failed``. ``decisions`` is a list of
    ``{"text", "segment_ids"}``, ``action_items`` a list of ``{"text", "owner", "due",
    "segment_ids"}`` (``owner``/``due`` null unless said in the cited lines), both null until
    ready. ``model`` is the ``provider/model`` that wrote it; ``attempts`` the calls tried;
    ``prompt_tokens``/``completion_tokens`` summed over the calls of the ready summary.
    ``claim_owner``/``lease_until`` mark the one worker working on it; ``next_attempt_at`` is
    when it may be claimed next (the settle delay after the end, then the retry backoff).
    """

    __tablename__ = "meeting_summaries"
    __table_args__ = (Index("ix_meeting_summaries_status_next", "status", "next_attempt_at"),)

    meeting_id: Mapped[int] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), primary_key=True
    )
    status: Mapped[str] = mapped_column(String(16))
    summary: Mapped[str | None] = mapped_column(Text, default=None)
    decisions: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, default=None)
    action_items: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, default=None)
    model: Mapped[str | None] = mapped_column(String(200), default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    claim_owner: Mapped[str | None] = mapped_column(String(128), default=None)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    next_attempt_at: Mapped[datetime] = mapped_column(UtcDateTime)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    ready_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
