"""What an agent's frame changes in its meeting's record, inside the frame's transaction.

:class:`FrameEffects` holds one handler per frame type with effects in the database
(``status``, ``participants``, ``transcription_ready``, ``artifact``, ``chat_message``,
``action``; a ``transcript_segment`` is an upsert of the batch, in
:mod:`control_plane.agent_link.frames`). A handler runs only for a frame whose receipt is new,
in the transaction that stores the receipt; the webhook events it causes go into the outbox in
that same transaction. A row the agent may report under two frame ids (an artifact also stored
by the upload route, a chat message, an action) is written once by its own id
(:func:`~control_plane.db.inserts.insert_once`).

Status moves go through the status-change service; a move the status table does not allow
(a late or repeated report) is ignored.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.link import (
    ActionEvent,
    ArtifactEvent,
    ArtifactKind,
    ChatMessageEvent,
    ParticipantsEvent,
    StatusEvent,
    TranscriptionReady,
)
from agent.contracts.status import BotStatus, can_transition
from control_plane.agent_hub.artifacts import add_artifact
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.inserts import insert_once
from control_plane.db.models.agent_link import ChatMessage
from control_plane.db.models.bot import Meeting
from control_plane.hooks import StatusHook
from control_plane.intelligence.window_store import add_action
from control_plane.storage.base import bot_prefix
from control_plane.webhooks import events
from control_plane.webhooks.outbox import Outbox

logger = logging.getLogger(__name__)

LOCKED_MEETINGS = "meetbot_link_locked_meetings"
"""``session.info`` key: meeting id → the Meeting row a batch locked for its frames at once."""

_Handler = Callable[[AsyncSession, Any], Awaitable[None]]


@dataclass(frozen=True)
class LinkIdentity:
    """Which bot a link belongs to (found by its agent token)."""

    meeting_id: int
    bot_id: uuid.UUID
    workspace_id: uuid.UUID


class FrameEffects:
    """Applies one link's frames to its meeting's rows and the webhook outbox.

    Args:
        identity: The bot the link belongs to.
        status_hooks: The app's status hooks (webhook ``bot.status_changed`` and others).
        outbox: Where the agent's events become webhook events (wakes the webhook worker).
    """

    def __init__(
        self, identity: LinkIdentity, status_hooks: list[StatusHook], outbox: Outbox
    ) -> None:
        self._identity = identity
        self._status_hooks = status_hooks
        self._outbox = outbox
        # What every event of the bot's says first (docs/api.md 2.11).
        self._about = {"bot_id": str(identity.bot_id), "meeting_id": identity.meeting_id}
        self._handlers: dict[str, _Handler] = {
            "status": self._status,
            "participants": self._participants,
            "transcription_ready": self._transcription_ready,
            "artifact": self._artifact,
            "chat_message": self._chat_message,
            "action": self._action,
        }

    async def apply(
        self,
        session: AsyncSession,
        frame: StatusEvent
        | ParticipantsEvent
        | TranscriptionReady
        | ArtifactEvent
        | ChatMessageEvent
        | ActionEvent,
    ) -> None:
        """Write ``frame``'s effects in ``session`` (the caller's transaction, not committed).

        Raises:
            LookupError: The link's meeting is gone.
            sqlalchemy.exc.SQLAlchemyError: The database refused (the transaction is void).
        """
        await self._handlers[frame.type](session, frame)

    async def _emit(
        self, session: AsyncSession, event_type: events.EventType, data: BaseModel, at: datetime
    ) -> None:
        await self._outbox.emit(session, self._identity.workspace_id, event_type, data, at=at)

    async def _meeting(self, session: AsyncSession) -> Meeting:
        locked: dict[int, Meeting] = session.info.get(LOCKED_MEETINGS, {})
        meeting = locked.get(self._identity.meeting_id)
        if meeting is None:
            meeting = await lock_meeting(session, meeting_id=self._identity.meeting_id)
        if meeting is None:  # the row cascades with its link, which authenticated this frame
            raise LookupError(f"meeting {self._identity.meeting_id} is gone")
        return meeting

    async def _status(self, session: AsyncSession, frame: StatusEvent) -> None:
        meeting = await self._meeting(session)
        current = BotStatus(meeting.status)
        if not can_transition(current, frame.status):
            logger.info(
                "agent status move ignored",
                extra={
                    "bot_id": str(meeting.bot_id),
                    "from_status": current.value,
                    "to_status": frame.status.value,
                },
            )
            return
        await change_status(
            session,
            meeting,
            frame.status,
            frame.status_reason,
            at=frame.ts,
            hooks=self._status_hooks,
            detail=frame.detail,
        )

    async def _participants(self, session: AsyncSession, frame: ParticipantsEvent) -> None:
        meeting = await self._meeting(session)
        meeting.participants = list(frame.participants)
        if frame.meeting_name:
            # The title the bot read from the page (data.name; purge nulls it again).
            meeting.name = frame.meeting_name
        present = list(frame.participants)
        moves = (
            (events.EventType.PARTICIPANT_JOINED, events.ParticipantJoined, frame.joined),
            (events.EventType.PARTICIPANT_LEFT, events.ParticipantLeft, frame.left),
        )
        for event_type, event, names in moves:  # the joins first, then the leaves
            for name in names:
                data = event(**self._about, name=name, participants=present)
                await self._emit(session, event_type, data, frame.ts)

    async def _transcription_ready(self, session: AsyncSession, frame: TranscriptionReady) -> None:
        # Every final the agent sent before this frame is stored (a link's frames are stored in
        # order): the meeting's transcript is complete, and its summary need wait no longer.
        await session.execute(
            update(Meeting)
            .where(Meeting.id == self._identity.meeting_id, Meeting.transcript_ready_at.is_(None))
            .values(transcript_ready_at=datetime.now(UTC))
            .execution_options(synchronize_session=False)
        )
        await self._emit(
            session,
            events.EventType.TRANSCRIPTION_READY,
            events.TranscriptionReady(
                **self._about, tier=frame.tier, segment_count=frame.segment_count
            ),
            frame.ts,
        )

    async def _artifact(self, session: AsyncSession, frame: ArtifactEvent) -> None:
        bot = self._identity
        if not frame.storage_key.startswith(bot_prefix(bot.bot_id)):
            logger.warning(
                "agent artifact outside its prefix ignored", extra={"bot_id": str(bot.bot_id)}
            )
            return
        new = await add_artifact(
            session,
            bot.meeting_id,
            artifact_id=frame.artifact_id,
            kind=frame.kind.value,
            storage_key=frame.storage_key,
            content_type=frame.content_type,
            size_bytes=frame.size_bytes,
            media_format=frame.format,
            duration_s=frame.duration_s,
            width=frame.width,
            height=frame.height,
            captured_at=frame.captured_at,
        )
        if new and frame.kind is ArtifactKind.RECORDING:
            await self._emit(
                session,
                events.EventType.RECORDING_READY,
                events.RecordingReady(
                    **self._about,
                    recording_id=frame.artifact_id,
                    format=frame.format or "",
                    duration_s=frame.duration_s,
                ),
                frame.ts,
            )

    async def _chat_message(self, session: AsyncSession, frame: ChatMessageEvent) -> None:
        await insert_once(
            session,
            ChatMessage,
            {
                "meeting_id": self._identity.meeting_id,
                "message_id": frame.message_id,
                "sender": frame.sender,
                "text": frame.text,
                "timestamp": frame.timestamp,
                "from_bot": frame.from_bot,
            },
            key=("meeting_id", "message_id"),
        )

    async def _action(self, session: AsyncSession, frame: ActionEvent) -> None:
        bot = self._identity
        await add_action(
            session,
            self._outbox,
            workspace_id=bot.workspace_id,
            bot_id=bot.bot_id,
            meeting_id=bot.meeting_id,
            identifier=frame.id,
            kind=frame.action_type.value,
            action=frame,
            at=frame.ts,
            streamed=True,  # the old agent detected it and put it on its own stream
        )
