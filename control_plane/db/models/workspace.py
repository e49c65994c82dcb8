"""The tenancy aggregate: workspaces, users, memberships (roles) and API keys (docs/api.md 2.2)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now
from control_plane.enums import Permission


class Workspace(Base):
    """A tenant.

    ``recording_enabled``/``transcribe_enabled`` and ``max_meeting_duration_seconds`` (null:
    the built-in default) are bot launch defaults.
    """

    __tablename__ = "workspaces"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(200))
    recording_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    transcribe_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    default_prompt_version_id: Mapped[str | None] = mapped_column(String(64), default=None)
    max_meeting_duration_seconds: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class User(Base):
    """A person; belongs to workspaces through :class:`Membership`."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class Membership(Base):
    """A user's role (``owner`` or ``member``) in one workspace."""

    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("workspace_id", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workspace_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))  # Role
    joined_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class ApiKey(Base):
    """An API key: only the SHA-256 ``digest`` (hex) of the secret is stored.

    ``prefix`` is the first 12 characters of the key; ``permission`` is ``edit`` or ``read``;
    ``workspace_id`` is null for a key bound to no workspace.
    """

    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_user_workspace", "user_id", "workspace_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    workspace_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True, default=None
    )
    name: Mapped[str] = mapped_column(String(200))
    prefix: Mapped[str] = mapped_column(String(16))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    permission: Mapped[str] = mapped_column(String(8), default=Permission.EDIT.value)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
