"""The reaper: bots whose agent went silent become ``failed``, and their VM is torn down.

Every ``interval`` seconds it looks at bots in a live status (``requested`` … ``stopping``)
that have an agent link:

- an agent that connected once but sent nothing (heartbeats included) for
  ``heartbeat_timeout_seconds`` → ``failed`` / ``agent_lost``;
- an agent that never connected within ``agent_connect_timeout_seconds`` of its launch →
  ``failed`` / ``launch_failed``.

Silence is counted from this process's start at the earliest, so a control plane that was
down longer than the timeout does not condemn every agent before they could reconnect. An
agent whose link on this process read a frame within the timeout is not silent either, even
when its frames (and so ``last_seen_at``) still wait for their commit. The
move is re-checked under the row lock, so two replicas reaping together fail a bot once. The
launcher is then asked to terminate the bot's VM (or process), and an open link is closed.

At the control plane's start, :func:`reconcile_launcher` stops the VMs of a launcher whose VMs
outlive the process (``qemu``) when their bot is no longer live. It also tears down what
finished bots leave behind: an agent exits by itself after its final
status and drained outbox, but a VM does not disappear with its process. A bot final for
``teardown_grace`` (time to drain) and at most an hour whose launcher handle is still alive
is terminated, once per process.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, or_, select

from agent.contracts.status import (
    FINAL_STATUSES,
    LIVE_STATUSES,
    BotStatus,
    StatusReason,
    can_transition,
)
from control_plane.agent_hub.hub import AgentHub
from control_plane.background import BackgroundLoop
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import Database
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.hooks import StatusHook
from control_plane.launchers.base import BotLauncher, LaunchError, LaunchHandle, Reconciling

logger = logging.getLogger(__name__)

# Finished bots are checked for leftovers this long after their end, then forgotten.
_TEARDOWN_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Reaped:
    """A bot the reaper failed, and why."""

    bot_id: uuid.UUID
    reason: StatusReason


class Reaper:
    """Finds silent agents and fails their bots.

    Args:
        db: The database.
        launcher: Terminates the VMs of reaped bots.
        hub: Open links (closed for reaped bots).
        status_hooks: The app's status hooks.
        heartbeat_timeout: Seconds of silence after which a connected agent is lost.
        connect_timeout: Seconds after launch within which an agent must connect.
        teardown_grace: Seconds a finished bot's agent gets to drain and exit by itself.
    """

    def __init__(
        self,
        db: Database,
        launcher: BotLauncher,
        hub: AgentHub,
        status_hooks: list[StatusHook],
        *,
        heartbeat_timeout: float,
        connect_timeout: float,
        teardown_grace: float = 120.0,
    ) -> None:
        self._db = db
        self._launcher = launcher
        self._hub = hub
        self._status_hooks = status_hooks
        self._heartbeat_timeout = timedelta(seconds=heartbeat_timeout)
        self._connect_timeout = timedelta(seconds=connect_timeout)
        self._teardown_grace = timedelta(seconds=teardown_grace)
        self._watching_since = datetime.now(UTC)
        # Finished bots already checked by this process (meeting id → end time).
        self._checked: dict[int, datetime] = {}
        self.loop = BackgroundLoop(
            "agent-reaper", self.sweep, interval=self.interval, start_delay=self.interval
        )
        """The owned loop sweeping every :attr:`interval` (a stop lets the sweep in progress
        finish its writes; see :mod:`control_plane.background`)."""

    @property
    def interval(self) -> float:
        """Seconds between sweeps: a quarter of the heartbeat timeout, at most 5 s."""
        return min(self._heartbeat_timeout.total_seconds() / 4, 5.0)

    def _verdict(
        self, last_seen: datetime | None, launched: datetime, now: datetime
    ) -> StatusReason | None:
        if last_seen is not None:
            if max(last_seen, self._watching_since) + self._heartbeat_timeout < now:
                return StatusReason.AGENT_LOST
            return None
        if max(launched, self._watching_since) + self._connect_timeout < now:
            return StatusReason.LAUNCH_FAILED
        return None

    async def sweep(self, now: datetime | None = None) -> list[Reaped]:
        """Fail every silent bot once; return what was reaped."""
        moment = now or datetime.now(UTC)
        live = [status.value for status in LIVE_STATUSES]
        # Both looks read through ``reads``: on SQLite the write connection runs on the event
        # loop's thread (control_plane.db.inline_sqlite), so a query there stalls every request.
        async with self._db.reads() as session:
            rows = (
                await session.execute(
                    select(
                        Meeting.id, Meeting.bot_id, AgentLink.last_seen_at, AgentLink.launched_at
                    )
                    .join(AgentLink, AgentLink.meeting_id == Meeting.id)
                    .where(
                        Meeting.status.in_(live),
                        # Only the candidates (the verdict below decides): turning every live
                        # bot's row into objects, 1,000 of them every 5 s, held the event loop
                        # for milliseconds that the agent links' frames then waited.
                        or_(
                            AgentLink.last_seen_at < moment - self._heartbeat_timeout,
                            and_(
                                AgentLink.last_seen_at.is_(None),
                                AgentLink.launched_at < moment - self._connect_timeout,
                            ),
                        ),
                    )
                )
            ).all()
        reaped: list[Reaped] = []
        for meeting_id, bot_id, last_seen, launched in rows:
            if self._verdict(last_seen, launched, moment) is None:
                continue
            heard = self._hub.last_heard(bot_id)
            if heard is not None and heard + self._heartbeat_timeout >= moment:
                # Its link here reads frames that wait to be stored (an overloaded replica,
                # a reconnect storm): behind is not silent.
                continue
            outcome = await self._fail(meeting_id, moment)
            if outcome is not None:
                reaped.append(outcome[0])
                if self._hub.metrics is not None:
                    self._hub.metrics.reaped.labels(outcome[0].reason.value).inc()
                await self._tear_down(outcome[0].bot_id, outcome[1])
        await self._clear_finished(moment)
        return reaped

    async def _clear_finished(self, now: datetime) -> None:
        self._checked = {
            key: ended for key, ended in self._checked.items() if ended > now - _TEARDOWN_WINDOW
        }
        final = {status.value for status in FINAL_STATUSES}
        # The status test stays out of the SQL: with it SQLite's planner picked the status
        # index and visited every finished bot (70 ms at 100,000 meetings, every sweep);
        # without it the partial index on end_time (migration 0009) answers at once.
        async with self._db.reads() as session:
            rows = (
                await session.execute(
                    select(
                        Meeting.id,
                        Meeting.bot_id,
                        Meeting.bot_container_id,
                        Meeting.end_time,
                        Meeting.status,
                    ).where(
                        Meeting.bot_container_id.is_not(None),
                        Meeting.end_time > now - _TEARDOWN_WINDOW,
                        Meeting.end_time < now - self._teardown_grace,
                    )
                )
            ).all()
        for meeting_id, bot_id, container_id, ended, status in rows:
            if status not in final or meeting_id in self._checked:
                continue
            if container_id is None or ended is None:
                continue
            self._checked[meeting_id] = ended
            handle = LaunchHandle(id=container_id)
            try:
                alive = await self._launcher.is_alive(handle)
            except (LaunchError, OSError):
                logger.exception("finished bot could not be checked", extra={"bot_id": str(bot_id)})
                continue
            if alive:
                logger.info("finished bot torn down", extra={"bot_id": str(bot_id)})
                await self._tear_down(bot_id, container_id)

    async def _fail(self, meeting_id: int, now: datetime) -> tuple[Reaped, str | None] | None:
        async with self._db.sessions.begin() as session:
            meeting = await lock_meeting(session, meeting_id=meeting_id)
            link = await session.get(AgentLink, meeting_id)
            if meeting is None or link is None:
                return None
            # Re-read under the lock: a frame or another replica may have come first.
            reason = self._verdict(link.last_seen_at, link.launched_at, now)
            if reason is None or not can_transition(BotStatus(meeting.status), BotStatus.FAILED):
                return None
            await change_status(
                session, meeting, BotStatus.FAILED, reason.value, hooks=self._status_hooks, at=now
            )
            logger.warning(
                "bot reaped",
                extra={"bot_id": str(meeting.bot_id), "status_reason": reason.value},
            )
            return Reaped(meeting.bot_id, reason), meeting.bot_container_id

    async def _tear_down(self, bot_id: uuid.UUID, container_id: str | None) -> None:
        if container_id:
            try:
                await self._launcher.terminate(LaunchHandle(id=container_id))
            except (LaunchError, OSError):
                logger.exception(
                    "reaped bot could not be terminated", extra={"bot_id": str(bot_id)}
                )
        await self._hub.disconnect(bot_id)


async def reconcile_launcher(launcher: Reconciling, database: Database) -> list[str]:
    """Stop the launcher's VMs whose bot is not live (final, deleted, or never stored).

    Returns:
        The handle ids stopped.
    """
    live = [status.value for status in LIVE_STATUSES]
    async with database.sessions() as session:
        rows = await session.execute(select(Meeting.bot_id).where(Meeting.status.in_(live)))
        bot_ids = [row[0] for row in rows]
    return await launcher.reconcile(bot_ids)
