"""The webhook outbox: record an event inside the transaction of the change that causes it.

Call :func:`emit` with the session of the transaction that stores the state change, before it
commits::

    async with sessionmaker() as session, session.begin():
        meeting.status = "active"                       # the state change …
        await emit(session, meeting.workspace_id,       # … and its event, one transaction
                   EventType.BOT_STATUS_CHANGED, BotStatusChanged(...))

The event becomes a ``webhook_messages`` row (id ``msg_…``). If the transaction rolls back, the
event never existed; once it commits, the provider's background worker relays it (embedded:
fan-out to the workspace's matching endpoints; svix: ``message.create`` with the row id as
``eventId``) and marks it dispatched, also after a restart. So a crash between the state change
and delivery can neither lose nor invent an event.

Who emits what:

* ``bot.status_changed`` — the status-change service, through the in-transaction hook that
  :func:`control_plane.webhooks.wiring.status_changed_hook` provides.
* ``transcription.ready``, ``recording.ready``, ``action.detected``, ``participant.joined`` and
  ``participant.left`` — the agent link, when it stores the corresponding agent event (once per
  event id: it stores idempotently and emits only for a newly stored event).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import event, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction

from control_plane.db.models.webhook import WebhookMessage
from control_plane.webhooks.events import EventType, build_payload
from control_plane.webhooks.ids import new_id

# Per-transaction bookkeeping: a wake-up is already armed for this session's commit.
_WAKE_ARMED = "meetbot.webhooks.wake_armed"

Wake = Callable[[], None]
"""Wakes this process's webhook worker (``WebhookProvider.wake``)."""


async def emit(
    session: AsyncSession,
    workspace_id: uuid.UUID,
    event_type: EventType | str,
    data: BaseModel | dict[str, Any],
    *,
    at: datetime | None = None,
    wake: Wake | None = None,
) -> str:
    """Add one webhook event to the outbox within the caller's transaction.

    Args:
        session: The session whose transaction stores the state change; the caller commits.
        workspace_id: Workspace whose endpoints receive the event.
        event_type: One of :class:`~control_plane.webhooks.events.EventType`.
        data: The event's ``data`` (its catalogue model, or a dict of the same shape).
        at: When the event happened (the payload's ``timestamp``); now when omitted.
        wake: Called once after the transaction commits (this process's worker then relays
            at once instead of at its next poll); other replicas find the event by polling.

    Returns:
        The message id (``msg_…``), which is also the ``webhook-id`` of every attempt.

    Raises:
        ValueError: Unknown event type.
        pydantic.ValidationError: ``data`` does not fit the event type (a programming error).
    """
    created = at or datetime.now(UTC)
    payload = build_payload(event_type, data, created)
    message = WebhookMessage(
        id=new_id("msg"),
        workspace_id=workspace_id,
        event_type=payload["type"],
        body=json.dumps(payload, separators=(",", ":"), ensure_ascii=False),
        created_at=created,
    )
    session.add(message)
    if wake is not None and not session.info.get(_WAKE_ARMED):
        session.info[_WAKE_ARMED] = True

        def _after_commit(sync_session: Session) -> None:
            sync_session.info.pop(_WAKE_ARMED, None)
            wake()

        def _after_rollback(sync_session: Session, _previous: SessionTransaction) -> None:
            # after_soft_rollback passes the session and the transaction that rolled back.
            sync_session.info.pop(_WAKE_ARMED, None)

        event.listen(session.sync_session, "after_commit", _after_commit, once=True)
        event.listen(session.sync_session, "after_soft_rollback", _after_rollback, once=True)
    return message.id


@dataclass(frozen=True)
class Outbox:
    """:func:`emit` bound to this process's webhook worker, which it wakes after each commit.

    Args:
        wake: The worker's wake-up; None emits without waking (the worker polls).
    """

    wake: Wake | None = None

    async def emit(
        self,
        session: AsyncSession,
        workspace_id: uuid.UUID,
        event_type: EventType | str,
        data: BaseModel | dict[str, Any],
        *,
        at: datetime | None = None,
    ) -> str:
        """:func:`emit` with this outbox's wake-up (same arguments, result and errors)."""
        return await emit(session, workspace_id, event_type, data, at=at, wake=self.wake)


async def pending_messages(session: AsyncSession, limit: int) -> Sequence[WebhookMessage]:
    """Up to ``limit`` undispatched outbox rows, oldest first."""
    rows = await session.scalars(
        select(WebhookMessage)
        .where(WebhookMessage.dispatched_at.is_(None))
        .order_by(WebhookMessage.created_at, WebhookMessage.id)
        .limit(limit)
    )
    return rows.all()


async def claim_message(session: AsyncSession, message_id: str, now: datetime) -> bool:
    """Mark one outbox row dispatched unless another worker did; True when this call did.

    A conditional ``UPDATE`` is the claim, so two replicas relaying at once dispatch each row
    once on SQLite and PostgreSQL alike.
    """
    result = await session.execute(
        update(WebhookMessage)
        .where(WebhookMessage.id == message_id, WebhookMessage.dispatched_at.is_(None))
        .values(dispatched_at=now)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0) == 1)
