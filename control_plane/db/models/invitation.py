"""Invitations to a workspace (docs/api.md Part 1 "Invitation", 2.2).

The invitation token is shown once at creation; only its SHA-256 digest (hex) is stored, the
same way API keys are.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now
from control_plane.enums import InvitationStatus


class Invitation(Base):
    """An invitation of an e-mail address to a workspace with a role.

    ``status`` is ``pending``, ``accepted`` or ``revoked``; a pending invitation whose
    ``expires_at`` has passed can no longer be accepted (it stays ``pending`` in storage but
    is not listed).
    """

    __tablename__ = "invitations"
    __table_args__ = (
        Index("ix_invitations_workspace_status_created", "workspace_id", "status", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[str] = mapped_column(String(16))  # Role
    status: Mapped[str] = mapped_column(String(16), default=InvitationStatus.PENDING.value)
    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    invited_by_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    accepted_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
