"""The bot aggregate: the meeting row (one per bot) and its status audit trail.

A bot and its meeting are one row: ``id`` is the integer meeting id, ``bot_id`` the public UUID.
Scheduled bots are the same rows with status ``scheduled`` and a ``launch_at``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    Uuid,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now


class Meeting(Base):
    """One bot in one meeting.

    ``settings`` is the JSON of :class:`agent.contracts.bot_config.BotSettings` (defaults
    filled in). ``launch_at`` = ``scheduled_start_at + join_offset_seconds`` for scheduled bots;
    the scheduler claims rows with status ``scheduled`` or ``requested``, ``launch_at <= now``
    and no ``launch_claimed_at`` (immediate bots get ``launch_at`` = creation time).
    ``name`` and ``participants`` make the list item's ``data``; purge nulls/empties them and
    sets ``redacted``.
    """

    __tablename__ = "meetings"
    __table_args__ = (
        # Covers list order and lets a name-substring filter scan the index alone
        # (migration 0005, measured by bench/api.py).
        Index("ix_meetings_workspace_created", "workspace_id", "created_at", "id", "name"),
        Index("ix_meetings_workspace_status_created", "workspace_id", "status", "created_at", "id"),
        Index("ix_meetings_status_launch_at", "status", "launch_claimed_at", "launch_at"),
        Index("ix_meetings_native", "workspace_id", "platform", "native_meeting_id"),
        # Finished bots whose VM the reaper checks (migration 0009).
        Index(
            "ix_meetings_ended_with_handle",
            "end_time",
            sqlite_where=text("bot_container_id IS NOT NULL"),
            postgresql_where=text("bot_container_id IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    bot_id: Mapped[uuid.UUID] = mapped_column(Uuid, unique=True, default=uuid.uuid4)
    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    platform: Mapped[str] = mapped_column(String(16))
    native_meeting_id: Mapped[str] = mapped_column(String(512))
    constructed_meeting_url: Mapped[str] = mapped_column(Text)
    passcode: Mapped[str | None] = mapped_column(String(256), default=None)
    # A zoom bot's stored Zoom connection its OBF token is minted from at launch (docs/api.md
    # 2.3), and a token the client gave, sealed by the token cipher (never in plain text).
    zoom_connection_id: Mapped[int | None] = mapped_column(Integer, default=None)
    zoom_obf_token_sealed: Mapped[str | None] = mapped_column(Text, default=None)
    status: Mapped[str] = mapped_column(String(24))
    status_reason: Mapped[str | None] = mapped_column(String(64), default=None)
    # Human-readable words on the status (the cloud provider's refusal of a launch); cleared by
    # the next status change.
    status_detail: Mapped[str | None] = mapped_column(Text, default=None)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    scheduled_start_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    join_offset_seconds: Mapped[int] = mapped_column(Integer, default=0)
    launch_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    # Set atomically by the one scheduler loop that claims this bot for launch (exactly once).
    launch_claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    # The claiming scheduler and when its claim lapses (then another may launch it again).
    launch_claim_owner: Mapped[str | None] = mapped_column(String(128), default=None)
    launch_lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    bot_container_id: Mapped[str | None] = mapped_column(String(256), default=None)
    start_time: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    end_time: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    # When the agent's transcription_ready was stored: every final it sent is stored (0023).
    transcript_ready_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    name: Mapped[str | None] = mapped_column(String(300), default=None)
    participants: Mapped[list[str]] = mapped_column(JSON, default=list)
    redacted: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now, onupdate=utc_now)


class BotStatusChange(Base):
    """Audit row of one status change; ``from_status`` null at creation.

    Source: docs/architecture.md §2 step 6.
    """

    __tablename__ = "bot_status_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    meeting_id: Mapped[int] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), index=True
    )
    from_status: Mapped[str | None] = mapped_column(String(24), default=None)
    to_status: Mapped[str] = mapped_column(String(24))
    status_reason: Mapped[str | None] = mapped_column(String(64), default=None)
    changed_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
