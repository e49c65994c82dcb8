"""The bot's status machine and its meeting timers.

:class:`StatusMachine` moves along the table of ``agent/contracts/status.py``
(docs/architecture.md §3)
and reports every change with its reason; an illegal move is refused, never sent.
:class:`MeetingTimers` decides, from the participant counts the bot observes, when the
admission, startup-alone and left-alone timeouts and the ``max_duration`` cap expire; it is
plain logic over a clock value so it is tested without waiting. :func:`bounded_step` keeps
each step of leaving (a stuck page, a browser that does not close) from holding the bot in
``stopping``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from agent.contracts.bot_config import BotSettings
from agent.contracts.status import FINAL_STATUSES, BotStatus, StatusReason, can_transition
from agent.link.events import BotEvents, status_frame

log = logging.getLogger(__name__)


class StatusMachine:
    """The bot's current status; every legal move is reported through ``events``.

    Args:
        events: Where status changes go.
        initial: The status the control plane holds when the agent starts (``requested``).
    """

    def __init__(self, events: BotEvents, initial: BotStatus = BotStatus.REQUESTED) -> None:
        self._events = events
        self.status = initial
        self.reason: str | None = None
        self.history: list[tuple[BotStatus, str | None]] = []

    def current(self) -> BotStatus:
        """The status now (for those that read it later, e.g. the command handler)."""
        return self.status

    @property
    def final(self) -> bool:
        """Whether the bot reached ``completed``, ``failed`` or ``cancelled``."""
        return self.status in FINAL_STATUSES

    async def move(
        self, target: BotStatus, reason: StatusReason | str | None, detail: str | None = None
    ) -> bool:
        """Move to ``target`` and report it; returns False (and reports nothing) when illegal."""
        if not can_transition(self.status, target):
            log.warning(
                "illegal status move refused",
                extra={"from_status": self.status.value, "to_status": target.value},
            )
            return False
        reason_text = str(reason) if reason is not None else None
        self.status = target
        self.reason = reason_text
        self.history.append((target, reason_text))
        log.info("bot status", extra={"status": target.value, "status_reason": reason_text})
        await self._events.status(status_frame(target, reason_text, detail))
        return True


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Effective timeouts in seconds: the bot's settings times the host's ``timeout_scale``."""

    admission: float
    startup_alone: float
    left_alone: float
    max_duration: float = float("inf")

    @classmethod
    def from_settings(cls, settings: BotSettings, scale: float = 1.0) -> Timeouts:
        """Scale the per-bot timeouts (``scale`` < 1 only in tests; see ``AgentSettings``)."""
        return cls(
            admission=settings.admission_timeout_seconds * scale,
            startup_alone=settings.startup_alone_timeout_seconds * scale,
            left_alone=settings.left_alone_timeout_seconds * scale,
            max_duration=settings.max_meeting_duration_seconds * scale,
        )


class MeetingTimers:
    """When the bot must give up waiting or leave an empty meeting.

    Times are seconds on one monotonic clock (``loop.time()``).
    """

    def __init__(self, timeouts: Timeouts) -> None:
        self.timeouts = timeouts
        self.lobby_since: float | None = None
        self.active_since: float | None = None
        self.seen_others = False
        self.alone_since: float | None = None

    def entered_lobby(self, now: float) -> None:
        """The platform put the bot in its waiting room (the admission clock starts once)."""
        if self.lobby_since is None:
            self.lobby_since = now

    def admitted(self, now: float) -> None:
        """The bot is in the meeting (the startup-alone clock starts)."""
        if self.active_since is None:
            self.active_since = now

    def is_admitted(self) -> bool:
        """Whether the bot got into the meeting (:meth:`admitted` was called)."""
        return self.active_since is not None

    def observe(self, others: int, now: float) -> None:
        """Record how many other participants the bot sees now."""
        if others > 0:
            self.seen_others = True
            self.alone_since = None
        elif self.seen_others and self.alone_since is None:
            self.alone_since = now

    def admission_deadline(self) -> float | None:
        """Clock value at which waiting in the lobby fails, if waiting."""
        if self.lobby_since is None or self.active_since is not None:
            return None
        return self.lobby_since + self.timeouts.admission

    def alone_deadline(self) -> tuple[float, StatusReason] | None:
        """Clock value and reason of the next alone timeout, if one is running."""
        if self.active_since is None:
            return None
        if not self.seen_others:
            return self.active_since + self.timeouts.startup_alone, StatusReason.STARTUP_ALONE
        if self.alone_since is not None:
            return self.alone_since + self.timeouts.left_alone, StatusReason.LEFT_ALONE
        return None

    def max_duration_deadline(self) -> float | None:
        """Clock value at which the bot leaves whatever happens (``max_duration``), once in."""
        if self.active_since is None:
            return None
        return self.active_since + self.timeouts.max_duration

    def expired(self, now: float) -> StatusReason | None:
        """The reason to leave now, if a timeout has run out."""
        admission = self.admission_deadline()
        if admission is not None and now >= admission:
            return StatusReason.ADMISSION_TIMEOUT
        alone = self.alone_deadline()
        if alone is not None and now >= alone[0]:
            return alone[1]
        cap = self.max_duration_deadline()
        if cap is not None and now >= cap:
            return StatusReason.MAX_DURATION
        return None

    def next_deadline(self) -> float | None:
        """The earliest running deadline (the bot wakes up for it exactly)."""
        candidates = [self.admission_deadline(), self.max_duration_deadline()]
        alone = self.alone_deadline()
        candidates.append(alone[0] if alone else None)
        running = [c for c in candidates if c is not None]
        return min(running) if running else None


async def bounded_step(
    name: str, step: Coroutine[Any, Any, object], within_s: float, took: dict[str, float]
) -> None:
    """Await one step of leaving for at most ``within_s`` seconds; its time goes into ``took``.

    A step past its time is cancelled and logged (``leaving step timed out``): the bot still
    reaches its transcript, its recording and its final status. Other errors propagate.
    """
    began = time.monotonic()
    try:
        async with asyncio.timeout(within_s):
            await step
    except TimeoutError:
        log.warning("leaving step timed out", extra={"step": name, "within_s": within_s})
    finally:
        took[name] = round(time.monotonic() - began, 2)
