"""Relay messages too large for a PostgreSQL ``NOTIFY`` payload (docs/architecture.md §5).

:class:`control_plane.agent_hub.relay.CommandRelay` stores such a message here and notifies
only its ``key``; every replica reads it by key. Rows are deleted once older than the relay's
retention (a minute), by the next large publish or a replica's start.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, String, Text, func
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime


class RelayMessage(Base):
    """One stored relay message: its JSON ``payload`` under ``key`` (SHA-256 hex of it)."""

    __tablename__ = "relay_messages"
    __table_args__ = (Index("ix_relay_messages_created_at", "created_at"),)

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, server_default=func.now())
