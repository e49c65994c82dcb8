"""Reconciliation: a launcher's machines against the bots that should be live.

For a launcher that lists its machines (:class:`~control_plane.launchers.base.Listing`:
``local``, ``qemu``, ``ec2``, ``kubernetes``) a loop compares, every ``interval`` seconds and
once at the start:

- a machine whose bot is not live (final, deleted, never stored), or that is not the machine
  the bot's row names (a second one for the same bot), is terminated;
- a live bot whose row names a machine that is not listed and not alive becomes ``failed`` /
  ``agent_lost`` (the machine was terminated from outside, or the provider lost it), its link
  is closed.

The machines are listed before the bots are read, so a machine started between the two is
seen with its bot already live. A bot launched less than ``grace`` ago is not judged (a
provider's listing lags its launches), and each verdict is checked again under the bot's row
lock. Because the loop starts with the control plane, it survives restarts; on PostgreSQL a
session advisory lock lets one replica at a time sweep (the others skip the round; the lock
dies with its connection, so a crashed replica does not hold it). SQLite serves one process.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from sqlalchemy import select, text

from agent.contracts.status import LIVE_STATUSES, BotStatus, StatusReason, can_transition
from control_plane.agent_hub.hub import AgentHub
from control_plane.background import BackgroundLoop
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import Database
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.hooks import StatusHook
from control_plane.launchers.base import BotLauncher, LaunchError, LaunchHandle, Listing

logger = logging.getLogger(__name__)

SWEEP_LOCK = 0x6D62_7263
"""The advisory-lock key of a sweep ("mbrc"): one replica at a time reconciles."""


class ListingLauncher(BotLauncher, Listing, Protocol):
    """A launcher that also lists its machines."""


@dataclass
class Reconciled:
    """What one sweep did (empty when another replica held the sweep).

    Attributes:
        swept: Whether this replica swept (False: another one held the lock).
        terminated: Handle ids of the machines terminated.
        lost: Bots failed with ``agent_lost`` because their machine was gone.
    """

    swept: bool = True
    terminated: list[str] = field(default_factory=list)
    lost: list[uuid.UUID] = field(default_factory=list)


class Reconciler:
    """Terminates machines without a live bot and fails live bots without a machine.

    Args:
        db: The database.
        launcher: The listing launcher.
        hub: Open links (closed for failed bots).
        status_hooks: The app's status hooks.
        interval: Seconds between sweeps (``MEETBOT_RECONCILE_INTERVAL_SECONDS``).
        grace: Seconds after a launch during which a missing machine is not judged.
    """

    def __init__(
        self,
        db: Database,
        launcher: ListingLauncher,
        hub: AgentHub,
        status_hooks: list[StatusHook],
        *,
        interval: float,
        grace: float,
    ) -> None:
        self._db = db
        self._launcher = launcher
        self._hub = hub
        self._status_hooks = status_hooks
        self._grace = timedelta(seconds=grace)
        self.loop = BackgroundLoop("launcher-reconciler", self.sweep, interval=interval)
        """The owned loop (the first sweep runs at once, at the control plane's start)."""

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[bool]:
        """Yield whether this replica may sweep now (always on SQLite)."""
        if self._db.dialect != "postgresql":
            yield True
            return
        async with self._db.engine.connect() as conn:
            got = bool(
                await conn.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": SWEEP_LOCK})
            )
            await conn.commit()  # a session lock outlives the transaction; hold none open
            try:
                yield got
            finally:
                if got:
                    await conn.scalar(text("SELECT pg_advisory_unlock(:key)"), {"key": SWEEP_LOCK})
                    await conn.commit()

    async def sweep(self, now: datetime | None = None) -> Reconciled:
        """One reconciliation (see the module docstring); a provider error skips the round.

        Args:
            now: The sweep's moment (tests pass one past the grace).
        """
        async with self._turn() as mine:
            if not mine:
                return Reconciled(swept=False)
            return await self._sweep(now or datetime.now(UTC))

    async def _sweep(self, now: datetime) -> Reconciled:
        done = Reconciled()
        try:
            machines = await self._launcher.machines()
        except (LaunchError, OSError):
            logger.exception("launcher machines could not be listed")
            return done
        live = [status.value for status in LIVE_STATUSES]
        async with self._db.reads() as session:
            rows = (
                await session.execute(
                    select(
                        Meeting.id, Meeting.bot_id, Meeting.bot_container_id, AgentLink.launched_at
                    )
                    .outerjoin(AgentLink, AgentLink.meeting_id == Meeting.id)
                    .where(Meeting.status.in_(live))
                )
            ).all()
        handle_of = {bot_id: container for _, bot_id, container, _ in rows}
        for handle_id, bot_id in sorted(machines.items()):
            if bot_id in handle_of and handle_of[bot_id] in (None, handle_id):
                continue  # its bot is live (a bot without a handle yet is being launched)
            if await self._terminate(handle_id):
                done.terminated.append(handle_id)
        for meeting_id, bot_id, container, launched_at in rows:
            if container is None or container in machines:
                continue
            if launched_at is not None and launched_at > now - self._grace:
                continue
            if await self._still_alive(container):
                continue
            if await self._fail(meeting_id, container, now):
                done.lost.append(bot_id)
                await self._hub.disconnect(bot_id)
        if done.terminated or done.lost:
            logger.warning(
                "launcher reconciled",
                extra={"terminated": done.terminated, "lost": [str(b) for b in done.lost]},
            )
        return done

    async def _terminate(self, handle_id: str) -> bool:
        try:
            await self._launcher.terminate(LaunchHandle(id=handle_id))
        except (LaunchError, OSError):
            logger.exception("orphan machine could not be terminated", extra={"handle": handle_id})
            return False
        return True

    async def _still_alive(self, handle_id: str) -> bool:
        try:
            return await self._launcher.is_alive(LaunchHandle(id=handle_id))
        except (LaunchError, OSError):
            logger.exception("machine could not be checked", extra={"handle": handle_id})
            return True  # not judged this round

    async def _fail(self, meeting_id: int, container: str, now: datetime) -> bool:
        async with self._db.sessions.begin() as session:
            meeting = await lock_meeting(session, meeting_id=meeting_id)
            if meeting is None or meeting.bot_container_id != container:
                return False
            status = BotStatus(meeting.status)
            if status not in LIVE_STATUSES or not can_transition(status, BotStatus.FAILED):
                return False
            await change_status(
                session,
                meeting,
                BotStatus.FAILED,
                StatusReason.AGENT_LOST.value,
                hooks=self._status_hooks,
                at=now,
            )
            logger.warning(
                "bot's machine is gone",
                extra={"bot_id": str(meeting.bot_id), "handle": container},
            )
        return True
