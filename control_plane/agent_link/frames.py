"""Storing what an agent reports: each frame stored once by id, its effects in one transaction.

:class:`FrameStore` is the control plane's half of the link protocol (docs/architecture.md §5)
for one link. Frames with effects in the database (``status``, ``participants``,
``transcript_segment``, ``transcription_ready``, ``artifact``, ``chat_message``, ``action``) are
applied in one transaction together with an
:class:`~control_plane.db.models.agent_link.AgentFrameReceipt` of their id; what each one
changes, and the webhook events it writes into the outbox in that same transaction, is
:mod:`control_plane.agent_link.frame_effects`. A frame resent after a reconnect (or on another
connection at the same moment) finds its receipt and changes nothing, and a crash can neither
lose nor duplicate an event. Every frame but ``ack`` is acked.

:func:`store_batch` stores the frames of several links in the caller's one transaction (the
link's batcher, :mod:`control_plane.agent_link.batch`): one ``last_seen_at`` update for every
link in the batch, the batch's ``register`` frames in one update per agent version, the
receipts of its frames in one ``INSERT … ON CONFLICT DO NOTHING`` that returns which are new,
one lock of the meeting rows its new ``status`` and ``participants`` frames change, then each
new frame's effects in order; the segments are one upsert by segment id, written as plain rows
without ORM objects. A ``register``'s effects outside the database (the hub learns the agent is
here, the stream is resumed, a pending stop is said again) follow its commit
(:meth:`FrameStore.finish`), so a reconnect storm after a replica died costs a few
transactions, not one per link. :meth:`FrameStore.apply` is the one-frame path: a batch of one
in its own transaction.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, any_, func, literal, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.link import (
    ActionEvent,
    AgentFrame,
    ArtifactEvent,
    ChatMessageEvent,
    CommandResult,
    Heartbeat,
    MemoryReport,
    ParticipantsEvent,
    Register,
    StatusEvent,
    StopCommand,
    TranscriptionReady,
    TranscriptSegmentEvent,
)
from agent.contracts.status import BotStatus
from control_plane.agent_hub.hub import AgentHub
from control_plane.agent_link.frame_effects import LOCKED_MEETINGS, FrameEffects, LinkIdentity
from control_plane.db.engine import Database
from control_plane.db.inserts import dialect_insert
from control_plane.db.models.agent_link import AgentFrameReceipt, AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment
from control_plane.hooks import StatusHook
from control_plane.webhooks.outbox import Outbox

# LinkIdentity is named here too, beside the FrameStore it builds.
__all__ = ["FrameStore", "LinkIdentity", "store_batch"]

logger = logging.getLogger(__name__)

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
# Frames whose handler changes their meeting's row under its lock.
_MEETING_TYPES = (StatusEvent, ParticipantsEvent)
# The tables themselves: statements on them are Core executemany, not the ORM's bulk path.
_RECEIPTS = cast(Table, AgentFrameReceipt.__table__)
_SEGMENTS = cast(Table, Segment.__table__)


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
        self._db = db
        self._hub = hub
        self._identity = identity
        self.effects = FrameEffects(identity, status_hooks, outbox)
        """What the link's new frames change in its meeting (used by :func:`store_batch`)."""
        # The meeting's status read by the batch that stored this link's last ``register``.
        self._registered_status: str | None = None

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
        """Store one frame in its own transaction; return whether it is to be acked.

        A frame :meth:`batched` accepts is stored as a batch of one (:func:`store_batch`, with
        its :meth:`prepare` before and :meth:`finish` after), counted and acked; ``ack`` and
        the stream frames (the endpoint hands those to the hub's streams) are not.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: The database refused (nothing was stored).
            LookupError: The link's meeting is gone.
        """
        if not self.batched(frame):
            return False
        await self.prepare(frame)
        async with self._db.sessions.begin() as session:
            (outcome,) = await store_batch(session, [(self, frame)], datetime.now(UTC))
        await self.finish(frame)
        self.count(frame, outcome)
        return True

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


def _among(session: AsyncSession, column: Any, values: Sequence[Any]) -> ColumnElement[bool]:
    """``column IN values``; on PostgreSQL ``column = ANY(:array)``, one parameter.

    An ``IN`` list renders one bound parameter per value, so every batch size is a statement of its
    own: asyncpg prepares it again (a round trip) and SQLAlchemy renders it again. The array
    form is one statement for every size, prepared once per connection.
    """
    if session.get_bind().dialect.name == "postgresql":
        return cast(ColumnElement[bool], column == any_(literal(list(values), ARRAY(column.type))))
    return cast(ColumnElement[bool], column.in_(values))


async def _receive(
    session: AsyncSession, stored: Sequence[tuple[FrameStore, AgentFrame]], now: datetime
) -> set[tuple[int, str]]:
    """Write the receipts of ``stored`` (frames with effects); return the keys that are new.

    A key is (meeting id, frame id). One ``INSERT … ON CONFLICT DO NOTHING … RETURNING`` for
    the batch, in key order: a receipt stored before, or by a concurrent transaction (whose
    commit this one waits for), is not returned, so its frame is a duplicate.
    """
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for store, frame in stored:
        rows.setdefault(
            (store.meeting_id, frame.id),
            {
                "meeting_id": store.meeting_id,
                "frame_id": frame.id,
                "frame_type": frame.type,
                "received_at": now,
            },
        )
    if not rows:
        return set()
    statement = (
        dialect_insert(session, _RECEIPTS)
        .on_conflict_do_nothing(index_elements=["meeting_id", "frame_id"])
        .returning(_RECEIPTS.c.meeting_id, _RECEIPTS.c.frame_id)
    )
    written = await session.execute(statement, [rows[key] for key in sorted(rows)])
    return {(int(meeting_id), str(frame_id)) for meeting_id, frame_id in written.all()}


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
    session.info[LOCKED_MEETINGS] = {row.id: row for row in rows}


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
    await _register_all(
        session, [(store, frame) for store, frame in entries if isinstance(frame, Register)], now
    )
    stored = [(store, frame) for store, frame in entries if isinstance(frame, _STORED_TYPES)]
    new = await _receive(session, stored, now)
    await _lock_meetings(
        session,
        {
            store.meeting_id
            for store, frame in stored
            if isinstance(frame, _MEETING_TYPES) and (store.meeting_id, frame.id) in new
        },
    )
    # (meeting id, segment id) → the row's values; a later frame of the same segment wins.
    segments: dict[tuple[int, str], dict[str, Any]] = {}
    outcomes = []
    for store, frame in entries:
        if not isinstance(frame, _STORED_TYPES):
            # ``register`` keeps the label it had when stored on its own.
            outcomes.append("other" if isinstance(frame, Register) else "touched")
            continue
        key = (store.meeting_id, frame.id)
        if key not in new:
            outcomes.append("duplicate")
            continue
        new.discard(key)  # the same frame again later in the batch is a duplicate
        if isinstance(frame, TranscriptSegmentEvent):
            segments[(store.meeting_id, frame.segment.id)] = _segment_values(
                store.meeting_id, frame
            )
        else:
            await store.effects.apply(session, frame)
        outcomes.append("stored")
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
    statement = dialect_insert(session, _SEGMENTS)
    columns = [name for name in rows[0] if name not in ("meeting_id", "segment_id")]
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["meeting_id", "segment_id"],
            set_={name: statement.excluded[name] for name in columns},
        ),
        rows,
    )
