"""Storing what an agent reports: one handler per frame type, each frame stored once by id.

:class:`FrameStore` is the control plane's half of the link protocol (docs/architecture.md §5).
Frames
with effects in the database (``status``, ``participants``, ``transcript_segment``,
``transcription_ready``, ``artifact``, ``chat_message``, ``action``) are applied in one
transaction together with an :class:`~control_plane.db.models.agent_link.AgentFrameReceipt`
of their id, and webhook events they cause are written into the webhook outbox in that same
transaction: a frame resent after a reconnect finds its receipt and changes nothing, and a
crash can neither lose nor duplicate an event. Every frame but ``ack`` is acked.

Status moves go through the status-change service; a move the status table does not allow
(a late or repeated report) is acked and ignored.

:func:`store_batch` stores the frames of several links in the caller's one transaction (the
link's batcher, :mod:`control_plane.agent_link.batch`): one ``last_seen_at`` update for every
link in the batch, the batch's ``register`` frames in one update per agent version, one receipt
lookup and one lock of the meeting rows its ``status`` and ``participants`` frames change, then
each new frame's handler in order; the receipts and the segments (an upsert by segment id) are
written as plain rows in one statement each, without ORM objects. A ``register``'s effects
outside the database (the hub learns the agent is here, the stream is resumed, a pending stop
is said again) follow its commit (:meth:`FrameStore.finish`), so a reconnect storm after a
replica died costs a few transactions, not one per link. :meth:`FrameStore.apply` is the
one-frame path.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, any_, func, insert, literal, select, tuple_, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.link import (
    Ack,
    ActionEvent,
    AgentFrame,
    ArtifactEvent,
    ArtifactKind,
    ChatMessageEvent,
    CommandResult,
    Heartbeat,
    MemoryReport,
    ParticipantsEvent,
    Register,
    StatusEvent,
    StopCommand,
    StreamBatch,
    StreamEnd,
    StreamEvent,
    TranscriptionReady,
    TranscriptSegmentEvent,
)
from agent.contracts.status import BotStatus, can_transition
from control_plane.agent_hub.artifacts import add_artifact
from control_plane.agent_hub.hub import AgentHub
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import Database
from control_plane.db.models.action import MeetingAction
from control_plane.db.models.agent_link import AgentFrameReceipt, AgentLink, ChatMessage
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment
from control_plane.hooks import StatusHook
from control_plane.intelligence.window_store import add_action
from control_plane.storage.base import bot_prefix
from control_plane.webhooks import events
from control_plane.webhooks.outbox import Outbox

logger = logging.getLogger(__name__)

StoredFrame = (
    StatusEvent
    | ParticipantsEvent
    | TranscriptSegmentEvent
    | TranscriptionReady
    | ArtifactEvent
    | ChatMessageEvent
    | ActionEvent
)
_STORED_TYPES = (
    StatusEvent,
    ParticipantsEvent,
    TranscriptSegmentEvent,
    TranscriptionReady,
    ArtifactEvent,
    ChatMessageEvent,
    ActionEvent,
)
# Frames whose only effect besides their own (none, or one in memory) is ``last_seen_at``;
# ``register`` also records the agent's version and its first registration.
_TOUCH_TYPES = (Heartbeat, CommandResult, MemoryReport, Register)
_Handler = Callable[[AsyncSession, Any], Awaitable[None]]
# A frame's transaction refreshes last_seen_at at most this often (heartbeats always do).
_TOUCH_EVERY = timedelta(seconds=1)
# Frames whose handler changes their meeting's row under its lock.
_MEETING_TYPES = (StatusEvent, ParticipantsEvent)
# The tables themselves: statements on them are Core executemany, not the ORM's bulk path.
_RECEIPTS = cast(Table, AgentFrameReceipt.__table__)
_SEGMENTS = cast(Table, Segment.__table__)
# session.info key: meeting id → the Meeting row a batch locked for its frames at once.
_LOCKED_MEETINGS = "meetbot_link_locked_meetings"


@dataclass(frozen=True)
class LinkIdentity:
    """Which bot a link belongs to (found by its agent token)."""

    meeting_id: int
    bot_id: uuid.UUID
    workspace_id: uuid.UUID


class FrameStore:
    """Applies an authenticated agent's frames for one bot.

    Args:
        db: The control plane's database.
        hub: Where command results and registrations are announced.
        identity: The bot the link belongs to.
        status_hooks: The app's status hooks (webhook ``bot.status_changed`` and others).
        outbox: Where the agent's events become webhook events (wakes the webhook worker).
    """

    def __init__(
        self,
        db: Database,
        hub: AgentHub,
        identity: LinkIdentity,
        status_hooks: list[StatusHook],
        outbox: Outbox,
    ) -> None:
        self._outbox = outbox
        self._db = db
        self._hub = hub
        self._identity = identity
        self._status_hooks = status_hooks
        self._touched_at: datetime | None = None
        # The meeting's status read by the batch that stored this link's last ``register``.
        self._registered_status: str | None = None
        self._handlers: dict[str, _Handler] = {
            "status": self._status,
            "participants": self._participants,
            "transcript_segment": self._segment,
            "transcription_ready": self._transcription_ready,
            "artifact": self._artifact,
            "chat_message": self._chat_message,
            "action": self._action,
        }

    @property
    def meeting_id(self) -> int:
        """The link's meeting (the primary key of its ``agent_links`` row)."""
        return self._identity.meeting_id

    @property
    def bot_id(self) -> uuid.UUID:
        """The link's bot."""
        return self._identity.bot_id

    @staticmethod
    def batched(frame: AgentFrame) -> bool:
        """Whether ``frame`` is stored through :func:`store_batch` (all but ack and stream)."""
        return isinstance(frame, _STORED_TYPES + _TOUCH_TYPES)

    async def finish(self, frame: AgentFrame) -> None:
        """A batched frame's effect outside the database, once its batch committed.

        For ``register``: the hub learns the agent is here, its stream is resumed from where
        this replica's window ends, and a stop requested while the agent was away is sent
        again. Other frames have none. A link whose meeting is gone registers nothing.
        """
        if not isinstance(frame, Register):
            return
        status, self._registered_status = self._registered_status, None
        if status is not None:
            await self._registered(frame, status)

    async def prepare(self, frame: AgentFrame) -> None:
        """A batched frame's effect outside the database, before its batch is stored.

        A ``command_result`` goes to the request waiting for it; a ``memory`` report is logged.
        """
        if isinstance(frame, CommandResult):
            await self._hub.resolve(frame)
        elif isinstance(frame, MemoryReport):
            self._memory(frame)

    def count(self, frame: AgentFrame, outcome: str) -> None:
        """Count one handled frame (``meetbot_agent_frames_total``)."""
        if self._hub.metrics is not None:
            self._hub.metrics.frames.labels(frame.type, outcome).inc()

    def observe_stored(self, seconds: float) -> None:
        """Note how long a run of frames took from being read to its commit."""
        if self._hub.metrics is not None:
            self._hub.metrics.frame_store.observe(seconds)

    def observe_acked(self, seconds: float) -> None:
        """Note how long a run's acks took from its commit being known to being written."""
        if self._hub.metrics is not None:
            self._hub.metrics.observe_stage("ack", seconds)

    async def apply(self, frame: AgentFrame) -> bool:
        """Apply one frame; return whether it is to be acked (every frame but ``ack``)."""
        if isinstance(frame, Ack):
            return False
        now = datetime.now(UTC)
        outcome = "other"
        if isinstance(frame, Heartbeat):
            await self._touch(now)
        elif isinstance(frame, CommandResult):
            await self._hub.resolve(frame)
            await self._touch(now)
        elif isinstance(frame, Register):
            await self._register(frame, now)
        elif isinstance(frame, StreamEvent | StreamEnd | StreamBatch):
            return False  # the endpoint hands stream frames to the hub's streams, unacked
        elif isinstance(frame, MemoryReport):
            self._memory(frame)
            await self._touch(now)
        else:
            outcome = "stored" if await self._store(frame, now) else "duplicate"
        if self._hub.metrics is not None:
            self._hub.metrics.frames.labels(frame.type, outcome).inc()
        return True

    async def _touch(self, now: datetime, session: AsyncSession | None = None) -> None:
        self._touched_at = now
        statement = (
            update(AgentLink)
            .where(AgentLink.meeting_id == self._identity.meeting_id)
            .values(last_seen_at=now)
        )
        if session is not None:
            await session.execute(statement)
            return
        async with self._db.sessions.begin() as own:
            await own.execute(statement)

    async def _register(self, frame: Register, now: datetime) -> None:
        async with self._db.sessions.begin() as session:
            link = await session.get(AgentLink, self._identity.meeting_id)
            if link is None:
                return
            link.agent_version = frame.agent_version
            link.registered_at = link.registered_at or now
            link.last_seen_at = now
            status = await session.scalar(
                select(Meeting.status).where(Meeting.id == self._identity.meeting_id)
            )
        if status is not None:
            await self._registered(frame, status)

    async def _registered(self, frame: Register, status: str) -> None:
        self._hub.mark_registered(self._identity.bot_id)
        await self._hub.streams.on_register(self._identity.bot_id, frame.stream_seq)
        logger.info(
            "agent registered",
            extra={"bot_id": str(self._identity.bot_id), "agent_version": frame.agent_version},
        )
        if status == BotStatus.STOPPING:
            # A stop may have been requested while the agent was away: say it again (an agent
            # already leaving ignores it).
            await self._hub.notify(self._identity.bot_id, StopCommand())

    def _memory(self, frame: MemoryReport) -> None:
        """Log an agent's memory report (``meetbot_agent_frames_total`` counts it).

        Nothing is stored: the report is an operator's signal, not part of the meeting.
        """
        logger.warning(
            "agent memory above its %s threshold",
            frame.level,
            extra={
                "bot_id": str(self._identity.bot_id),
                "level": frame.level,
                "tree_mb": frame.tree_mb,
                "parts": frame.parts,
                "relieved": frame.relieved,
                "after_mb": frame.after_mb,
            },
        )

    async def _store(self, frame: StoredFrame, now: datetime) -> bool:
        """Apply a frame with effects once; return False when its id was stored before."""
        try:
            async with self._db.sessions.begin() as session:
                seen = await session.get(AgentFrameReceipt, (self._identity.meeting_id, frame.id))
                if self._touched_at is None or now - self._touched_at >= _TOUCH_EVERY:
                    await self._touch(now, session)
                if seen is not None:
                    return False
                session.add(
                    AgentFrameReceipt(
                        meeting_id=self._identity.meeting_id,
                        frame_id=frame.id,
                        frame_type=frame.type,
                        received_at=now,
                    )
                )
                await self._handlers[frame.type](session, frame)
        except IntegrityError:
            # The same frame arrived on an older connection at the same moment and won.
            logger.info(
                "agent frame stored concurrently",
                extra={"bot_id": str(self._identity.bot_id), "frame_type": frame.type},
            )
            return False
        return True

    # Handlers (inside the frame's transaction) ------------------------------------------------

    async def _meeting(self, session: AsyncSession) -> Meeting:
        locked: dict[int, Meeting] = session.info.get(_LOCKED_MEETINGS, {})
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
        common = {"bot_id": str(meeting.bot_id), "meeting_id": meeting.id}
        for name in frame.joined:
            await self._outbox.emit(
                session,
                meeting.workspace_id,
                events.EventType.PARTICIPANT_JOINED,
                events.ParticipantJoined(
                    **common, name=name, participants=list(frame.participants)
                ),
                at=frame.ts,
            )
        for name in frame.left:
            await self._outbox.emit(
                session,
                meeting.workspace_id,
                events.EventType.PARTICIPANT_LEFT,
                events.ParticipantLeft(**common, name=name, participants=list(frame.participants)),
                at=frame.ts,
            )

    async def _segment(self, session: AsyncSession, frame: TranscriptSegmentEvent) -> None:
        bot = self._identity
        row = await session.scalar(
            select(Segment).where(
                Segment.meeting_id == bot.meeting_id, Segment.segment_id == frame.segment.id
            )
        )
        self._fill_segment(session, frame, {} if row is None else {row.segment_id: row})

    def _fill_segment(
        self,
        session: AsyncSession,
        frame: TranscriptSegmentEvent,
        rows: dict[str, Segment],
    ) -> None:
        """Write ``frame``'s segment into its row in ``rows`` (segment id → row), added if new."""
        bot = self._identity
        data = frame.segment
        row = rows.get(data.id)
        if row is None:
            row = Segment(meeting_id=bot.meeting_id, segment_id=data.id)
            session.add(row)
            rows[data.id] = row
        row.start = data.start
        row.end = data.end
        row.absolute_start_time = data.absolute_start_time
        row.absolute_end_time = data.absolute_end_time
        row.text = data.text
        row.speaker = data.speaker
        row.language = data.language
        row.completed = data.completed
        row.tier = data.tier

    async def _transcription_ready(self, session: AsyncSession, frame: TranscriptionReady) -> None:
        bot = self._identity
        await self._outbox.emit(
            session,
            bot.workspace_id,
            events.EventType.TRANSCRIPTION_READY,
            events.TranscriptionReady(
                bot_id=str(bot.bot_id),
                meeting_id=bot.meeting_id,
                tier=frame.tier,
                segment_count=frame.segment_count,
            ),
            at=frame.ts,
        )

    async def _artifact(self, session: AsyncSession, frame: ArtifactEvent) -> None:
        bot = self._identity
        if not frame.storage_key.startswith(bot_prefix(bot.bot_id)):
            logger.warning(
                "agent artifact outside its prefix ignored", extra={"bot_id": str(bot.bot_id)}
            )
            return
        row = await add_artifact(
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
        if row is not None and frame.kind is ArtifactKind.RECORDING:
            await self._outbox.emit(
                session,
                bot.workspace_id,
                events.EventType.RECORDING_READY,
                events.RecordingReady(
                    bot_id=str(bot.bot_id),
                    meeting_id=bot.meeting_id,
                    recording_id=frame.artifact_id,
                    format=frame.format or "",
                    duration_s=frame.duration_s,
                ),
                at=frame.ts,
            )

    async def _chat_message(self, session: AsyncSession, frame: ChatMessageEvent) -> None:
        bot = self._identity
        exists = await session.scalar(
            select(ChatMessage.id).where(
                ChatMessage.meeting_id == bot.meeting_id, ChatMessage.message_id == frame.message_id
            )
        )
        if exists is None:
            session.add(
                ChatMessage(
                    meeting_id=bot.meeting_id,
                    message_id=frame.message_id,
                    sender=frame.sender,
                    text=frame.text,
                    timestamp=frame.timestamp,
                    from_bot=frame.from_bot,
                )
            )

    async def _action(self, session: AsyncSession, frame: ActionEvent) -> None:
        bot = self._identity
        exists = await session.scalar(
            select(MeetingAction.id).where(
                MeetingAction.meeting_id == bot.meeting_id, MeetingAction.action_id == frame.id
            )
        )
        if exists is not None:
            return
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
        )


