"""The scheduler: claims due bots exactly once, launches them, and reaps stuck launches.

Due bots are rows with status ``scheduled`` or ``requested``, ``launch_at <= now`` and no
``launch_claimed_at``. A claim sets ``launch_claimed_at`` atomically — PostgreSQL:
``SELECT … FOR UPDATE SKIP LOCKED`` then ``UPDATE``, so concurrent replicas take disjoint rows;
SQLite: one ``UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING id`` (its transactions are
exclusive) — and moves ``scheduled → requested`` (``scheduled_launch``) in the same transaction.
Only the claiming loop launches a row, so each due bot is launched once, across replicas and
restarts (the claim is in the database, not in memory).

After the claim commits, the batch's ``BotConfig``s are built (Zoom OBF tokens minted from
stored connections when needed, concurrently; then every launch hook, for the whole batch in one
transaction so what the hooks store commits once), each is handed to the launcher, and the
returned handles are stored as ``bot_container_id`` in one transaction. A launch that fails
marks the bot ``failed``/``launch_failed``; a bot stopped while it was being launched is
terminated right away. A claim older than
``stale_claim`` without a handle (the process died mid-launch) is failed by the reaper.

:class:`Scheduler` is owned by the app (:func:`scheduler_ctx`): one task, cancelled and awaited
at shutdown. ``wake()`` makes it look now (after ``POST /api/v1/bots``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from aiohttp import web
from sqlalchemy import select, update

from agent.contracts.bot_config import BotConfig, BotSettings, Platform
from agent.contracts.status import BotStatus, StatusReason
from control_plane.api.idempotency import purge_expired
from control_plane.bots.status import change_status
from control_plane.db.engine import DB, Database
from control_plane.db.models.bot import Meeting
from control_plane.errors import DomainError
from control_plane.hooks import (
    LAUNCH_HOOKS,
    STATUS_HOOKS,
    ZOOM_TOKENS,
    LaunchHook,
    StatusHook,
    ZoomTokenSource,
)
from control_plane.launchers.base import LAUNCHER, BotLauncher, LaunchError, LaunchHandle
from control_plane.metrics import METRICS, Metrics
from control_plane.settings import SETTINGS

log = logging.getLogger(__name__)

_DUE_STATUSES = (BotStatus.SCHEDULED.value, BotStatus.REQUESTED.value)
_MAINTENANCE_EVERY_S = 60.0


@dataclass
class Scheduler:
    """Claims and launches due bots.

    Args:
        database: Where the bots live.
        launcher: Starts bots.
        control_plane_url: Put into every ``BotConfig``.
        status_hooks: In-transaction status hooks (the app's live list).
        launch_hooks: ``BotConfig`` hooks (the app's live list).
        zoom_tokens: Returns the Zoom token source, or None when the integration is absent.
        metrics: Counters to bump.
        interval: Seconds between looks when nothing wakes it.
        batch_size: Rows claimed per transaction.
        stale_claim: Age after which a claimed bot without a handle is failed.
    """

    database: Database
    launcher: BotLauncher
    control_plane_url: str
    status_hooks: Sequence[StatusHook] = ()
    launch_hooks: Sequence[LaunchHook] = ()
    zoom_tokens: Callable[[], ZoomTokenSource | None] = lambda: None
    metrics: Metrics | None = None
    interval: float = 1.0
    batch_size: int = 50
    stale_claim: timedelta = timedelta(minutes=10)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        """Look for due bots now instead of at the next interval."""
        self._wake.set()

    def stop(self) -> None:
        """Ask :meth:`run` to return after the current pass.

        Stopping between passes, not by cancellation, matters on SQLite: a task cancelled
        inside a transaction can leave its connection holding the write lock until it is
        garbage-collected, and every other writer then waits out ``busy_timeout``.
        """
        self._stopping.set()
        self._wake.set()

    async def run(self) -> None:
        """Loop until :meth:`stop` (or cancellation): claim and launch due bots, reap stale
        claims, tidy up."""
        last_maintenance = 0.0
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                launched = await self.run_once()
                if time.monotonic() - last_maintenance >= _MAINTENANCE_EVERY_S:
                    await self.maintain()
                    last_maintenance = time.monotonic()
            except asyncio.CancelledError:
                raise
            except Exception:  # the loop must outlive a database hiccup
                log.exception("scheduler pass failed")
                launched = 0
            if launched >= self.batch_size or self._stopping.is_set():
                continue  # more may be due (no pause), or the loop is to end
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)

    async def run_once(self, now: datetime | None = None) -> int:
        """Claim one batch of due bots and launch them; returns how many were claimed.

        The batch launches concurrently; the outcomes are stored in one transaction.
        """
        claimed = await self.claim(now or datetime.now(UTC))
        if not claimed:
            return 0
        configs = await self._configs(claimed)
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(self._launch(meeting, configs[meeting.id]))
                for meeting in claimed
            ]
        outcomes = {meeting.id: task.result() for meeting, task in zip(claimed, tasks, strict=True)}
        await self._record(outcomes)
        return len(claimed)

    async def claim(self, now: datetime) -> list[Meeting]:
        """Atomically claim up to ``batch_size`` due bots (see the module docstring)."""
        async with self.database.sessions.begin() as session:
            if self.database.dialect == "postgresql":
                rows = (
                    (
                        await session.execute(
                            select(Meeting)
                            .where(
                                Meeting.status.in_(_DUE_STATUSES),
                                Meeting.launch_claimed_at.is_(None),
                                Meeting.launch_at <= now,
                            )
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
                meetings = list(rows)
            else:
                due = (
                    select(Meeting.id)
                    .where(
                        Meeting.status.in_(_DUE_STATUSES),
                        Meeting.launch_claimed_at.is_(None),
                        Meeting.launch_at <= now,
                    )
                    .order_by(Meeting.launch_at, Meeting.id)
                    .limit(self.batch_size)
                    .scalar_subquery()
                )
                ids = (
                    (
                        await session.execute(
                            update(Meeting)
                            .where(Meeting.id.in_(due))
                            .values(launch_claimed_at=now)
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

    async def _zoom_token(self, meeting: Meeting) -> str | None:
        """The meeting's Zoom OBF token, minted from its stored connection when it has none."""
        token = meeting.zoom_obf_token
        if meeting.platform == Platform.ZOOM.value and not token:
            source = self.zoom_tokens()
            if source is None or meeting.zoom_connection_id is None:
                raise LaunchError("no Zoom token and no Zoom connection to mint one")
            token = await source.mint(meeting.zoom_connection_id, meeting.native_meeting_id)
        return token

    async def _configs(self, meetings: Sequence[Meeting]) -> dict[int, BotConfig | None]:
        """Build the batch's ``BotConfig``s; None for a bot that cannot be launched.

        Zoom tokens are minted first, concurrently and outside any transaction (network).
        The launch hooks then run for the whole batch in ONE transaction that the meetings are
        attached to, so what they store (the agent token's digest) is written in one commit
        before any launch, instead of one transaction per bot (bench/api.py: the per-bot
        transactions were a fifth of a creation's database round trips).
        """
        async with asyncio.TaskGroup() as group:
            minting = [
                group.create_task(_outcome(self._zoom_token(meeting))) for meeting in meetings
            ]
        configs: dict[int, BotConfig | None] = {}
        async with self.database.sessions.begin() as session:
            for meeting, task in zip(meetings, minting, strict=True):
                token = task.result()
                if isinstance(token, BaseException):
                    _log_launch_error(meeting, token)
                    configs[meeting.id] = None
                    continue
                session.add(meeting)
                try:
                    configs[meeting.id] = await self._config(meeting, token)
                except Exception as exc:  # one broken config must not stop the batch
                    _log_launch_error(meeting, exc)
                    configs[meeting.id] = None
        return configs

    async def _config(self, meeting: Meeting, token: str | None) -> BotConfig:
        config = BotConfig(
            bot_id=meeting.bot_id,
            meeting_id=meeting.id,
            platform=Platform(meeting.platform),
            meeting_url=meeting.constructed_meeting_url,
            native_meeting_id=meeting.native_meeting_id,
            passcode=meeting.passcode,
            zoom_obf_token=token,
            settings=BotSettings.model_validate(meeting.settings),
            control_plane_url=self.control_plane_url,
        )
        for hook in self.launch_hooks:
            config = await hook(meeting, config)
        return config

    async def _launch(self, meeting: Meeting, config: BotConfig | None) -> LaunchHandle | None:
        """Launch one claimed bot; None when it could not be launched."""
        if config is None:
            return None
        try:
            handle = await self.launcher.launch(config)
        except Exception as exc:  # one broken launch must not stop the batch
            _log_launch_error(meeting, exc)
            return None
        log.info(
            "bot launched",
            extra={"bot_id": str(meeting.bot_id), "meeting_id": meeting.id, "container": handle.id},
        )
        return handle

    async def _record(self, outcomes: dict[int, LaunchHandle | None]) -> None:
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
                if handle is None:
                    if requested:
                        await change_status(
                            session,
                            meeting,
                            BotStatus.FAILED,
                            StatusReason.LAUNCH_FAILED.value,
                            hooks=self.status_hooks,
                        )
                    continue
                meeting.bot_container_id = handle.id
                if not requested:
                    unwanted.append(handle)
        if self.metrics is not None:
            ok = sum(1 for handle in outcomes.values() if handle is not None)
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
            await self._record(dict.fromkeys(stale))


async def _outcome(work: Awaitable[str | None]) -> str | BaseException | None:
    """``await work``, with an exception returned instead of raised (one bot's failure must
    not cancel its batch's TaskGroup)."""
    try:
        return await work
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return exc


def _log_launch_error(meeting: Meeting, exc: BaseException) -> None:
    fields = {"bot_id": str(meeting.bot_id), "meeting_id": meeting.id}
    if isinstance(exc, LaunchError | DomainError):
        log.warning("bot launch failed", extra={**fields, "error": type(exc).__name__})
    else:
        log.error("bot launch crashed", extra=fields, exc_info=exc)


def scheduler_from_app(app: web.Application) -> Scheduler:
    """A scheduler wired to the app's database, launcher, hooks and settings."""
    settings = app[SETTINGS]
    status_hooks = app[STATUS_HOOKS]
    launch_hooks = app[LAUNCH_HOOKS]
    return Scheduler(
        database=app[DB],
        launcher=app[LAUNCHER],
        control_plane_url=settings.effective_public_url,
        status_hooks=status_hooks,
        launch_hooks=launch_hooks,
        zoom_tokens=lambda: app.get(ZOOM_TOKENS),
        metrics=app[METRICS],
        interval=settings.scheduler_interval_seconds,
    )


SCHEDULER: web.AppKey[Scheduler] = web.AppKey("scheduler")
"""The application's scheduler (woken after a creation)."""

STOP_GRACE_SECONDS = 30.0


async def scheduler_ctx(app: web.Application) -> AsyncIterator[None]:
    """``cleanup_ctx``: run the scheduler for the app's lifetime.

    At shutdown it is asked to stop after its current pass and awaited; only if that takes
    longer than :data:`STOP_GRACE_SECONDS` (a launcher hanging) is it cancelled.
    """
    scheduler = scheduler_from_app(app)
    app[SCHEDULER] = scheduler
    task = asyncio.create_task(scheduler.run(), name="scheduler")
    yield
    scheduler.stop()
    done, _ = await asyncio.wait({task}, timeout=STOP_GRACE_SECONDS)
    if not done:
        log.warning("scheduler did not stop in time; cancelling it")
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
