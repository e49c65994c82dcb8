"""Reading a meeting's segments after its cursor, and storing a window's actions with the cursor.

:meth:`WindowStore.view` reads what the worker needs to see whether a window is complete: the
meeting's state, its cursor and the segments stored after it; :meth:`WindowStore.context`
the previous window's lines, read only when a window goes to the model.
:meth:`WindowStore.store` stores one window's outcome in ONE transaction: the cursor moves
from where the view read it to the window's last row (a compare-and-set that also checks this
worker still owns the meeting), the actions are added (those repeating an action stored before
are dropped) and each one's ``action.detected`` webhook goes into the outbox, exactly as the
agent's ``action`` frames were stored (docs/api.md 2.9, 2.11). A window analysed twice (its
first owner died before the commit) is stored once: the second commit finds the cursor moved.
:meth:`WindowStore.streamed` marks an action the bot's agent put on its stream;
:func:`unstreamed_actions` gives the bot's stream the others once detection of the meeting is
finished (docs/api.md 2.7).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.link import ActionType
from agent.contracts.status import FINAL_STATUSES, BotStatus
from control_plane.bots.status import lock_meeting
from control_plane.db.engine import Database
from control_plane.db.inserts import insert_once
from control_plane.db.models.action import ActionBody, MeetingAction, action_body
from control_plane.db.models.action_cursor import ActionCursor
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment
from control_plane.intelligence.dedupe import is_repeat, normalise_text
from control_plane.intelligence.detection import DetectedAction, WindowLine
from control_plane.intelligence.windows import StoredLine, Window, action_id
from control_plane.webhooks import events
from control_plane.webhooks.outbox import Outbox


class ActionFields(Protocol):
    """What :func:`add_action` stores of an action (a detection's or an old agent's frame)."""

    @property
    def text(self) -> str:
        """The action in a short sentence."""
        ...

    @property
    def owner(self) -> str | None:
        """Who takes it, when said."""
        ...

    @property
    def due(self) -> str | None:
        """When it is due, as said."""
        ...

    @property
    def segment_ids(self) -> Sequence[str]:
        """The segments it rests on."""
        ...


class _CursorMoved(Exception):
    """The cursor is no longer where the view read it, or no longer this worker's."""


@dataclass(frozen=True, slots=True)
class MeetingView:
    """One meeting as the worker sees it before a window.

    Attributes:
        meeting_id: The meeting.
        bot_id: Its bot.
        workspace_id: Its workspace (whose budget pays for the calls).
        prompt_version_id: The bot's ``prompt_version_id`` setting, or None.
        final: The bot is final (no segment will be added).
        redacted: The meeting was purged.
        last_row: The cursor (highest ``segments.id`` done).
        context_ids: The previous window's segment ids (its context, :meth:`WindowStore.context`).
        rows: Segments stored after the cursor, by ``segments.id`` (at most the view's limit).
    """

    meeting_id: int
    bot_id: uuid.UUID
    workspace_id: uuid.UUID
    prompt_version_id: str | None
    final: bool
    redacted: bool
    last_row: int
    context_ids: tuple[str, ...]
    rows: tuple[StoredLine, ...]


@dataclass(frozen=True, slots=True)
class StoredAction:
    """An action the window added (what the stream and the caller's metrics get).

    Attributes:
        id: Its stable id.
        action: The action.
        detected_at: Its ``timestamp``.
    """

    id: str
    action: DetectedAction
    detected_at: datetime


@dataclass(frozen=True, slots=True)
class AddedAction:
    """What :func:`add_action` did.

    Attributes:
        body: The action as its row now reads (:func:`action_body`): the one just written, or
            the one stored before under the same id (left as it was).
        new: Whether the row was written now (False: stored before; no webhook queued again).
    """

    body: ActionBody
    new: bool


@dataclass(frozen=True, slots=True)
class StoredWindow:
    """What :meth:`WindowStore.store` added.

    Attributes:
        actions: The actions stored, in the model's order.
        repeats: Actions dropped as repeating one stored before.
    """

    actions: tuple[StoredAction, ...]
    repeats: int


def _line(row: Segment) -> WindowLine:
    return WindowLine(
        segment_id=row.segment_id,
        speaker=row.speaker,
        speaker_id=None,
        start=row.start,
        end=row.end,
        text=row.text,
    )


