"""The status-change service: the ONE way a bot's status changes (docs/architecture.md §3).

:func:`change_status` checks the move against ``agent.contracts.status.LEGAL_TRANSITIONS``,
then, inside the caller's transaction: sets ``status``/``status_reason``/``status_detail``
(``start_time`` on the first ``active``, ``end_time`` on a final status), adds a
:class:`~control_plane.db.models.bot.BotStatusChange` audit row, and awaits every
:data:`~control_plane.hooks.StatusHook` in order with the same session. The caller commits, so
the change, its audit row and whatever the hooks write (the webhook outbox's
``bot.status_changed`` message) commit or roll back together.

Register a hook at start-up: ``app[STATUS_HOOKS].append(my_hook)`` where
``async def my_hook(session: AsyncSession, change: StatusChange) -> None``. Hooks must not
commit, must not do network I/O, and raise only to veto the whole change.

Callers that read-modify-write should load the row with :func:`lock_meeting` (``FOR UPDATE`` on
PostgreSQL; SQLite transactions are already exclusive, see ``control_plane.db.engine``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import inspect as sa_inspect
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.status import FINAL_STATUSES, BotStatus, can_transition
from control_plane.db.models.bot import BotStatusChange, Meeting
from control_plane.errors import Conflict
from control_plane.hooks import StatusChange, StatusHook


class IllegalTransition(Conflict):
    """409: the move is not in the status table (e.g. ``completed → active``)."""

    default_code = "illegal_status_transition"
    title = "Illegal bot status change"


async def lock_meeting(
    session: AsyncSession, *, bot_id: uuid.UUID | None = None, meeting_id: int | None = None
) -> Meeting | None:
    """Load one meeting row by ``bot_id`` or ``meeting_id`` for update, or None."""
    query = select(Meeting).with_for_update()
    if bot_id is not None:
        query = query.where(Meeting.bot_id == bot_id)
    elif meeting_id is not None:
        query = query.where(Meeting.id == meeting_id)
    else:
        raise ValueError("give bot_id or meeting_id")
    return (await session.execute(query)).scalar_one_or_none()


async def _apply(
    session: AsyncSession,
    meeting: Meeting,
    previous: str | None,
    target: BotStatus,
    reason: str | None,
    hooks: Sequence[StatusHook],
    at: datetime,
    detail: str | None = None,
) -> StatusChange:
    meeting.status = target.value
    meeting.status_reason = reason
    meeting.status_detail = detail
    meeting.updated_at = at
    if target is BotStatus.ACTIVE and meeting.start_time is None:
        meeting.start_time = at
    if target in FINAL_STATUSES and meeting.end_time is None:
        meeting.end_time = at
    if not sa_inspect(meeting).has_identity:
        # A new row needs its id for the audit row; existing rows flush together at commit.
        await session.flush()
    session.add(
        BotStatusChange(
            meeting_id=meeting.id,
            from_status=previous,
            to_status=target.value,
            status_reason=reason,
            changed_at=at,
        )
    )
    change = StatusChange(
        meeting=meeting, previous_status=previous, status=target.value, status_reason=reason, at=at
    )
    for hook in hooks:
        await hook(session, change)
    return change


async def change_status(
    session: AsyncSession,
    meeting: Meeting,
    target: BotStatus,
    reason: str | None,
    *,
    hooks: Sequence[StatusHook] = (),
    at: datetime | None = None,
    detail: str | None = None,
) -> StatusChange:
    """Move ``meeting`` to ``target`` within the caller's transaction.

    Args:
        session: Session of the caller's open transaction (the caller commits).
        meeting: The row, loaded in ``session`` (ideally through :func:`lock_meeting`).
        target: New status.
        reason: ``status_reason`` code (docs/architecture.md §3), or None.
        hooks: In-transaction hooks, usually ``app[STATUS_HOOKS]``.
        at: When it happened; now when omitted.
        detail: Human-readable words on the move, the bot record's ``status_detail``
            (docs/api.md 2.3), e.g. a cloud provider's refusal; None clears the previous one.

    Returns:
        The change as the hooks saw it.

    Raises:
        IllegalTransition: ``meeting.status → target`` is not a legal move.
    """
    current = BotStatus(meeting.status)
    if not can_transition(current, target):
        raise IllegalTransition(f"a bot cannot go from {current.value} to {target.value}")
    return await _apply(
        session, meeting, current.value, target, reason, hooks, at or datetime.now(UTC), detail
    )


async def record_creation(
    session: AsyncSession,
    meeting: Meeting,
    reason: str | None,
    *,
    hooks: Sequence[StatusHook] = (),
    at: datetime | None = None,
) -> StatusChange:
    """Store a new bot with its first audit row and run the hooks, in the caller's transaction.

    The bot is added to ``session`` with status ``requested`` or ``scheduled``; its first audit row
    has ``from_status`` null.
    """
    session.add(meeting)
    status = BotStatus(meeting.status)
    return await _apply(session, meeting, None, status, reason, hooks, at or datetime.now(UTC))