def _among(session: AsyncSession, column: Any, values: Sequence[Any]) -> ColumnElement[bool]:
    """``column IN values``; on PostgreSQL ``column = ANY(:array)``, one parameter.

    An ``IN`` list renders one bound parameter per value, so every batch size is a statement of its
    own: asyncpg prepares it again (a round trip) and SQLAlchemy renders it again. The array
    form is one statement for every size, prepared once per connection.
    """
    if session.get_bind().dialect.name == "postgresql":
        return cast(ColumnElement[bool], column == any_(literal(list(values), ARRAY(column.type))))
    return cast(ColumnElement[bool], column.in_(values))


async def _receipts_of(session: AsyncSession, keys: list[tuple[int, str]]) -> set[tuple[int, str]]:
    """Which of ``keys`` (meeting id, frame id) have a receipt already."""
    if session.get_bind().dialect.name == "postgresql":
        # Both columns by array (one statement for every size); the pairs are checked here.
        found = await session.execute(
            select(AgentFrameReceipt.meeting_id, AgentFrameReceipt.frame_id).where(
                _among(session, AgentFrameReceipt.frame_id, [frame_id for _, frame_id in keys]),
                _among(session, AgentFrameReceipt.meeting_id, sorted({m for m, _ in keys})),
            )
        )
    else:
        found = await session.execute(
            select(AgentFrameReceipt.meeting_id, AgentFrameReceipt.frame_id).where(
                tuple_(AgentFrameReceipt.meeting_id, AgentFrameReceipt.frame_id).in_(keys)
            )
        )
    wanted = set(keys)
    return {
        key
        for key in ((int(meeting_id), str(frame_id)) for meeting_id, frame_id in found.all())
        if key in wanted
    }