@dataclass(frozen=True, slots=True)
class WindowStore:
    """The worker's reads and writes of windows.

    Args:
        database: The control plane's database.
        outbox: Where ``action.detected`` events go (wakes this replica's webhook worker).
        owner: The worker's id (the cursor's ``owner`` while it holds the lease).
        rows_per_view: Segments read after the cursor at most (a window never needs more
            than its speech limit's worth).
    """

    database: Database
    outbox: Outbox
    owner: str
    rows_per_view: int = 500

    async def view(self, meeting_id: int) -> MeetingView | None:
        """The meeting's state and the segments after its cursor.

        None when the meeting or its cursor is gone, or the cursor is not this worker's.
        """
        async with self.database.reads() as session:
            found = (
                await session.execute(
                    select(ActionCursor, Meeting)
                    .join(Meeting, Meeting.id == ActionCursor.meeting_id)
                    .where(ActionCursor.meeting_id == meeting_id)
                )
            ).one_or_none()
            if found is None:
                return None
            cursor, meeting = found[0], found[1]
            if cursor.owner != self.owner or cursor.finished_at is not None:
                return None
            rows = (
                await session.scalars(
                    select(Segment)
                    .where(Segment.meeting_id == meeting_id, Segment.id > cursor.last_row)
                    .order_by(Segment.id)
                    .limit(self.rows_per_view)
                )
            ).all()
            prompt = (meeting.settings or {}).get("prompt_version_id")
            return MeetingView(
                meeting_id=meeting_id,
                bot_id=meeting.bot_id,
                workspace_id=meeting.workspace_id,
                prompt_version_id=prompt if isinstance(prompt, str) else None,
                final=BotStatus(meeting.status) in FINAL_STATUSES,
                redacted=meeting.redacted,
                last_row=cursor.last_row,
                context_ids=tuple(cursor.context_ids or ()),
                rows=tuple(
                    StoredLine(row.id, row.completed, _line(row), row.absolute_end_time)
                    for row in rows
                ),
            )

    async def context(self, view: MeetingView) -> tuple[WindowLine, ...]:
        """The previous window's lines (``view.context_ids``), by start time."""
        if not view.context_ids:
            return ()
        async with self.database.reads() as session:
            rows = (
                await session.scalars(
                    select(Segment)
                    .where(
                        Segment.meeting_id == view.meeting_id,
                        Segment.segment_id.in_(list(view.context_ids)),
                    )
                    .order_by(Segment.start, Segment.segment_id)
                )
            ).all()
        return tuple(_line(row) for row in rows)

    async def store(
        self,
        view: MeetingView,
        window: Window,
        actions: Sequence[DetectedAction],
        *,
        failed: bool,
        similarity: float,
        now: datetime,
    ) -> StoredWindow | None:
        """Move the cursor past ``window`` and store its ``actions``, in one transaction.

        Args:
            view: The view the window was made from (its ``last_row`` is the expected cursor).
            window: The window.
            actions: What the model found (empty for a failed or line-less window).
            failed: The window was given up on (counted in ``windows_failed``).
            similarity: Text similarity at which an action repeats a stored one.
            now: The actions' ``timestamp``.

        Returns:
            What was stored, or None when nothing was: the cursor had moved or is another
            worker's (the window was or will be stored by its owner), or the meeting is gone.
        """
        try:
            async with self.database.sessions.begin() as session:
                meeting = await lock_meeting(session, meeting_id=view.meeting_id)
                if meeting is None:
                    raise _CursorMoved
                moved = await session.execute(
                    update(ActionCursor)
                    .where(
                        ActionCursor.meeting_id == view.meeting_id,
                        ActionCursor.owner == self.owner,
                        ActionCursor.last_row == view.last_row,
                        ActionCursor.finished_at.is_(None),
                    )
                    .values(
                        last_row=window.last_row,
                        context_ids=(
                            [line.segment_id for line in window.lines]
                            if window.lines
                            else list(view.context_ids)
                        ),
                        windows=ActionCursor.windows + (1 if window.lines else 0),
                        windows_failed=ActionCursor.windows_failed + (1 if failed else 0),
                    )
                )
                if getattr(moved, "rowcount", 0) != 1:
                    raise _CursorMoved
                if meeting.redacted or not actions:
                    return StoredWindow((), 0)
                return await self._add(session, meeting, window, actions, similarity, now)
        except _CursorMoved:
            return None

    async def streamed(self, meeting_id: int, identifier: str, at: datetime) -> None:
        """Record that the bot's agent put action ``identifier`` on its stream (at ``at``)."""
        async with self.database.sessions.begin() as session:
            await session.execute(
                update(MeetingAction)
                .where(
                    MeetingAction.meeting_id == meeting_id,
                    MeetingAction.action_id == identifier,
                    MeetingAction.streamed_at.is_(None),
                )
                .values(streamed_at=at)
                .execution_options(synchronize_session=False)
            )

    async def _add(
        self,
        session: AsyncSession,
        meeting: Meeting,
        window: Window,
        actions: Sequence[DetectedAction],
        similarity: float,
        now: datetime,
    ) -> StoredWindow:
        known = (
            await session.execute(
                select(MeetingAction.action_id, MeetingAction.type, MeetingAction.text).where(
                    MeetingAction.meeting_id == meeting.id
                )
            )
        ).all()
        ids = {row.action_id for row in known}
        seen = [(row.type, normalise_text(row.text)) for row in known]
        stored: list[StoredAction] = []
        repeats = 0
        for index, action in enumerate(actions):
            kind = action.action_type.value
            identifier = action_id(meeting.id, window, index)
            if identifier in ids or is_repeat(kind, action.text, seen, similarity):
                repeats += 1
                continue
            seen.append((kind, normalise_text(action.text)))
            added = await add_action(
                session,
                self.outbox,
                workspace_id=meeting.workspace_id,
                bot_id=meeting.bot_id,
                meeting_id=meeting.id,
                identifier=identifier,
                kind=kind,
                action=action,
                at=now,
            )
            stored.append(_as_stored(added.body))  # the stream says what the record says
        return StoredWindow(tuple(stored), repeats)


