"""Stored Zoom OAuth connections of workspace users (docs/api.md 2.3, "Zoom").

Both tokens are stored sealed by :class:`control_plane.token_cipher.TokenCipher`; a database
dump alone does not reveal them.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now


class ZoomConnection(Base):
    """One Zoom user's authorization of the meetbot Zoom app, within one workspace.

    ``expires_at`` is when the stored access token expires; minting after that refreshes the
    pair first. Connecting the same Zoom user again in a workspace replaces the tokens of the
    existing row.
    """

    __tablename__ = "zoom_connections"
    __table_args__ = (
        UniqueConstraint("workspace_id", "zoom_user_id"),
        Index("ix_zoom_connections_workspace_user", "workspace_id", "user_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    zoom_user_id: Mapped[str] = mapped_column(String(128))
    email: Mapped[str] = mapped_column(String(320), default="")
    access_token_sealed: Mapped[str] = mapped_column(Text)
    refresh_token_sealed: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now, onupdate=utc_now)