async def _register_all(
    session: AsyncSession, registers: Sequence[tuple[FrameStore, Register]], now: datetime
) -> None:
    """Record a batch's ``register`` frames: one update per agent version, one status read.

    Each link's store keeps its meeting's status for :meth:`FrameStore.finish` (none when the
    meeting is gone).
    """
    if not registers:
        return
    versions: dict[str, set[int]] = {}
    for store, frame in registers:
        versions.setdefault(frame.agent_version, set()).add(store.meeting_id)
    for version, ids in sorted(versions.items()):
        await session.execute(
            update(AgentLink)
            .where(_among(session, AgentLink.meeting_id, sorted(ids)))
            .values(
                agent_version=version,
                registered_at=func.coalesce(AgentLink.registered_at, now),
            )
            .execution_options(synchronize_session=False)
        )
    registered = sorted({store.meeting_id for store, _ in registers})
    statuses = dict(
        (
            await session.execute(
                select(Meeting.id, Meeting.status).where(_among(session, Meeting.id, registered))
            )
        ).all()
    )
    for store, _ in registers:
        store._registered_status = statuses.get(store.meeting_id)


async def _lock_meetings(session: AsyncSession, meeting_ids: set[int]) -> None:
    """Lock the rows of ``meeting_ids`` in one query, in id order, for the batch's handlers.

    One ``SELECT … FOR UPDATE`` instead of one per frame; the id order is the one every batch
    takes, so two writers' transactions never wait on each other in a cycle.
    """
    if not meeting_ids:
        return
    rows = await session.scalars(
        select(Meeting)
        .where(_among(session, Meeting.id, sorted(meeting_ids)))
        .order_by(Meeting.id)
        .with_for_update()
    )
    session.info[_LOCKED_MEETINGS] = {row.id: row for row in rows}


