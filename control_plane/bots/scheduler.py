"""The scheduler: claims due bots exactly once, launches them, and reaps stuck launches.

Due bots are rows with status ``scheduled`` or ``requested``, ``launch_at <= now``, no
``bot_container_id`` and no live claim (``launch_lease_until`` null or past). A claim is a lease:
it sets ``launch_claimed_at``, ``launch_claim_owner`` (this scheduler's id) and
``launch_lease_until`` (now + ``lease``) atomically — PostgreSQL: ``SELECT … FOR UPDATE SKIP
LOCKED`` then ``UPDATE``, so concurrent replicas take disjoint rows; SQLite: one ``UPDATE …
WHERE id IN (SELECT … LIMIT n) RETURNING id`` (its transactions are exclusive) — and moves
``scheduled → requested`` (``scheduled_launch``) in the same transaction.

Exactly once across replicas and crashes: while a lease holds only its owner launches the row;
a process that died between the claim and storing the handle leaves a lapsed lease, and the
row is claimed and launched again. That second launch does not start a second VM: launchers
are idempotent by bot id (the ``local`` launcher finds the agent it already started, the
``memory`` launcher its record), and the agent token is derived from the bot id
(:mod:`control_plane.agent_link.config_step`), so the agent started the first time keeps
working. Storing a handle only fills an empty ``bot_container_id``; a handle that loses that
race (a duplicate from a non-idempotent launcher) is terminated.

After the claim commits, the batch's ``BotConfig``s are built by the
:class:`~control_plane.bots.config_builder.BotConfigBuilder` (network steps concurrently, then
the rest for the whole batch in one transaction), each is handed to the launcher, and the
returned handles are stored as ``bot_container_id`` in one transaction. A launch that fails
marks the bot ``failed``/``launch_failed``; a bot stopped while it was being launched is
terminated right away. A claim older than
``stale_claim`` without a handle (relaunching never succeeded) is failed by :meth:`maintain`.

:class:`Scheduler` runs in an owned :class:`~control_plane.background.BackgroundLoop` that the app
starts and stops (after the pass in progress). ``wake()`` makes it look now (after
``POST /api/v1/bots``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from aiohttp import web
from sqlalchemy import ColumnElement, or_, select, update

from agent.contracts.bot_config import BotConfig
from agent.contracts.status import DUE_STATUSES, BotStatus, StatusReason
from control_plane.api.idempotency import purge_expired
from control_plane.background import BackgroundLoop
from control_plane.bots.config_builder import (
    BotConfigBuilder,
    launch_failure_detail,
    log_launch_error,
)
from control_plane.bots.live_count import fold_live_changes
from control_plane.bots.status import change_status
from control_plane.db.engine import Database
from control_plane.db.models.bot import Meeting
from control_plane.hooks import (
    StatusHook,
)
from control_plane.launchers.base import BotLauncher, LaunchHandle
from control_plane.metrics import Metrics

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 30.0
"""How long a stop waits for a pass in progress (a launcher hanging) before cancelling it."""

_DUE = tuple(status.value for status in DUE_STATUSES)
_MAINTENANCE_EVERY_S = 60.0
_FOLD_EVERY_S = 2.0
"""How often PostgreSQL's live-bot changes are folded (see :mod:`control_plane.bots.live_count`)."""


