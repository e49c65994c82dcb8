"""The page watchdog: ends the bot on any end, denial or not-found screen, or a lost page.

The lifecycle driver (:mod:`agent.meeting.bot`) polls the page in its join, admission and meeting
loops, but between polls it can sit in a long browser call (a page load, a join click, a leave). The
:class:`PageWatchdog` runs beside it from the moment the meeting page opens until the bot starts
leaving, probes the page every ``watchdog_interval_seconds`` and hands the bot a
:class:`~agent.process.errors.MeetingExit` as soon as a terminal screen
(:data:`~agent.platforms.base.TERMINAL_STATES`) shows, wherever the platform shows it (dialog,
banner, modal, full page), so the bot ends within one interval plus one probe.

It also ends a bot that lost its way: the page crashed or closed, or for ``lost_page_seconds``
the page showed no screen the adapter knows or a page off the meeting's host
(``failed``/``page_lost``). A screen it does not know is reported first, once per text, after
:data:`UNKNOWN_REPORT_S` (half ``lost_page_seconds`` at most): its visible text (the first
:data:`UNKNOWN_TEXT_CHARS` characters) goes to the ``on_unknown`` callback, which the bot logs
with a screenshot in its artifacts, so operators can report screens the adapters lack.

:func:`screen_exit` is the one table from screens to exits, used by the bot's loops too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from agent.contracts.status import StatusReason
from agent.platforms.base import MeetingState, PlatformAdapter
from agent.process.errors import BrowserError, JoinFailed, MeetingExit, MeetingLeft
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

UNKNOWN_REPORT_S = 5.0
"""Seconds of an unknown screen before it is reported (see the module docstring)."""
UNKNOWN_TEXT_CHARS = 600
"""Characters of an unknown screen's visible text that are reported."""

_TEXT_JS = "() => (document.body ? document.body.innerText : '').replace(/\\s+/g, ' ').trim()"

# Screens that end an attempt to join (before admission) and their reasons.
JOIN_FAILURES: dict[MeetingState, StatusReason] = {
    MeetingState.NOT_FOUND: StatusReason.MEETING_NOT_FOUND,
    MeetingState.DENIED: StatusReason.ADMISSION_DENIED,
    MeetingState.NO_ANSWER: StatusReason.ADMISSION_TIMEOUT,
    MeetingState.REMOVED: StatusReason.ADMISSION_DENIED,
    MeetingState.ENDED: StatusReason.MEETING_ENDED,
    MeetingState.LOGIN_REQUIRED: StatusReason.LOGIN_REQUIRED,
    MeetingState.CANT_JOIN: StatusReason.JOIN_REFUSED_BY_PLATFORM,
    MeetingState.RTMS_REQUIRED: StatusReason.ZOOM_REQUIRES_RTMS,
    MeetingState.BOTS_BLOCKED: StatusReason.BOTS_BLOCKED_BY_POLICY,
}
# Screens that end a meeting the bot was in.
MEETING_ENDS: dict[MeetingState, StatusReason] = {
    MeetingState.REMOVED: StatusReason.REMOVED_BY_HOST,
    MeetingState.ENDED: StatusReason.MEETING_ENDED,
    MeetingState.NOT_FOUND: StatusReason.MEETING_ENDED,
    MeetingState.DENIED: StatusReason.REMOVED_BY_HOST,
    MeetingState.CANT_JOIN: StatusReason.REMOVED_BY_HOST,
    MeetingState.LOGIN_REQUIRED: StatusReason.REMOVED_BY_HOST,
    # The platform's bot walls mid-meeting: the bot was put out as a bot.
    MeetingState.RTMS_REQUIRED: StatusReason.ZOOM_REQUIRES_RTMS,
    MeetingState.BOTS_BLOCKED: StatusReason.BOTS_BLOCKED_BY_POLICY,
}


def screen_exit(state: MeetingState, admitted: bool) -> MeetingExit | None:
    """The exit a screen means, or ``None`` when the bot may stay.

    Args:
        state: The screen the page shows.
        admitted: Whether the bot was admitted (became ``active``) before.

    Returns:
        ``JoinFailed`` before admission, ``MeetingLeft`` after, with the reason of the tables
        above (``failed``/``meeting_ended`` before admission is the bot's ``_finish`` rule).
    """
    if admitted:
        reason = MEETING_ENDS.get(state)
        return MeetingLeft(reason) if reason is not None else None
    reason = JOIN_FAILURES.get(state)
    return JoinFailed(reason) if reason is not None else None


def _site(host: str) -> str:
    """The last two labels of a host (``us02web.zoom.us`` and ``app.zoom.us`` are one site)."""
    return ".".join(host.lower().split(".")[-2:])


