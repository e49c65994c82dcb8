"""Versioned action-detection prompts of a workspace (docs/api.md 2.9)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now


def _new_id() -> str:
    return str(uuid.uuid4())


class ActionPrompt(Base):
    """One version of a named prompt; posting the same ``name`` again adds ``version`` + 1.

    ``id`` is the prompt *version* id (a UUID string) that bots name in ``prompt_version_id``
    and workspaces in ``default_prompt_version_id``.
    """

    __tablename__ = "action_prompts"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name", "version"),
        Index("ix_action_prompts_workspace_created", "workspace_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True, default=_new_id)
    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(Integer)
    instructions: Mapped[str] = mapped_column(Text)
    model: Mapped[str | None] = mapped_column(String(200), default=None)
    created_by_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