@dataclass
class Scheduler:
    """Claims and launches due bots.

    Args:
        database: Where the bots live.
        launcher: Starts bots.
        config_builder: Builds each claimed bot's ``BotConfig`` (one transaction per batch).
        status_hooks: In-transaction status hooks (the app's live list).
        metrics: Counters to bump.
        interval: Seconds between looks when nothing wakes it.
        batch_size: Rows claimed per transaction.
        stale_claim: Age after which a claimed bot without a handle is failed.
        lease: How long a claim holds before another scheduler may launch the bot again.
        owner: This scheduler's id in ``launch_claim_owner`` (host, pid and a random part).
        launch_concurrency: Most launcher calls in flight at once (the rest of a batch waits).
    """

    database: Database
    launcher: BotLauncher
    config_builder: BotConfigBuilder
    status_hooks: Sequence[StatusHook] = ()
    metrics: Metrics | None = None
    interval: float = 1.0
    batch_size: int = 50
    stale_claim: timedelta = timedelta(minutes=10)
    lease: timedelta = timedelta(minutes=2)
    owner: str = field(
        default_factory=lambda: f"{socket.gethostname()[:80]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    )
    launch_concurrency: int = 16
    _loop: BackgroundLoop = field(init=False)
    _last_maintenance: float = field(default=0.0, init=False)
    _last_fold: float = field(default=0.0, init=False)
    _launch_slots: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self._launch_slots = asyncio.Semaphore(self.launch_concurrency)
        self._loop = BackgroundLoop(
            "scheduler", self.step, interval=self.interval, stop_grace=STOP_GRACE_SECONDS
        )

    @property
    def loop(self) -> BackgroundLoop:
        """The owned loop that runs :meth:`step` (started and stopped by the app)."""
        return self._loop

    def wake(self) -> None:
        """Look for due bots now instead of at the next interval."""
        self._loop.wake()

    def stop(self) -> None:
        """Ask :meth:`run` to return after the current pass.

        The pass is never cancelled midway; see :mod:`control_plane.background`.
        """
        self._loop.request_stop()

    async def run(self) -> None:
        """Loop until :meth:`stop`: claim and launch due bots, reap stale claims, tidy up."""
        await self._loop.run()

    async def step(self) -> bool:
        """One pass: launch one batch (and, once a minute, :meth:`maintain`).

        On PostgreSQL it also folds the live-bot changes every ``_FOLD_EVERY_S`` seconds.

        Returns True when the batch was full, so more may be due at once.
        """
        launched = await self.run_once()
        if (
            self.database.dialect == "postgresql"
            and time.monotonic() - self._last_fold >= _FOLD_EVERY_S
        ):
            async with self.database.sessions.begin() as session:
                await fold_live_changes(session)
            self._last_fold = time.monotonic()
        if time.monotonic() - self._last_maintenance >= _MAINTENANCE_EVERY_S:
            await self.maintain()
            self._last_maintenance = time.monotonic()
        return launched >= self.batch_size

    async def run_once(self, now: datetime | None = None) -> int:
        """Claim one batch of due bots and launch them; returns how many were claimed.

        The batch launches concurrently; the outcomes are stored in one transaction.
        """
        claimed = await self.claim(now or datetime.now(UTC))
        if not claimed:
            return 0
        configs = await self.config_builder.build_batch(claimed)
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(self._launch(meeting, configs[meeting.id])) for meeting in claimed
            ]
        outcomes = {meeting.id: task.result() for meeting, task in zip(claimed, tasks, strict=True)}
        await self._record(outcomes)
        return len(claimed)

    @staticmethod
    def _due(now: datetime) -> tuple[ColumnElement[bool], ...]:
        """Rows to launch: due, without a handle, and unclaimed or with a lapsed lease."""
        return (
            Meeting.status.in_(_DUE),
            Meeting.launch_at <= now,
            Meeting.bot_container_id.is_(None),
            or_(Meeting.launch_lease_until.is_(None), Meeting.launch_lease_until < now),
        )

    async def claim(self, now: datetime) -> list[Meeting]:
        """Atomically claim up to ``batch_size`` due bots (see the module docstring)."""
        async with self.database.sessions.begin() as session:
            if self.database.dialect == "postgresql":
                rows = (
                    (
                        await session.execute(
                            select(Meeting)
                            .where(*self._due(now))
                            .order_by(Meeting.launch_at, Meeting.id)
                            .limit(self.batch_size)
                            .with_for_update(skip_locked=True)
                        )
                    )
                    .scalars()
                    .all()
                )
                for meeting in rows:
                    meeting.launch_claimed_at = now
                    meeting.launch_claim_owner = self.owner
                    meeting.launch_lease_until = now + self.lease
                meetings = list(rows)
            else:
                due = (
                    select(Meeting.id)
                    .where(*self._due(now))
                    .order_by(Meeting.launch_at, Meeting.id)
                    .limit(self.batch_size)
                    .scalar_subquery()
                )
                ids = (
                    (
                        await session.execute(
                            update(Meeting)
                            .where(Meeting.id.in_(due))
                            .values(
                                launch_claimed_at=now,
                                launch_claim_owner=self.owner,
                                launch_lease_until=now + self.lease,
                            )
                            .returning(Meeting.id)
                            .execution_options(synchronize_session=False)
                        )
                    )
                    .scalars()
                    .all()
                )
                meetings = list(
                    (await session.execute(select(Meeting).where(Meeting.id.in_(ids)))).scalars()
                )
            for meeting in meetings:
                if meeting.status == BotStatus.SCHEDULED.value:
                    await change_status(
                        session,
                        meeting,
                        BotStatus.REQUESTED,
                        StatusReason.SCHEDULED_LAUNCH.value,
                        hooks=self.status_hooks,
                        at=now,
                    )
        if self.metrics is not None and meetings:
            self.metrics.scheduler_claimed.inc(len(meetings))
        return meetings

    async def _launch(
        self, meeting: Meeting, config: BotConfig | None
    ) -> LaunchHandle | LaunchFailure:
        """Launch one claimed bot; a :class:`LaunchFailure` when it could not be launched."""
        if config is None:
            return LaunchFailure("the bot's configuration could not be prepared")
        try:
            async with self._launch_slots:
                handle = await self.launcher.launch(config)
        except Exception as exc:  # one broken launch must not stop the batch
            log_launch_error(meeting, exc)
            return LaunchFailure(launch_failure_detail(exc))
        log.info(
            "bot launched",
            extra={"bot_id": str(meeting.bot_id), "meeting_id": meeting.id, "container": handle.id},
        )
        return handle

    async def _record(self, outcomes: dict[int, LaunchHandle | LaunchFailure]) -> None:
        """Store handles (or ``failed``/``launch_failed``) of one batch in one transaction."""
        unwanted: list[LaunchHandle] = []
        async with self.database.sessions.begin() as session:
            rows = (
                await session.execute(
                    select(Meeting)
                    .where(Meeting.id.in_(list(outcomes)))
                    .order_by(Meeting.id)
                    .with_for_update()
                )
            ).scalars()
            for meeting in rows:
                handle = outcomes[meeting.id]
                requested = meeting.status == BotStatus.REQUESTED.value
                if isinstance(handle, LaunchFailure):
                    if requested:
                        await change_status(
                            session,
                            meeting,
                            BotStatus.FAILED,
                            StatusReason.LAUNCH_FAILED.value,
                            hooks=self.status_hooks,
                            detail=handle.detail,
                        )
                    continue
                if meeting.bot_container_id is not None and meeting.bot_container_id != handle.id:
                    # Another claimer (after our lease lapsed) stored its handle first.
                    unwanted.append(handle)
                    continue
                meeting.bot_container_id = handle.id
                if not requested:
                    unwanted.append(handle)
        if self.metrics is not None:
            ok = sum(1 for handle in outcomes.values() if isinstance(handle, LaunchHandle))
            self.metrics.bots_launched.labels("ok").inc(ok)
            self.metrics.bots_launched.labels("failed").inc(len(outcomes) - ok)
        # Stopped while it was being launched: do not leave it running.
        for handle in unwanted:
            await self.launcher.terminate(handle)

    async def maintain(self, now: datetime | None = None) -> None:
        """Fail launches stuck without a handle and drop expired idempotency records."""
        moment = now or datetime.now(UTC)
        async with self.database.sessions.begin() as session:
            stale = (
                (
                    await session.execute(
                        select(Meeting.id).where(
                            Meeting.status == BotStatus.REQUESTED.value,
                            Meeting.bot_container_id.is_(None),
                            Meeting.launch_claimed_at < moment - self.stale_claim,
                        )
                    )
                )
                .scalars()
                .all()
            )
            await purge_expired(session, moment)
        if stale:
            log.warning("bot launches abandoned", extra={"count": len(stale)})
            minutes = round(self.stale_claim.total_seconds() / 60)
            await self._record(
                dict.fromkeys(
                    stale, LaunchFailure(f"not launched within {minutes} min of its claim")
                )
            )


@dataclass(frozen=True, slots=True)
class LaunchFailure:
    """A claimed bot that was not launched, and why (its ``status_detail``, docs/api.md 2.3)."""

    detail: str


SCHEDULER: web.AppKey[Scheduler] = web.AppKey("scheduler")
"""The application's scheduler (woken after a creation)."""