class PageWatchdog:
    """Watches one meeting page (see the module docstring).

    Args:
        adapter: Names the page's screen.
        admitted: Whether the bot is in the meeting now (decides ``screen_exit``'s table).
        on_exit: Called once with the exit when the bot must leave.
        interval: Seconds between probes.
        lost_after: Seconds of unknown screens (or off-host pages) before ``page_lost``.
        grace: Seconds a terminal screen is left to the bot's own loop (which reports the
            lobby it saw first, for one) before the watchdog ends the bot itself.
        on_unknown: Awaited with the visible text of a screen the adapter does not know (once
            per text), before ``page_lost``.
    """

    def __init__(
        self,
        adapter: PlatformAdapter,
        admitted: Callable[[], bool],
        on_exit: Callable[[MeetingExit], None],
        interval: float,
        lost_after: float,
        grace: float = 0.0,
        on_unknown: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._adapter = adapter
        self._admitted = admitted
        self._on_exit = on_exit
        self._interval = interval
        self._lost_after = lost_after
        self._grace = grace
        self._on_unknown = on_unknown
        self._reported: set[str] = set()
        self._fired = False
        self._task: asyncio.Task[None] | None = None

    def _fire(self, exit_: MeetingExit) -> None:
        if not self._fired:
            self._fired = True
            log.info("watchdog ends the bot", extra={"status_reason": exit_.reason})
            self._on_exit(exit_)

    def start(self, page: Page, meeting_url: str) -> None:
        """Attach to ``page`` and probe it in a task this watchdog owns until :meth:`stop`.

        Args:
            page: The meeting page, just opened.
            meeting_url: The URL the page goes to; a page off its host counts as unknown.
        """
        if self._task is None:
            self.attach(page)
            self._task = asyncio.create_task(
                self.run(page, urlsplit(meeting_url).hostname or ""), name="watchdog"
            )

    async def stop(self) -> None:
        """Cancel the probing task and wait for it (nothing if not started).

        The page's crash and close events end nothing after this: the bot is leaving and
        closes the page itself (it logged "watchdog ends the bot ... page_lost" on every
        leave).
        """
        self._fired = True
        task, self._task = self._task, None
        await cancel_and_wait(task, Exception)

    def attach(self, page: Page) -> None:
        """Listen for the page crashing or closing (both end the bot with ``page_lost``)."""
        page.on("crash", lambda _page: self._fire(JoinFailed(StatusReason.PAGE_LOST, "crashed")))
        page.on("close", lambda _page: self._fire(JoinFailed(StatusReason.PAGE_LOST, "closed")))

    async def run(self, page: Page, meeting_host: str) -> None:
        """Probe ``page`` until an exit fires (then return) or the task is cancelled.

        Args:
            page: The meeting page.
            meeting_host: Host of the meeting URL; a page elsewhere counts as unknown.
        """
        loop = asyncio.get_running_loop()
        lost_since: float | None = None
        while not self._fired:
            try:
                state = await self._adapter.state(page)
            except (BrowserError, PlaywrightError) as exc:
                if page.is_closed():
                    self._fire(JoinFailed(StatusReason.PAGE_LOST, "closed"))
                    return
                log.info("watchdog probe failed", extra={"error": type(exc).__name__})
                state = MeetingState.LOADING
            exit_ = screen_exit(state, self._admitted())
            if exit_ is not None:
                # The bot's loop, when not inside a long browser call, ends itself meanwhile
                # (and this task is cancelled); otherwise the watchdog does.
                await asyncio.sleep(self._grace)
                self._fire(screen_exit(state, self._admitted()) or exit_)
                return
            host = (urlsplit(page.url).hostname or "").lower()
            off_host = bool(host) and _site(host) != _site(meeting_host)
            lost = state is MeetingState.LOADING or off_host
            now = loop.time()
            if not lost:
                lost_since = None
            elif lost_since is None:
                lost_since = now
            elif now - lost_since >= min(UNKNOWN_REPORT_S, self._lost_after / 2):
                await self._report_unknown(page)
            if lost_since is not None and now - lost_since >= self._lost_after:
                detail = f"unknown screen for {self._lost_after:.0f} s at {host or 'no host'}"
                self._fire(JoinFailed(StatusReason.PAGE_LOST, detail))
                return
            await asyncio.sleep(self._interval)

    async def _report_unknown(self, page: Page) -> None:
        """Hand the unknown screen's text to ``on_unknown`` (once per text; never raises)."""
        if self._on_unknown is None:
            return
        text = ""
        with contextlib.suppress(PlaywrightError, TimeoutError):
            raw = await asyncio.wait_for(page.evaluate(_TEXT_JS), timeout=5.0)
            text = str(raw or "")[:UNKNOWN_TEXT_CHARS]
        if not text or text in self._reported:
            return  # a blank page (still loading, or gone) has nothing to report
        self._reported.add(text)
        try:
            await self._on_unknown(text)
        except Exception as exc:  # the report must never end the watch
            log.warning("unknown screen not reported", extra={"error": type(exc).__name__})
