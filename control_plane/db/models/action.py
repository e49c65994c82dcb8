"""Actions detected in a meeting by live action detection (docs/api.md 2.9).

One row per action, keyed by its stable id: written by the control plane's detection worker
(:mod:`control_plane.intelligence.window_store`, ids derived from the window) and, from agents
older than that, by ``action`` link frames (a frame resent after a reconnect stores nothing twice).
:func:`action_body` is the one reading of a row as the action every reader shows (the API's
list, the stream's ``action_detected`` the control plane sends after the agent's end).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypedDict, cast

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime


class MeetingAction(Base):
    """An action item, decision, open question or follow-up found in the meeting's transcript.

    ``action_id`` is the stable id (the API's ``id``); ``type`` one of
    ``action_item``, ``decision``, ``question``, ``follow_up``; ``owner`` and ``due`` as said in
    the meeting (null when not said); ``segment_ids`` the ids of the segments it rests on;
    ``detected_at`` when it was detected; ``streamed_at`` when the bot's agent said it put the
    action on its stream (null: the control plane's stream sends it after the agent's last
    event, docs/api.md 2.7; migration 0024).
    """

    __tablename__ = "meeting_actions"
    __table_args__ = (
        UniqueConstraint("meeting_id", "action_id"),
        Index("ix_meeting_actions_meeting_detected", "meeting_id", "detected_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    meeting_id: Mapped[int] = mapped_column(ForeignKey("meetings.id", ondelete="CASCADE"))
    action_id: Mapped[str] = mapped_column(String(64))
    type: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    owner: Mapped[str | None] = mapped_column(String(100), default=None)
    due: Mapped[str | None] = mapped_column(String(100), default=None)
    segment_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    detected_at: Mapped[datetime] = mapped_column(UtcDateTime)
    streamed_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)


ActionTypeName = Literal["action_item", "decision", "question", "follow_up"]
"""A stored action's ``type``."""


class ActionBody(TypedDict):
    """An action as the API, the stream and the webhook show it (docs/api.md 2.9).

    ``{id, type, text, owner, due, segment_ids, timestamp}``: the fields of
    ``GET …/actions``' items, of the ``action_detected`` stream event and of the
    ``action.detected`` webhook's ``data`` (without its ``bot_id``/``meeting_id``).
    """

    id: str
    type: ActionTypeName
    text: str
    owner: str | None
    due: str | None
    segment_ids: list[str]
    timestamp: datetime


def action_body(row: MeetingAction) -> ActionBody:
    """``row`` as its readers show it: the stable id as ``id``, ``detected_at`` as ``timestamp``."""
    return ActionBody(
        id=row.action_id,
        type=cast(ActionTypeName, row.type),
        text=row.text,
        owner=row.owner,
        due=row.due,
        segment_ids=list(row.segment_ids or []),
        timestamp=row.detected_at,
    )
