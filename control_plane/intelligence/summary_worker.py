"""The summary worker: writes each final meeting's summary once, whichever replica gets to it.

Source: docs/api.md 2.14, docs/architecture.md §6. Rows of ``meeting_summaries`` are created
``pending`` by :func:`~control_plane.intelligence.summary_store.summary_status_hook` when a bot
with ``enable_actions`` true becomes final, with ``next_attempt_at`` = the end plus the settle
delay.

A summary waits for the meeting's whole transcript: a row is due only once its meeting's
transcript is complete (``meetings.transcript_ready_at``, set when the agent's
``transcription_ready`` is stored, which comes after its last final: a link's frames are stored
in order), or nothing was ever transcribed (the bot never became active, or transcription was
off), or ``transcript_wait`` has passed since the end (an agent lost with finals still in its
outbox may never deliver them; the summary is then written from what is stored). So finals that
arrive after the bot is final, e.g. from an agent that reconnects after the reaper made it
``agent_lost``, are in the summary.

A step claims one due row (``pending``, ``next_attempt_at`` passed, no live lease): PostgreSQL
``SELECT … FOR UPDATE SKIP LOCKED``, SQLite one conditional ``UPDATE … RETURNING`` (its writes
are serialised), as the scheduler claims launches. The claim sets ``claim_owner`` (this worker),
``lease_until`` (now + lease) and counts the attempt. The model is then called outside any
transaction (:func:`~control_plane.intelligence.summary.summarise`: parts of ``chunk_chars``
characters, map then reduce). The outcome is written only while the row is still this
worker's pending claim (``WHERE claim_owner = me AND status = 'pending'``): a purge meanwhile
deletes the row and the outcome is dropped; a lease that lapsed and was claimed again by
another worker makes this one's write a no-op, so exactly one ``ready`` and one
``summary.ready`` webhook are written per meeting.

- Ready: status, texts, model and tokens, and the ``summary.ready`` webhook in one transaction;
  after commit the ``summary_ready`` stream event is offered to the bot's stream.
- :class:`~control_plane.intelligence.chat.ChatUnavailable` or an answer of the wrong shape
  (:class:`~control_plane.intelligence.chat.ChatAnswerInvalid`): tried again after
  ``retry_base`` doubling to ``retry_max`` seconds, until ``max_attempts`` attempts.
- Attempts spent, or another :class:`~control_plane.intelligence.chat.ChatError`: ``failed``
  with the error, one warning logged and counted in :attr:`SummaryWorker.failed`.

Stopping (:meth:`SummaryWorker.running` ends) abandons a model call in flight (no transaction is
open during it) and gives its claim back uncounted, so another replica takes the meeting at
once instead of after the lease; a transaction in progress finishes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, exists, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.background import BackgroundLoop
from control_plane.db.engine import Database
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment
from control_plane.db.models.summary import MeetingSummary
from control_plane.intelligence.chat import (
    ChatAnswerInvalid,
    ChatError,
    ChatModel,
    ChatUnavailable,
)
from control_plane.intelligence.halting import Halted, unless_halted
from control_plane.intelligence.summary import Line, MeetingSummaryResult, summarise
from control_plane.intelligence.summary_metrics import SummaryMetrics
from control_plane.intelligence.summary_store import SummaryStatus, summary_out
from control_plane.webhooks.events import EventType, SummaryReady
from control_plane.webhooks.outbox import Outbox

logger = logging.getLogger(__name__)

SummaryEvent = Callable[[uuid.UUID, dict[str, object]], Awaitable[None]]
"""``await publish(bot_id, data)``: offers ``summary_ready`` to the bot's stream (best effort)."""


@dataclass(frozen=True, slots=True)
class SummaryPolicy:
    """How the worker paces and bounds its work (settings ``MEETBOT_INTELLIGENCE_SUMMARY_*``).

    Attributes:
        lease: How long a claim holds before another worker may take the meeting again.
        transcript_wait: Longest wait after the end for the agent's word that the transcript is
            complete (then the summary is written from the segments stored).
        max_attempts: Attempts before the summary is ``failed`` (at least 1).
        retry_base: Seconds before the second attempt; doubles with each further one.
        retry_max: Longest wait between attempts, seconds.
        chunk_chars: Most rendered transcript characters per model call (map/reduce parts).
        max_tokens: Longest answer of one call, tokens.
    """

    lease: timedelta = timedelta(minutes=10)
    transcript_wait: timedelta = timedelta(minutes=5)
    max_attempts: int = 5
    retry_base: float = 10.0
    retry_max: float = 600.0
    chunk_chars: int = 3840
    max_tokens: int = 512


