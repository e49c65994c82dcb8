"""The embedded webhook provider's tables and the outbox every provider relays from.

* ``webhook_messages`` is the outbox: one row per event, inserted in the same transaction as
  the state change that causes it (:func:`control_plane.webhooks.outbox.emit`). ``body`` holds
  the exact JSON sent, so every attempt signs and sends identical bytes. ``dispatched_at`` is set
  when the row has been handed to the provider (fanned out to endpoints, or sent to Svix).
* ``webhook_endpoints``: the embedded provider's endpoints; ``failing_since`` is when the
  current run of failed attempts began (null after a success); after 5 days it is disabled.
* ``webhook_deliveries``: one message to one endpoint — status (Svix's ints: 0 success,
  1 pending, 2 failed, 3 sending), attempts made, when the next is due, and the lease of the
  worker that is sending it.
* ``webhook_attempts``: one row per HTTP attempt (the delivery log of docs/api.md Part 1).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now
from control_plane.enums import AttemptStatus


class WebhookEndpoint(Base):
    """A receiver URL of one workspace, with its ``whsec_`` secret and event-type filter.

    ``secret`` is stored sealed (:mod:`control_plane.webhooks.sealed_secrets`).
    """

    __tablename__ = "webhook_endpoints"
    __table_args__ = (
        Index("ix_webhook_endpoints_workspace_created", "workspace_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text, default="")
    # Empty list: every event type.
    filter_types: Mapped[list[str]] = mapped_column(JSON, default=list)
    secret: Mapped[str] = mapped_column(Text)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    failing_since: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now, onupdate=utc_now)


class WebhookMessage(Base):
    """One event in the outbox (``msg_…``; it is the ``webhook-id`` of every attempt)."""

    __tablename__ = "webhook_messages"
    __table_args__ = (Index("ix_webhook_messages_pending", "dispatched_at", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    workspace_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), index=True
    )
    event_type: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    dispatched_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)


class WebhookDelivery(Base):
    """The delivery state of one message to one endpoint."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("message_id", "endpoint_id"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    message_id: Mapped[str] = mapped_column(ForeignKey("webhook_messages.id", ondelete="CASCADE"))
    endpoint_id: Mapped[str] = mapped_column(
        ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[int] = mapped_column(Integer, default=AttemptStatus.PENDING.value)
    attempt_count: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class WebhookAttempt(Base):
    """One HTTP attempt (``atmpt_…``); ``response_status_code`` is 0 when no response came."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_endpoint_time", "endpoint_id", "timestamp"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    delivery_id: Mapped[int] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), index=True
    )
    message_id: Mapped[str] = mapped_column(String(40))
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    status: Mapped[int] = mapped_column(Integer)
    response_status_code: Mapped[int] = mapped_column(Integer, default=0)
    response_duration_ms: Mapped[int] = mapped_column(Integer, default=0)
    timestamp: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
