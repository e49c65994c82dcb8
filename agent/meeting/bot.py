"""One bot in one meeting, from launch to exit (docs/architecture.md §2).

:class:`Bot` is the lifecycle driver: it owns the stream log, the link to the control plane,
the browser, the platform adapter, the status machine and timers, and wires the pieces that do
the rest: :class:`~agent.media_in.meeting_media.MeetingMedia` (transcription and recording),
:class:`~agent.meeting.watch.MeetingWatch` (participants, speakers, chat),
:class:`~agent.meeting.commands.CommandHandler` (the command loop) and its
:class:`~agent.meeting.live_settings.SettingsApplier` (``update_settings``).

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
from datetime import UTC, datetime
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from agent import __version__
from agent.browser.session import BrowserSession
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotConfig
from agent.contracts.link import (
    ArtifactKind,
    Command,
    CommandErrorCode,
    Register,
)
from agent.contracts.status import BotStatus, StatusReason
from agent.contracts.timestamps import format_utc
from agent.link.artifacts import ArtifactUploader
from agent.link.client import LinkClient, LinkTiming, agent_link_url
from agent.link.events import BotEvents, Observer
from agent.link.outbox import Outbox
from agent.media_in.meeting_media import MeetingMedia
from agent.media_out.remote_media import fetch_policy, image_data_url
from agent.meeting.commands import CommandHandler
from agent.meeting.lifecycle import MeetingTimers, StatusMachine, Timeouts
from agent.meeting.live_settings import SettingsApplier
from agent.meeting.watch import QUIET_LOG_S, MeetingWatch, SpeakerSink
from agent.meeting.watchdog import PageWatchdog, screen_exit
from agent.memory.budget import read_budget, thresholds_mb
from agent.memory.guard import MemoryGuard, Relief, Thresholds
from agent.memory.relief import trim_heap
from agent.platforms import adapter_for
from agent.platforms.base import MeetingState, PlatformAdapter
from agent.process.errors import BrowserError, CommandError, JoinFailed, MeetingExit, MeetingLeft
from agent.process.settings import AgentSettings
from agent.sse.log import EventLog
from agent.transcribe.options import TranscribeOptions
from agent.voice.factory import synthesizer_for
from agent.voice.microphone import PageMicrophone
from agent.voice.speaker import Speaker

log = logging.getLogger(__name__)

LEAVE_TIMEOUT_S = 10.0
# Longest an unknown screen's screenshot and its upload may hold the watchdog.
UNKNOWN_SHOT_TIMEOUT_S = 10.0
# A pre-join screen still showing this long after the join click means the click did not take.
REJOIN_CLICK_AFTER_S = 3.0
# A passcode prompt still showing this long after an answer is answered again, up to
# PASSCODE_TRIES answers; then the passcode was refused (join_error).
PASSCODE_RETRY_S = 3.0
PASSCODE_TRIES = 2


def _now() -> float:
    return asyncio.get_running_loop().time()


class Bot:
    """Runs one bot (see the module docstring).

    Args:
        config: The bot's config from the launcher (or built by ``meetbot agent``).
        settings: The agent host's settings.
        observer: Optional consumer of every event (the CLI prints them).
        speaker_sink: Optional consumer of active-speaker changes (the transcriber).
    """

    def __init__(
        self,
        config: BotConfig,
        settings: AgentSettings,
        observer: Observer | None = None,
        speaker_sink: SpeakerSink | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.bot_id = str(config.bot_id)
        self.stream = EventLog()
        self.capture = AudioCapture()
        self.adapter: PlatformAdapter = adapter_for(config.platform, settings.page_timeout_seconds)
        self.browser = BrowserSession(settings, config.settings.bot_name, self.capture)
        self.timers = MeetingTimers(Timeouts.from_settings(config.settings, settings.timeout_scale))
        self._observer = observer
        self._stop = asyncio.Event()
        self._stop_reason: StatusReason = StatusReason.STOPPED_BY_API
        # An exit found outside the attendance's own loops (the watchdog), if any.
        self._exit: MeetingExit | None = None
        self._watchdog_task: asyncio.Task[None] | None = None
        self._unknown_screens = 0
        self._passcode_at: float | None = None
        self._passcode_tries = 0
        self._memory_task: asyncio.Task[None] | None = None
        self._outbox: Outbox | None = None
        self.link: LinkClient | None = None
        self.events = BotEvents(self.stream, None, observer)
        self.machine = StatusMachine(self.events)
        self.joined_at: float | None = None
        self.media = MeetingMedia(
            self.capture,
            self.browser,
            self.events,
            config.settings,
            settings,
            TranscribeOptions(
                # The control plane names the models it validated the bot's options against.
                model=config.transcription_model or settings.transcribe_model,
                deferred_model=config.deferred_transcription_model,
                cpu_threads=settings.transcribe_cpu_threads,
                models_dir=settings.models_dir,
                tracks_per_participant=self.adapter.audio_per_participant,
                multilingual_idle_s=settings.multilingual_idle_seconds or None,
                backlog_memory_s=settings.transcribe_backlog_memory_seconds,
                final_beam_size=settings.transcribe_final_beam_size,
                backlog_dir=settings.data_dir / "backlog",
            ),
            self.bot_id,
            refine_after_meeting=config.refine_after_meeting,
        )
        self.watch = MeetingWatch(
            self.adapter,
            config.settings.bot_name,
            self.timers,
            self.media,
            speaker_sink,
            audio=self.capture.stats,
            # 10 minutes (scaled like the bot's timeouts), at least the left-alone timeout.
            quiet_log_after=max(
                self.timers.timeouts.left_alone, QUIET_LOG_S * settings.timeout_scale
            ),
        )
        self.uploader = ArtifactUploader(config.agent_token, settings.data_dir / "artifacts")
        self.media.ship_pieces_to(self.uploader, config.control_plane_url)
        self.speaker = Speaker(
            synthesizer_for(settings),
            PageMicrophone(self.browser, self.adapter),
            lambda name, payload: self.events.speech(name, payload),
            now=lambda: format_utc(datetime.now(UTC)),
            media_policy=fetch_policy(settings),
        )
        self.commands = CommandHandler(
            self.browser,
            self.adapter,
            self.events,
            self.uploader,
            status=lambda: self.machine.status,
            request_stop=self.request_stop,
            settings=SettingsApplier(self.media, lambda: self.machine.status),
            bot_name=config.settings.bot_name,
            default_avatar_url=config.settings.default_avatar_url,
            media_policy=fetch_policy(settings),
            speaker=self.speaker,
            voice_enabled=lambda: self.media.settings.voice_agent_enabled,
        )

        warn_mb, limit_mb = thresholds_mb(
            settings.memory_warn_mb, settings.memory_limit_mb, read_budget()
        )
        self.memory = MemoryGuard(
            Thresholds(
                warn_mb=warn_mb,
                limit_mb=limit_mb,
                interval=settings.memory_interval_seconds,
                cooldown=settings.memory_relief_cooldown_seconds,
                tidy_interval=settings.memory_tidy_interval_seconds,
            ),
            lambda report: self.events.memory(report),
            self._reliefs(),
        )

    def _reliefs(self) -> list[Relief]:
        """What the memory guard may free without leaving the meeting, cheapest loss first."""

        async def voice() -> bool:
            return self.speaker.release_voice()

        async def heap() -> bool:
            return await asyncio.to_thread(trim_heap)

        return [
            Relief("browser_caches", self.browser.relieve_memory, routine=True),
            Relief("voice", voice),
            Relief("agent_heap", heap, routine=True),
        ]

    @property
    def participants(self) -> list[str]:
        """The participant names last seen (the bot excluded)."""
        return self.watch.participants

    # ---- control --------------------------------------------------------------------

    def request_stop(self, reason: StatusReason = StatusReason.STOPPED_BY_API) -> None:
        """Ask the bot to leave (stop command, SIGTERM); the first reason wins."""
        if not self._stop.is_set():
            self._stop_reason = reason
            self._stop.set()

    def _end(self, exit_: MeetingExit) -> None:
        """End the attendance with ``exit_`` (the watchdog's verdict); the first cause wins."""
        if not self._stop.is_set():
            self._exit = exit_
            self._stop.set()

    def _stopped(self) -> MeetingExit:
        """The exit of a stopped attendance: the watchdog's, else the stop request's."""
        return self._exit if self._exit is not None else MeetingLeft(self._stop_reason)

    async def _pause(self, seconds: float) -> None:
        """Sleep up to ``seconds`` (less when a timer is due); leave at once when asked to."""
        deadline = self.timers.next_deadline()
        if deadline is not None:
            seconds = max(0.0, min(seconds, deadline - _now()))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=seconds)
        if self._stop.is_set():
            raise self._stopped()

    # ---- run ------------------------------------------------------------------------

    async def run(self) -> BotStatus:
        """Attend the meeting and shut down cleanly; returns the final status."""
        await self._start_services()
        commands: asyncio.Task[None] | None = None
        if self.link is not None:
            commands = asyncio.create_task(self._serve_commands(self.link), name="commands")
        exit_: MeetingExit
        cancelled = False
        try:
            await self._attend_until_stopped()
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
            if commands is not None:
                commands.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await commands
            await self._stop_services()
        if cancelled:
            raise asyncio.CancelledError
        return self.machine.status

    async def _attend_until_stopped(self) -> None:
        """Run :meth:`_attend`, cut short the moment a stop is requested.

        The attendance may be inside a long browser call (a page load, a join click) when the
        stop comes; it is cancelled there rather than at its next pause, so a SIGTERM or stop
        command takes effect at once.

        Raises:
            MeetingExit: How the bot left (``MeetingLeft`` with the stop reason when stopped).
        """
        attend = asyncio.create_task(self._attend(), name="attend")
        stopped = asyncio.create_task(self._stop.wait(), name="stop-wait")
        cut_short = False
        try:
            await asyncio.wait({attend, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopped
            if not attend.done():
                cut_short = True
                attend.cancel()
                # Its own outcome is moot once a stop (or the owner) cut it short.
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await attend
        if cut_short:
            raise self._stopped()
        attend.result()

    async def _start_services(self) -> None:
        s = self.settings
        if self.config.control_plane_url and self.config.agent_token:
            self._outbox = Outbox(s.data_dir / f"outbox-{self.bot_id}.sqlite3")
            stream = self.stream
            self.link = LinkClient(
                agent_link_url(self.config.control_plane_url, self.bot_id),
                self.config.agent_token,
                self._outbox,
                register=lambda: Register(agent_version=__version__, stream_seq=stream.last_id),
                timing=LinkTiming(
                    s.heartbeat_interval_seconds, s.reconnect_min_seconds, s.reconnect_max_seconds
                ),
                stream=stream,
            )
            self.events = BotEvents(self.stream, self.link.send, self._observer)
            self.machine = StatusMachine(self.events)
            self.media.events = self.events
            self.commands.events = self.events
            self.link.start()
        log.info("agent started", extra={"bot_id": self.bot_id, "linked": self.link is not None})

    async def _stop_services(self) -> None:
        if self.link is not None:
            started = _now()
            drained = await self.link.drain(self.settings.drain_timeout_seconds)
            if not drained:
                log.warning("outbox not drained before exit", extra={"bot_id": self.bot_id})
            # The stream ends after the final status and the outbox: the control plane ends
            # the bot's SSE stream when ``stream_end`` arrives, within the same drain budget.
            await self.stream.close()
            left = max(self.settings.drain_timeout_seconds - (_now() - started), 1.0)
            if drained and not await self.link.finish_stream(left):
                log.warning("stream end not sent before exit", extra={"bot_id": self.bot_id})
            await self.link.close()
        if self._outbox is not None:
            self._outbox.close()
        await self.stream.close()

    # ---- the meeting ----------------------------------------------------------------

    async def _attend(self) -> None:
        await self.machine.move(BotStatus.JOINING, StatusReason.JOIN_STARTED)
        page = await self.browser.start(await self._camera_image())
        url = self.adapter.meeting_url(self.config.meeting_url, self.config.passcode)
        self._start_watchdog(page, url)
        timeout_ms = self.settings.join_timeout_seconds * 1000
        try:
            await page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
        except PlaywrightError as exc:
            raise JoinFailed(StatusReason.JOIN_ERROR, "meeting page did not load") from exc
        await self._join(page)
        await self._admission(page)
        await self._in_meeting(page)

    async def _camera_image(self) -> str | None:
        """The camera image at join: ``default_avatar_url`` fetched, or None for the logo.

        An image that cannot be used is logged and told on the stream (``avatar_unavailable``)
        and the logo shown; the bot still joins.
        """
        url = self.config.settings.default_avatar_url
        if not url:
            return None
        try:
            return await image_data_url(
                url, fetch_policy(self.settings), CommandErrorCode.AVATAR_UNAVAILABLE
            )
        except CommandError as exc:
            log.warning("default avatar unavailable, showing the logo", extra={"detail": str(exc)})
            await self.events.avatar_unavailable(str(exc))
            return None

    def _start_watchdog(self, page: Page, url: str) -> None:
        watchdog = PageWatchdog(
            self.adapter,
            admitted=lambda: self.joined_at is not None,
            on_exit=self._end,
            interval=self.settings.watchdog_interval_seconds,
            lost_after=self.settings.lost_page_seconds,
            grace=2 * self.settings.poll_interval_seconds,
            on_unknown=self._unknown_screen,
        )
        watchdog.attach(page)
        self._watchdog_task = asyncio.create_task(
            watchdog.run(page, urlsplit(url).hostname or ""), name="watchdog"
        )

    async def _unknown_screen(self, text: str) -> None:
        """Log a screen no adapter probe knows, with its text and a screenshot artifact."""
        self._unknown_screens += 1
        artifact_id = f"unknown-screen-{self._unknown_screens}"
        log.warning(
            "unknown screen",
            extra={"screen_text": text, "artifact_id": artifact_id, "url": self._page_url()},
        )
        try:
            await asyncio.wait_for(self._screenshot_artifact(artifact_id), UNKNOWN_SHOT_TIMEOUT_S)
        except (BrowserError, CommandError, PlaywrightError, RuntimeError, TimeoutError) as exc:
            log.warning("unknown screen not captured", extra={"error": type(exc).__name__})

    def _page_url(self) -> str:
        """The page's URL without its query (a passcode may ride in it)."""
        try:
            url = self.browser.page.url
        except RuntimeError:
            return ""
        return url.split("?", 1)[0]

    async def _screenshot_artifact(self, artifact_id: str) -> None:
        """Store a screenshot of the page in the bot's artifacts and report it."""
        captured_at = datetime.now(UTC)
        png = await self.browser.screenshot()
        slot = None
        if self.link is not None and self.config.control_plane_url:
            slot = await self.uploader.request_slot(
                self.config.control_plane_url,
                self.bot_id,
                ArtifactKind.SCREENSHOT,
                f"{artifact_id}.png",
                "image/png",
                len(png),
            )
        await self.commands.store_screenshot(png, captured_at, artifact_id, slot)

    async def _stop_watchdog(self) -> None:
        task, self._watchdog_task = self._watchdog_task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    async def _stop_memory_guard(self) -> None:
        task, self._memory_task = self._memory_task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def _screen_exit(self, state: MeetingState) -> None:
        """Raise the exit ``state`` means (see :func:`agent.meeting.watchdog.screen_exit`)."""
        exit_ = screen_exit(state, admitted=self.joined_at is not None)
        if exit_ is not None:
            raise exit_

    async def _join(self, page: Page) -> None:
        deadline = _now() + self.settings.join_timeout_seconds
        while True:
            state = await self.adapter.state(page)
            self._screen_exit(state)
            if state is MeetingState.PASSCODE:
                await self._passcode(page)
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

    async def _passcode(self, page: Page) -> None:
        """Answer the platform's passcode prompt with the bot's passcode.

        The passcode is the API's ``passcode``, else the one the meeting link carries (Zoom's
        ``pwd=``, Teams' ``p=``). A name box beside the prompt is filled first. The prompt is
        answered again when it still shows :data:`PASSCODE_RETRY_S` after an answer, up to
        :data:`PASSCODE_TRIES` answers. Logs name the prompt and where the passcode came from,
        never the passcode.

        Raises:
            JoinFailed: ``join_error`` at once when the bot has no passcode to give, and when
                the prompt still shows after the last answer (the passcode was refused).
        """
        passcode, source = self.config.passcode, "passcode"
        if not passcode:
            passcode = self.adapter.link_passcode(self.config.meeting_url)
            source = "the meeting link"
        if not passcode:
            log.warning("passcode prompt, and the bot has no passcode")
            raise JoinFailed(StatusReason.JOIN_ERROR, "the meeting asks for a passcode")
        now = _now()
        if self._passcode_at is not None and now - self._passcode_at < PASSCODE_RETRY_S:
            return  # the page is still checking the last answer
        if self._passcode_tries >= PASSCODE_TRIES:
            log.warning(
                "the passcode prompt refused the passcode",
                extra={"passcode_source": source, "tries": self._passcode_tries},
            )
            raise JoinFailed(
                StatusReason.JOIN_ERROR, f"the passcode prompt refused the passcode ({source})"
            )
        self._passcode_at = now
        self._passcode_tries += 1
        await self.adapter.prepare(page, self.config.settings.bot_name)
        try:
            await self.adapter.enter_passcode(page, self.config.native_meeting_id or "", passcode)
        except BrowserError as exc:
            log.warning("passcode prompt not usable", extra={"error": str(exc)})
            return
        log.info(
            "passcode prompt answered",
            extra={"passcode_source": source, "tries": self._passcode_tries},
        )

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
                if self.memory.enabled:
                    self._memory_task = asyncio.create_task(self.memory.run(), name="memory")
                # The voice loads on the first speech unless the host asks for it now.
                if self.media.settings.voice_agent_enabled and self.settings.voice_preload:
                    self.speaker.warm_up()
                return
            not_in_yet = probed_at
            if state is MeetingState.PASSCODE:
                await self._passcode(page)
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

    # ---- commands -------------------------------------------------------------------

    async def _serve_commands(self, link: LinkClient) -> None:
        while True:
            command: Command = await link.commands.get()
            await self.commands.handle(command)

    # ---- leaving --------------------------------------------------------------------

    async def _finish(self, exit_: MeetingExit) -> None:
        await self._stop_watchdog()
        await self._stop_memory_guard()
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
        # Before leaving: the bot's own exit screens are not part of the meeting.
        await self.media.stop_capture()
        await self.speaker.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._leave(), timeout=LEAVE_TIMEOUT_S)
        # A shared page's screencast forwards are owned by the share: awaited before the browser
        # goes.
        await self.commands.screen.close()
        await self.browser.close()
        log.info("browser closed")
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