@dataclass
class SummaryWorker:
    """Claims due summaries and writes them (see the module docstring).

    Args:
        database: The control plane's database.
        chat: The replica's one model.
        outbox: Writes ``summary.ready`` in the summary's transaction.
        policy: Lease, attempts, backoff, chunking.
        interval: Seconds between polls when nothing is due.
        publish: Offers the ``summary_ready`` stream event after commit; None offers nothing.
        metrics: Prometheus counters of the same outcomes; None keeps only the attributes.
        owner: This worker's id in ``claim_owner`` (host, pid and a random part).

    Attributes:
        ready: Summaries this worker wrote.
        retried: Attempts that failed transiently and were put back.
        failed: Summaries this worker gave up on (each logged once).
        superseded: Outcomes not written: the meeting was purged or claimed again meanwhile.
        dropped_items: Decisions and action items dropped for citing no line.
    """

    database: Database
    chat: ChatModel
    outbox: Outbox
    policy: SummaryPolicy = field(default_factory=SummaryPolicy)
    interval: float = 5.0
    publish: SummaryEvent | None = None
    metrics: SummaryMetrics | None = None
    owner: str = field(
        default_factory=lambda: f"{socket.gethostname()[:80]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    )
    ready: int = 0
    retried: int = 0
    failed: int = 0
    superseded: int = 0
    dropped_items: int = 0
    loop: BackgroundLoop = field(init=False)
    _halt: asyncio.Event = field(init=False, default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.loop = BackgroundLoop("summaries", self.step, interval=self.interval)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the loop for the block; at its end abandon a call in flight, then stop the loop.

        The abandoned meeting's claim is released (:meth:`work`), so another replica takes it
        at once; a transaction in progress finishes first (the loop never cancels a step).
        """
        async with self.loop.running():
            try:
                yield
            finally:
                self.halt()

    def halt(self) -> None:
        """Abandon the model call in flight, now and for every later :meth:`work`."""
        self._halt.set()

    async def step(self) -> bool:
        """Claim and work one due summary; True when one was worked (more may be due)."""
        now = datetime.now(UTC)
        claimed = await self.claim(now)
        if claimed is None:
            return False
        await self.work(claimed)
        return True

    def _due(self, now: datetime) -> tuple[ColumnElement[bool], ...]:
        transcribed = Meeting.settings["transcribe_enabled"].as_boolean() == true()
        complete = exists().where(
            Meeting.id == MeetingSummary.meeting_id,
            or_(
                Meeting.transcript_ready_at.is_not(None),
                Meeting.start_time.is_(None),
                ~transcribed,
            ),
        )
        return (
            MeetingSummary.status == SummaryStatus.PENDING.value,
            MeetingSummary.next_attempt_at <= now,
            or_(MeetingSummary.lease_until.is_(None), MeetingSummary.lease_until < now),
            or_(complete, MeetingSummary.created_at <= now - self.policy.transcript_wait),
        )

    async def claim(self, now: datetime) -> int | None:
        """Claim one due summary for this worker; its meeting id, or None when none is due."""
        lease_until = now + self.policy.lease
        async with self.database.sessions.begin() as session:
            if self.database.dialect == "postgresql":
                row = (
                    await session.execute(
                        select(MeetingSummary)
                        .where(*self._due(now))
                        .order_by(MeetingSummary.next_attempt_at, MeetingSummary.meeting_id)
                        .limit(1)
                        .with_for_update(skip_locked=True)
                    )
                ).scalar_one_or_none()
                if row is None:
                    return None
                row.claim_owner = self.owner
                row.lease_until = lease_until
                row.attempts += 1
                return row.meeting_id
            due = (
                select(MeetingSummary.meeting_id)
                .where(*self._due(now))
                .order_by(MeetingSummary.next_attempt_at, MeetingSummary.meeting_id)
                .limit(1)
                .scalar_subquery()
            )
            claimed = (
                await session.execute(
                    update(MeetingSummary)
                    .where(MeetingSummary.meeting_id == due)
                    .values(
                        claim_owner=self.owner,
                        lease_until=lease_until,
                        attempts=MeetingSummary.attempts + 1,
                    )
                    .returning(MeetingSummary.meeting_id)
                    .execution_options(synchronize_session=False)
                )
            ).scalar_one_or_none()
            return claimed

    async def work(self, meeting_id: int) -> None:
        """Summarise the claimed meeting and write the outcome (see the module docstring)."""
        async with self.database.reads() as session:
            lines = await _lines(session, meeting_id)
        try:
            result = await unless_halted(
                summarise(
                    self.chat,
                    lines,
                    chunk_chars=self.policy.chunk_chars,
                    max_tokens=self.policy.max_tokens,
                ),
                self._halt,
                name="summary-call",
            )
        except Halted:
            await self._release(meeting_id)
            return
        except (ChatUnavailable, ChatAnswerInvalid) as exc:
            await self._retry_or_fail(meeting_id, f"{type(exc).__name__}: {exc}")
            return
        except ChatError as exc:
            await self._fail(meeting_id, f"{type(exc).__name__}: {exc}")
            return
        await self._store(meeting_id, result)

    async def _release(self, meeting_id: int) -> None:
        """Give an abandoned claim back at once, its attempt not counted (nothing was tried)."""
        async with self.database.sessions.begin() as session:
            row = await self._claimed(session, meeting_id)
            if row is not None:
                row.claim_owner = None
                row.lease_until = None
                row.attempts -= 1
        logger.info("summary call abandoned at stop", extra={"meeting": meeting_id})

    def _superseded(self, meeting_id: int) -> None:
        """Count and log an outcome not written (the row was purged or claimed again)."""
        self.superseded += 1
        if self.metrics is not None:
            self.metrics.attempts.labels(outcome="superseded").inc()
        logger.info(
            "summary not written: the meeting was purged or claimed again",
            extra={"meeting": meeting_id},
        )

    async def _claimed(self, session: AsyncSession, meeting_id: int) -> MeetingSummary | None:
        """The meeting's row while it is still this worker's pending claim, else None."""
        query = select(MeetingSummary).where(
            MeetingSummary.meeting_id == meeting_id,
            MeetingSummary.claim_owner == self.owner,
            MeetingSummary.status == SummaryStatus.PENDING.value,
        )
        return (await session.execute(query)).scalar_one_or_none()

    async def _store(self, meeting_id: int, result: MeetingSummaryResult) -> None:
        now = datetime.now(UTC)
        async with self.database.sessions.begin() as session:
            row = await self._claimed(session, meeting_id)
            meeting = await session.get(Meeting, meeting_id)
            if row is None or meeting is None:
                self._superseded(meeting_id)
                return
            row.status = SummaryStatus.READY.value
            row.summary = result.summary
            row.decisions = [decision.as_json() for decision in result.decisions]
            row.action_items = [item.as_json() for item in result.action_items]
            row.model = self.chat.name
            row.prompt_tokens = result.prompt_tokens
            row.completion_tokens = result.completion_tokens
            row.claim_owner = None
            row.lease_until = None
            row.error = None
            row.ready_at = now
            out = summary_out(row)
            data = SummaryReady(
                bot_id=str(meeting.bot_id),
                meeting_id=meeting_id,
                **out.model_dump(mode="json", exclude={"status", "error"}),
            )
            await self.outbox.emit(
                session, meeting.workspace_id, EventType.SUMMARY_READY, data, at=now
            )
            bot_id = meeting.bot_id
        self.ready += 1
        self.dropped_items += result.dropped
        if self.metrics is not None:
            self.metrics.attempts.labels(outcome="ready").inc()
            self.metrics.calls.inc(result.calls)
            self.metrics.tokens.inc(result.prompt_tokens + result.completion_tokens)
            self.metrics.items_dropped.inc(result.dropped)
        if self.publish is not None:
            await self.publish(bot_id, out.model_dump(mode="json", exclude={"error"}))

    async def _retry_or_fail(self, meeting_id: int, error: str) -> None:
        now = datetime.now(UTC)
        async with self.database.sessions.begin() as session:
            row = await self._claimed(session, meeting_id)
            if row is None:
                self._superseded(meeting_id)
                return
            if row.attempts >= self.policy.max_attempts:
                self._mark_failed(row, error)
                return
            wait = min(self.policy.retry_base * 2 ** (row.attempts - 1), self.policy.retry_max)
            row.next_attempt_at = now + timedelta(seconds=wait)
            row.claim_owner = None
            row.lease_until = None
            row.error = error[:2000]
        self.retried += 1
        if self.metrics is not None:
            self.metrics.attempts.labels(outcome="retried").inc()

    async def _fail(self, meeting_id: int, error: str) -> None:
        async with self.database.sessions.begin() as session:
            row = await self._claimed(session, meeting_id)
            if row is None:
                self._superseded(meeting_id)
            else:
                self._mark_failed(row, error)

    def _mark_failed(self, row: MeetingSummary, error: str) -> None:
        row.status = SummaryStatus.FAILED.value
        row.error = error[:2000]
        row.claim_owner = None
        row.lease_until = None
        self.failed += 1
        if self.metrics is not None:
            self.metrics.attempts.labels(outcome="failed").inc()
        logger.warning(
            "meeting summary failed after %d attempt(s): %s",
            row.attempts,
            error[:300],
            extra={"meeting": row.meeting_id},
        )


async def _lines(session: AsyncSession, meeting_id: int) -> list[Line]:
    rows = await session.execute(
        select(Segment.segment_id, Segment.speaker, Segment.start, Segment.end, Segment.text)
        .where(Segment.meeting_id == meeting_id, Segment.text != "")
        .order_by(Segment.start, Segment.id)
    )
    return [
        Line(segment_id, speaker, None, start, end, text)
        for segment_id, speaker, start, end, text in rows
    ]