async def store_batch(
    session: AsyncSession, entries: Sequence[tuple[FrameStore, AgentFrame]], now: datetime
) -> list[str]:
    """Store batched frames of one or more links in ``session``'s transaction (caller commits).

    ``entries`` are (link's store, frame) in the order each link sent them; every frame is one
    :meth:`FrameStore.batched` accepts. Every link in the batch has its ``last_seen_at`` set to
    ``now``; a frame with effects whose receipt exists (or that came twice in the batch) changes
    nothing. Returns one outcome per entry: ``stored``, ``duplicate``, ``touched`` (a frame
    with no effect in the database but ``last_seen_at``) or ``other`` (``register``).

    Raises:
        sqlalchemy.exc.SQLAlchemyError: The database refused (the whole transaction is void).
        LookupError: A link's meeting is gone.
    """
    meeting_ids = sorted({store.meeting_id for store, _ in entries})
    # No AgentLink object lives in a batch's session: nothing to synchronise (the ORM's
    # evaluation of the WHERE against its identity map showed in the profile).
    await session.execute(
        update(AgentLink)
        .where(_among(session, AgentLink.meeting_id, meeting_ids))
        .values(last_seen_at=now)
        .execution_options(synchronize_session=False)
    )
    for store, _ in entries:
        store._touched_at = now
    await _register_all(
        session, [(store, frame) for store, frame in entries if isinstance(frame, Register)], now
    )
    stored = [(store, frame) for store, frame in entries if isinstance(frame, _STORED_TYPES)]
    seen: set[tuple[int, str]] = set()
    if stored:
        keys = [(store.meeting_id, frame.id) for store, frame in stored]
        seen = await _receipts_of(session, keys)
    await _lock_meetings(
        session,
        {
            store.meeting_id
            for store, frame in stored
            if isinstance(frame, _MEETING_TYPES) and (store.meeting_id, frame.id) not in seen
        },
    )
    receipts: list[dict[str, Any]] = []
    # (meeting id, segment id) → the row's values; a later frame of the same segment wins.
    segments: dict[tuple[int, str], dict[str, Any]] = {}
    outcomes = []
    for store, frame in entries:
        if not isinstance(frame, _STORED_TYPES):
            # ``register`` keeps the label it had when stored on its own.
            outcomes.append("other" if isinstance(frame, Register) else "touched")
            continue
        key = (store.meeting_id, frame.id)
        if key in seen:
            outcomes.append("duplicate")
            continue
        seen.add(key)
        receipts.append(
            {
                "meeting_id": store.meeting_id,
                "frame_id": frame.id,
                "frame_type": frame.type,
                "received_at": now,
            }
        )
        if isinstance(frame, TranscriptSegmentEvent):
            segments[(store.meeting_id, frame.segment.id)] = _segment_values(
                store.meeting_id, frame
            )
        else:
            await store._handlers[frame.type](session, frame)
        outcomes.append("stored")
    if receipts:
        await session.execute(insert(_RECEIPTS), receipts)
    if segments:
        await _upsert_segments(session, list(segments.values()))
    return outcomes


def _segment_values(meeting_id: int, frame: TranscriptSegmentEvent) -> dict[str, Any]:
    """The ``segments`` row of ``frame`` as column values."""
    data = frame.segment
    return {
        "meeting_id": meeting_id,
        "segment_id": data.id,
        "start": data.start,
        "end": data.end,
        "absolute_start_time": data.absolute_start_time,
        "absolute_end_time": data.absolute_end_time,
        "text": data.text,
        "speaker": data.speaker,
        "language": data.language,
        "completed": data.completed,
        "tier": data.tier,
    }


async def _upsert_segments(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` into ``segments``, replacing the row of a segment id already stored.

    One statement for the batch (executed per row by the driver), no ORM objects: a final
    segment replaces its partials by (meeting, segment id), on PostgreSQL and SQLite alike.
    """
    upsert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = upsert(_SEGMENTS)
    columns = [name for name in rows[0] if name not in ("meeting_id", "segment_id")]
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["meeting_id", "segment_id"],
            set_={name: statement.excluded[name] for name in columns},
        ),
        rows,
    )
