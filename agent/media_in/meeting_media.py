"""What the bot does with the meeting's sound and picture: transcription and recording.

:class:`MeetingMedia` wires the audio capture to the transcription pipe and (when
``recording_enabled``) to the recorder. Nothing runs before :meth:`MeetingMedia.start` (the bot
was admitted); until then the settings in effect may change freely (a PATCH of a launched bot,
:mod:`agent.meeting.live_settings`), and the recorder is built at start from the settings then in
effect. After it, the meeting's media follow the rules of :meth:`MeetingMedia.live_refusal`.
"""

from __future__ import annotations

import asyncio
import logging

from agent.browser.session import BrowserSession
from agent.capture.audio import SpeakerActivity
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotSettings
from agent.link.artifacts import ArtifactUploader
from agent.link.events import BotEvents
from agent.process.settings import AgentSettings
from agent.recording.pieces import Shipping
from agent.recording.recorder import MeetingRecorder
from agent.recording.screen import ScreenSource
from agent.recording.silence import SilenceCheck, SoundVerdict
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.pipe import TranscriptionPipe

log = logging.getLogger(__name__)


class MeetingMedia:
    """One meeting's transcription and recording.

    Args:
        capture: The bot's audio capture.
        browser: The bot's browser (view frames of a video recording).
        events: Where segments and the recording's artifact go.
        settings: The bot's settings at launch (``settings`` holds the ones in effect).
        host: The agent host's settings (models, data folder, recording knobs).
        options: Transcription model knobs.
        bot_id: The bot's id (work folders, segment ids).
        refine_after_meeting: The realtime tier also runs the deferred pass afterwards.
    """

    def __init__(
        self,
        capture: AudioCapture,
        browser: BrowserSession,
        events: BotEvents,
        settings: BotSettings,
        host: AgentSettings,
        options: TranscribeOptions,
        bot_id: str,
        *,
        refine_after_meeting: bool = False,
    ) -> None:
        self._capture = capture
        self._browser = browser
        self._host = host
        self._bot_id = bot_id
        self.settings = settings
        self.transcription = TranscriptionPipe(
            capture,
            events,
            settings,
            options,
            host.data_dir / "transcribe" / bot_id,
            bot_id,
            refine_after_meeting=refine_after_meeting,
        )
        # Recording off: nothing is tapped, nothing written (docs/api.md Part 1 recording_enabled).
        self.recorder: MeetingRecorder | None = None
        self._pieces_to: tuple[ArtifactUploader, str | None] | None = None
        self.joined_at: float | None = None
        # On the bot's own sound server: does the meeting's sound reach its device?
        self.silence_check: SilenceCheck | None = None
        if host.screen:
            self.silence_check = SilenceCheck(
                host.pulse_server, lambda: capture.stats.voiced_seconds, self._sound_verdict
            )

    def _sound_verdict(self, verdict: SoundVerdict) -> None:
        self.events.diagnostic("sound_check", verdict.payload())

    def _screen(self) -> ScreenSource | None:
        """The bot's screen and sound server when it runs on its own display runtime."""
        host = self._host
        if not host.screen:
            return None
        return ScreenSource(
            host.display,
            host.pulse_server,
            host.viewport_width,
            host.viewport_height,
            host.recording_screen_fps,
        )

    @property
    def events(self) -> BotEvents:
        """Where segments go."""
        return self.transcription.events

    def voice_enabled(self) -> bool:
        """Whether the bot may speak now (``voice_agent_enabled``, which a PATCH may change)."""
        return self.settings.voice_agent_enabled

    @property
    def started(self) -> bool:
        """Whether :meth:`start` ran (the bot was admitted)."""
        return self.joined_at is not None

    def start(self, joined_at: float) -> None:
        """The bot is in: start transcribing and (when enabled) recording from ``joined_at``.

        Args:
            joined_at: Epoch seconds the meeting's timeline begins at.
        """
        self.joined_at = joined_at
        self.transcription.use_settings(self.settings)
        self.transcription.start(joined_at)
        if self.silence_check is not None:
            self.silence_check.start()
        if self.settings.recording_enabled:
            self._start_recorder(joined_at)

    def ship_pieces_to(self, uploader: ArtifactUploader, control_plane_url: str | None) -> None:
        """Where a long recording's pieces go while the meeting goes on (before :meth:`start`)."""
        self._pieces_to = (uploader, control_plane_url)

    def _start_recorder(self, at: float) -> None:
        if self.recorder is None:
            shipping = None
            if self._pieces_to is not None:
                uploader, url = self._pieces_to
                shipping = Shipping(uploader, lambda: self.events, url, self._bot_id)
            self.recorder = MeetingRecorder(
                self._capture,
                self._browser,
                self.settings,
                self._host.data_dir / "recording" / self._bot_id,
                video_fps=self._host.recording_video_fps,
                jpeg_quality=self._host.recording_jpeg_quality,
                screen=self._screen(),
                piece_seconds=self._host.recording_piece_seconds,
                shipping=shipping,
            )
        self.recorder.start(at)

    def speaker(self, activity: SpeakerActivity) -> None:
        """An active-speaker change, for the transcriber's speaker names."""
        self.transcription.speaker(activity)

    def live_refusal(self, new: BotSettings) -> tuple[str, str] | None:
        """Why the settings ``new`` cannot take effect now, or None when they can.

        Before :meth:`start` every media setting can change. Once the meeting's media run:
        ``language`` and ``transcribe_enabled`` are fixed (the transcriber is open),
        ``capture_modes`` and ``recording_format`` are fixed once a recording began, and a
        recording that was stopped cannot be resumed (the file has one timeline).

        Returns:
            ``(field, reason)`` of the first setting that cannot change, or None.
        """
        old = self.settings
        if not self.started:
            return None
        if new.language != old.language:
            return "language", "the transcriber already runs with the former language"
        if new.transcribe_enabled != old.transcribe_enabled:
            return "transcribe_enabled", "transcription started with the former setting"
        recording = self.recorder is not None
        if recording and new.capture_modes != old.capture_modes:
            return "capture_modes", "the recording already began"
        if recording and new.recording_format != old.recording_format:
            return "recording_format", "the recording already began"
        stopped = self.recorder is not None and self.recorder.stopped_at is not None
        if stopped and new.recording_enabled and not old.recording_enabled:
            return "recording_enabled", "a stopped recording cannot be resumed"
        return None

    async def apply(self, new: BotSettings) -> None:
        """Put ``new`` in effect (check it with :meth:`live_refusal` first).

        Before :meth:`start` it is only remembered. After it, ``recording_enabled`` turning on
        starts the recorder now (the recording's timeline still begins at the join), turning
        off stops its capture (what was recorded is still encoded and uploaded at the end).
        """
        old, self.settings = self.settings, new
        if not self.started:
            self.transcription.use_settings(new)
            return
        if new.recording_enabled and not old.recording_enabled and self.joined_at is not None:
            self._start_recorder(self.joined_at)
            log.info("recording started by a settings change")
        if old.recording_enabled and not new.recording_enabled and self.recorder is not None:
            await self.recorder.stop_capture()
            log.info("recording stopped by a settings change")

    async def stop_capture(self) -> None:
        """Stop the recorder's capture (before leaving: exit screens are not the meeting's).

        The silence check ends here too (``unchecked`` if it reached no verdict).
        """
        if self.silence_check is not None:
            await self.silence_check.stop()
        if self.recorder is not None:
            await self.recorder.stop_capture()

    async def finish(
        self,
        within_seconds: float,
        uploader: ArtifactUploader,
        control_plane_url: str | None,
    ) -> None:
        """Flush the transcription, then encode, upload and announce the recording.

        Each step gives up after ``within_seconds``.

        Args:
            within_seconds: Time limit of each step.
            uploader: Where the recording goes.
            control_plane_url: Where upload slots come from (None: kept locally).
        """
        await self.transcription.finish(within_seconds)
        if self.recorder is None:
            return
        try:
            await asyncio.wait_for(
                self.recorder.finish(uploader, self.events, control_plane_url, self._bot_id),
                timeout=within_seconds,
            )
        except TimeoutError:
            log.warning("recording not finished in time", extra={"bot_id": self._bot_id})
