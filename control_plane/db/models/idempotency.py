"""Stored first responses of ``Idempotency-Key`` requests (docs/api.md 2.1), replayed for 24 h."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now


class IdempotencyRecord(Base):
    """The first response to one (API key, route, ``Idempotency-Key``).

    ``request_digest`` is the SHA-256 (hex) of the canonical JSON body; a different body with
    the same key is refused. ``response_body`` is the JSON text sent the first time.
    """

    __tablename__ = "idempotency_records"
    __table_args__ = (
        UniqueConstraint("api_key_id", "route", "idempotency_key"),
        Index("ix_idempotency_records_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    api_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    route: Mapped[str] = mapped_column(String(200))
    idempotency_key: Mapped[str] = mapped_column(String(255))
    request_digest: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