def _as_stored(body: ActionBody) -> StoredAction:
    """A stored row's ``body`` as the action the worker offers to the bot's stream."""
    action = DetectedAction(
        action_type=ActionType(body["type"]),
        text=body["text"],
        owner=body["owner"],
        due=body["due"],
        segment_ids=tuple(body["segment_ids"]),
    )
    return StoredAction(body["id"], action, body["timestamp"])


async def add_action(
    session: AsyncSession,
    outbox: Outbox,
    *,
    workspace_id: uuid.UUID,
    bot_id: uuid.UUID,
    meeting_id: int,
    identifier: str,
    kind: str,
    action: ActionFields,
    at: datetime,
    streamed: bool = False,
) -> AddedAction:
    """Store one action and its ``action.detected`` webhook in ``session``, once by its id.

    The one way an action is written, whoever found it: the detection worker, or the ``action``
    frame of an agent from an image older than issue 34. An action whose id the meeting has
    already is left as it is, and no webhook is queued for it again. The webhook's ``data``
    is the stored row read back (:func:`action_body`), as the record and the stream read it,
    not ``action`` as given (e.g. ``at`` in another time zone is stored, and said, in UTC).

    Args:
        session: The open transaction the row and the outbox message join.
        outbox: The webhook outbox.
        workspace_id: The meeting's workspace (whose endpoints get the webhook).
        bot_id: The meeting's bot.
        meeting_id: The meeting's row id.
        identifier: The action's stable id (stream, webhook and API).
        kind: ``action_item``, ``decision``, ``question`` or ``follow_up``.
        action: Its ``text``, ``owner``, ``due`` and ``segment_ids``.
        at: When it was stored (the row's ``detected_at`` and the event's ``timestamp``).
        streamed: Whether it is on the bot's stream already (an old agent's own action); else
            it waits for the agent's word (:meth:`WindowStore.streamed`) or is sent by the
            stream after the agent's last event.

    Returns:
        The action as stored (the earlier row when its id was stored before) and whether it
        was written now.
    """
    new = await insert_once(
        session,
        MeetingAction,
        {
            "meeting_id": meeting_id,
            "action_id": identifier,
            "type": kind,
            "text": action.text,
            "owner": action.owner,
            "due": action.due,
            "segment_ids": list(action.segment_ids),
            "detected_at": at,
            "streamed_at": at if streamed else None,
        },
        key=("meeting_id", "action_id"),
    )
    stored = await session.scalars(  # inserted or found above, in this transaction
        select(MeetingAction)
        .where(MeetingAction.meeting_id == meeting_id, MeetingAction.action_id == identifier)
        .execution_options(populate_existing=True)
    )
    body = action_body(stored.one())
    if new:
        await outbox.emit(
            session,
            workspace_id,
            events.EventType.ACTION_DETECTED,
            events.ActionDetected(bot_id=str(bot_id), meeting_id=meeting_id, **body),
            at=at,
        )
    return AddedAction(body, new)


async def unstreamed_actions(session: AsyncSession, meeting_id: int) -> list[str] | None:
    """The meeting's actions the agent's stream did not carry, as the stream sends them.

    None while detection of the meeting is not finished (its cursor has no ``finished_at``):
    more may come, and the list must not change once a stream has sent part of it. Then the
    JSON text of each action without ``streamed_at`` (``{id, type, text, owner, due,
    segment_ids, timestamp}``, the ``action_detected`` event's data, docs/api.md 2.7), in the
    order they were stored.
    """
    finished = await session.scalar(
        select(ActionCursor.finished_at).where(ActionCursor.meeting_id == meeting_id)
    )
    if finished is None:
        return None
    rows = await session.scalars(
        select(MeetingAction)
        .where(MeetingAction.meeting_id == meeting_id, MeetingAction.streamed_at.is_(None))
        .order_by(MeetingAction.id)
    )
    return [
        events.ActionDetected(bot_id="", meeting_id=meeting_id, **action_body(row)).model_dump_json(
            exclude={"bot_id", "meeting_id"}
        )
        for row in rows
    ]
