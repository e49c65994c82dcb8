"""One bot in one meeting, from launch to exit (docs/architecture.md §2).

:class:`Bot` is the state machine of one meeting: it joins, waits for admission, stays in the
meeting and leaves, driving the parts :func:`agent.wiring.assemble` built (:class:`BotParts`):
the browser and platform adapter, the status machine and timers, the stop signal,
:class:`~agent.media_in.meeting_media.MeetingMedia` (transcription and recording),
:class:`~agent.meeting.watch.MeetingWatch` (participants, speakers, chat), the page watchdog,
the passcode answer, :class:`~agent.meeting.commands.CommandHandler` (the command loop), the
voice, the memory guard and the link to the control plane.

Its :meth:`Bot.run` goes ``joining → (awaiting_admission →) active → stopping → completed|failed``
and always ends the same way, whatever happened: leave the meeting, close the browser, report
the final status, deliver the outbox (up to ``drain_timeout_seconds``), close the stream log
and send its end over the link (the control plane then ends the bot's SSE stream).

Exit reasons (``status_reason`` codes of docs/architecture.md §3):

| cause | final status / reason |
|---|---|
| platform says the meeting does not exist | failed / meeting_not_found |
| join button never appeared, page failed, passcode missing or refused | failed / join_error |
| platform asks the bot to sign in | failed / login_required |
| platform refuses the bot (blocked, captcha) | failed / join_refused_by_platform |
| Zoom's web client refuses automated clients ("must use Zoom RTMS") | failed / zoom_requires_rtms |
| the organizer's policy blocks detected bots (Teams) | failed / bots_blocked_by_policy |
| page crashed, closed, or unknown for ``lost_page_seconds`` | failed / page_lost |
| in the meeting ``max_meeting_duration_seconds`` | completed / max_duration |
| host denied the request | failed / admission_denied |
| lobby longer than the admission timeout | failed / admission_timeout |
| host removed the bot | completed / removed_by_host |
| meeting ended | completed / meeting_ended (failed if never admitted) |
| nobody else ever came | completed / startup_alone |
| everyone else left | completed / left_alone |
| stop command | completed / stopped_by_api |
| SIGTERM | completed / sigterm |
| anything unexpected | failed / internal_error |
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from agent.browser.session import BrowserSession
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotConfig
from agent.contracts.link import Command
from agent.contracts.status import BotStatus, StatusReason
from agent.link.artifacts import ArtifactUploader
from agent.link.client import LinkClient
from agent.link.events import BotEvents
from agent.link.uplink import Uplink
from agent.media_in.meeting_media import MeetingMedia
from agent.media_out.remote_media import avatar_image, fetch_policy
from agent.meeting.commands import CommandHandler
from agent.meeting.lifecycle import MeetingTimers, StatusMachine, bounded_step
from agent.meeting.passcode import PasscodeAnswer
from agent.meeting.stop import StopSignal
from agent.meeting.watch import MeetingWatch
from agent.meeting.watchdog import PageWatchdog, screen_exit
from agent.memory.guard import MemoryGuard
from agent.platforms.base import MeetingState, PlatformAdapter
from agent.process.errors import BrowserError, JoinFailed, MeetingExit, MeetingLeft
from agent.process.settings import AgentSettings
from agent.sse.log import EventLog
from agent.voice.speaker import Speaker
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

LEAVE_TIMEOUT_S = 10.0
# Each other step of leaving (stop capture, silence the voice, end a share, close the browser)
# talks to a page or a process that may be stuck; past this it is given up, logged, and the bot
# goes on to its transcript and its final status.
LEAVE_STEP_TIMEOUT_S = 20.0
# A pre-join screen still showing this long after the join click means the click did not take.
REJOIN_CLICK_AFTER_S = 3.0


def _now() -> float:
    return asyncio.get_running_loop().time()


@dataclass(frozen=True, slots=True)
class BotParts:
    """What one bot is made of, built and tied together by :func:`agent.wiring.assemble`."""

    stream: EventLog
    capture: AudioCapture
    adapter: PlatformAdapter
    browser: BrowserSession
    timers: MeetingTimers
    events: BotEvents
    machine: StatusMachine
    stop: StopSignal
    media: MeetingMedia
    watch: MeetingWatch
    uploader: ArtifactUploader
    speaker: Speaker
    commands: CommandHandler
    passcode: PasscodeAnswer
    watchdog: PageWatchdog
    memory: MemoryGuard
    link: Uplink | None
    """None: no control plane (``meetbot agent``)."""


class Bot:
    """Runs one bot (see the module docstring).

    Args:
        config: The bot's config from the launcher (or built by ``meetbot agent``).
        settings: The agent host's settings.
        parts: Its collaborators, built by :func:`agent.wiring.assemble`.
    """

    def __init__(self, config: BotConfig, settings: AgentSettings, parts: BotParts) -> None:
        self.config = config
        self.settings = settings
        self.bot_id = str(config.bot_id)
        self.stream = parts.stream
        self.capture = parts.capture
        self.adapter = parts.adapter
        self.browser = parts.browser
        self.timers = parts.timers
        self.events = parts.events
        self.machine = parts.machine
        self.media = parts.media
        self.watch = parts.watch
        self.uploader = parts.uploader
        self.speaker = parts.speaker
        self.commands = parts.commands
        self.link = parts.link
        self._stop = parts.stop
        self._passcode = parts.passcode
        self._watchdog = parts.watchdog
        self._memory = parts.memory
        self._memory_task: asyncio.Task[None] | None = None
        self.joined_at: float | None = None

    @property
    def participants(self) -> list[str]:
        """The participant names last seen (the bot excluded)."""
        return self.watch.participants

    def request_stop(self, reason: StatusReason = StatusReason.STOPPED_BY_API) -> None:
        """Ask the bot to leave (stop command, SIGTERM); the first reason wins."""
        self._stop.request(reason)

    async def _pause(self, seconds: float) -> None:
        """Sleep up to ``seconds`` (less when a timer is due); leave at once when asked to."""
        deadline = self.timers.next_deadline()
        if deadline is not None:
            seconds = max(0.0, min(seconds, deadline - _now()))
        await self._stop.pause(seconds)

    # ---- run ------------------------------------------------------------------------

    async def run(self) -> BotStatus:
        """Attend the meeting and shut down cleanly; returns the final status."""
        commands: asyncio.Task[None] | None = None
        if self.link is not None:
            link = self.link.open()
            commands = asyncio.create_task(self._serve_commands(link), name="commands")
        log.info("agent started", extra={"bot_id": self.bot_id, "linked": self.link is not None})
        exit_: MeetingExit
        cancelled = False
        try:
            await self._stop.run_until_stopped(self._attend())
            exit_ = MeetingLeft(StatusReason.STOPPED_BY_API)
        except MeetingExit as exc:
            exit_ = exc
        except asyncio.CancelledError:
            # The owner cancelled the bot: leave and report like a SIGTERM, then stay cancelled.
            cancelled = True
            exit_ = MeetingLeft(StatusReason.SIGTERM)
        except Exception as exc:
            log.exception("bot failed", extra={"error": type(exc).__name__})
            exit_ = JoinFailed(StatusReason.INTERNAL_ERROR, type(exc).__name__)
        try:
            await self._finish(exit_)
        finally:
            await cancel_and_wait(commands)
            if self.link is not None:
                await self.link.close(self.settings.drain_timeout_seconds)
            await self.stream.close()
        if cancelled:
            raise asyncio.CancelledError
        return self.machine.status

    async def _serve_commands(self, link: LinkClient) -> None:
        while True:
            command: Command = await link.commands.get()
            await self.commands.handle(command)

    # ---- the meeting ----------------------------------------------------------------

    async def _attend(self) -> None:
        await self.machine.move(BotStatus.JOINING, StatusReason.JOIN_STARTED)
        page = await self.browser.start(await self._camera_image())
        url = self.adapter.meeting_url(self.config.meeting_url, self.config.passcode)
        self._watchdog.start(page, url)
        timeout_ms = self.settings.join_timeout_seconds * 1000
        try:
            await page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
        except PlaywrightError as exc:
            raise JoinFailed(StatusReason.JOIN_ERROR, "meeting page did not load") from exc
        await self._join(page)
        await self._admission(page)
        await self._in_meeting(page)

    async def _camera_image(self) -> str | None:
        """The camera image at join (None: the logo); see :func:`avatar_image`."""
        return await avatar_image(
            self.config.settings.default_avatar_url,
            fetch_policy(self.settings),
            self.events.avatar_unavailable,
        )

    def _screen_exit(self, state: MeetingState) -> None:
        """Raise the exit ``state`` means (see :func:`agent.meeting.watchdog.screen_exit`)."""
        exit_ = screen_exit(state, admitted=self.timers.is_admitted())
        if exit_ is not None:
            raise exit_

    async def _join(self, page: Page) -> None:
        deadline = _now() + self.settings.join_timeout_seconds
        while True:
            state = await self.adapter.state(page)
            self._screen_exit(state)
            if state is MeetingState.PASSCODE:
                await self._passcode.answer(page)
                await self._pause(self.settings.poll_interval_seconds)
                continue
            if state in (MeetingState.LOBBY, MeetingState.IN_MEETING):
                return
            if await self.adapter.prepare(page, self.config.settings.bot_name):
                try:
                    await self.adapter.click_join(page)
                    return
                except BrowserError:
                    log.info("join button not ready yet")
            if _now() >= deadline:
                raise JoinFailed(StatusReason.JOIN_ERROR, "no join button")
            await self._pause(self.settings.poll_interval_seconds)

    async def _admission(self, page: Page) -> None:
        deadline = _now() + self.settings.join_timeout_seconds
        last_click = _now()
        not_in_yet = time.time()
        while True:
            probed_at = time.time()
            state = await self.adapter.state(page)
            self._screen_exit(state)
            if state is MeetingState.IN_MEETING:
                was_waiting = self.machine.status is BotStatus.AWAITING_ADMISSION
                reason = StatusReason.ADMITTED if was_waiting else StatusReason.JOINED
                self.timers.admitted(_now())
                # The bot got in after the last probe that saw it outside: audio from then on
                # is the meeting's, so segment times (seconds from joining) stay positive.
                self.joined_at = not_in_yet
                await self.machine.move(BotStatus.ACTIVE, reason)
                self.media.start(self.joined_at)
                if self._memory.enabled:
                    self._memory_task = asyncio.create_task(self._memory.run(), name="memory")
                # The voice loads on the first speech unless the host asks for it now.
                if self.media.settings.voice_agent_enabled and self.settings.voice_preload:
                    self.speaker.warm_up()
                return
            not_in_yet = probed_at
            if state is MeetingState.PASSCODE:
                await self._passcode.answer(page)
            if (
                state is MeetingState.PREJOIN
                and _now() - last_click >= REJOIN_CLICK_AFTER_S
                and await self.adapter.prepare(page, self.config.settings.bot_name)
            ):
                # The click did not take (a slow page, a late-enabled button): click again.
                last_click = _now()
                with contextlib.suppress(BrowserError):
                    await self.adapter.click_join(page)
            if state is MeetingState.LOBBY and self.machine.status is BotStatus.JOINING:
                self.timers.entered_lobby(_now())
                # The platform may hold bots here whatever the meeting's settings (issue 33):
                # say whom to ask now, not when the admission timeout runs out.
                await self.machine.move(
                    BotStatus.AWAITING_ADMISSION,
                    StatusReason.LOBBY,
                    self.adapter.lobby_hold or None,
                )
                log.info(
                    "waiting in the lobby",
                    extra={
                        "platform": self.adapter.platform.value,
                        "admission_timeout_seconds": self.timers.timeouts.admission,
                        "held_because": self.adapter.lobby_hold or None,
                    },
                )
            if self.timers.expired(_now()) is StatusReason.ADMISSION_TIMEOUT:
                raise JoinFailed(StatusReason.ADMISSION_TIMEOUT)
            if self.timers.lobby_since is None and _now() >= deadline:
                raise JoinFailed(StatusReason.JOIN_ERROR, "neither lobby nor meeting after join")
            await self._pause(self.settings.poll_interval_seconds)

    async def _in_meeting(self, page: Page) -> None:
        # Who is there first (the moment of admission), then the chat panel.
        await self.watch.read_participants(page, self.events, _now(), initial=True)
        with contextlib.suppress(Exception):
            await self.adapter.open_chat(page)
        tick = 0
        while True:
            try:
                state = await self.adapter.state(page)
                self._screen_exit(state)
                await self.watch.speakers(page)
                if tick % 2 == 0:
                    await self.adapter.accept_notices(page)
                    await self.watch.read_participants(page, self.events, _now())
                    await self.watch.chat(page, self.events)
            except BrowserError as exc:
                # A page starved of CPU can miss a probe's 20 s (seen at load 15 in a soak run,
                # issue 19): one slow answer must not end a long meeting. A page that stays
                # silent is the watchdog's to end (page_lost after lost_page_seconds).
                log.warning("meeting page slow to answer", extra={"error": str(exc)})
            tick += 1
            expired = self.timers.expired(_now())
            if expired is not None:
                raise MeetingLeft(expired)
            await self._pause_reading_speakers(page, self.settings.poll_interval_seconds)

    async def _pause_reading_speakers(self, page: Page, seconds: float) -> None:
        """Pause ``seconds``; on a mixed-audio platform, read the speaking indicators meanwhile.

        A mixed track's utterance ends where the floor changes hands, so when the change is
        seen bounds how soon a turn said without a pause is final (issue 12): they are read
        every ``speaker_poll_seconds``. Per-participant tracks end on their own silence.
        """
        step = self.settings.speaker_poll_seconds
        if self.adapter.audio_per_participant or step >= seconds:
            await self._pause(seconds)
            return
        until = _now() + seconds
        while (left := until - _now()) > step / 2:
            due = self.timers.next_deadline()
            if due is not None and due <= _now():
                return
            await self._pause(min(left, step))
            try:
                await self.watch.speakers(page)
            except BrowserError:
                return  # the main loop reports a slow page

    # ---- leaving --------------------------------------------------------------------

    async def _finish(self, exit_: MeetingExit) -> None:
        await self._watchdog.stop()
        task, self._memory_task = self._memory_task, None
        await cancel_and_wait(task)
        was_active = self.machine.status is BotStatus.ACTIVE
        final = exit_.status
        if exit_.reason == StatusReason.MEETING_ENDED and not was_active:
            final = BotStatus.FAILED
        if exit_.reason in (StatusReason.STOPPED_BY_API, StatusReason.SIGTERM):
            final = BotStatus.COMPLETED
        log.info(
            "bot leaving",
            extra={"status_reason": exit_.reason, "final_status": final.value},
        )
        await self.machine.move(BotStatus.STOPPING, exit_.reason, exit_.detail)
        steps: dict[str, float] = {}
        within = LEAVE_STEP_TIMEOUT_S
        # Before leaving: the bot's own exit screens are not part of the meeting.
        await bounded_step("stop_capture", self.media.stop_capture(), within, steps)
        await bounded_step("speaker", self.speaker.close(), within, steps)
        with contextlib.suppress(Exception):
            await bounded_step("leave", self._leave(), LEAVE_TIMEOUT_S, steps)
        # A shared page's screencast forwards are owned by the share: awaited before the browser
        # goes.
        await bounded_step("screen_share", self.commands.screen.close(), within, steps)
        await bounded_step("browser", self.browser.close(), within, steps)
        log.info("browser closed", extra={"steps_s": steps})
        # The transcript, then the recording (``recording_ready``), before ``completed``.
        control_plane = self.config.control_plane_url if self.link is not None else None
        await self.media.finish(
            self.settings.finalize_timeout_seconds, self.uploader, control_plane
        )
        await self.machine.move(final, exit_.reason, exit_.detail)

    async def _leave(self) -> None:
        try:
            page = self.browser.page
        except RuntimeError:
            return
        await self.adapter.leave(page)
