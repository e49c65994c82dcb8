"""Wiring of capture → transcriber → events for one meeting.

Frames from :class:`~agent.capture.pcm.AudioCapture` are fed to the ``Transcriber`` seam of
``agent/transcribe`` (``open_transcriber``); its segments go to
:class:`~agent.link.events.BotEvents` (partials to the SSE stream only, finals to the stream and the
link); active-speaker changes from the platform adapter go to the transcriber for speaker names.
Both pumps are tasks owned here, cancelled and awaited on every path.

A transcriber whose own task dies mid-meeting (``TranscriberFailed``) is replaced by a fresh
one at once, up to :data:`MAX_RESTARTS` times, with new segment ids; the audio queued in the
dead one is lost and logged, everything before it was delivered. The restart is logged and
reported to the observer (``transcription_restarted``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

from agent.capture.audio import SpeakerActivity
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotSettings
from agent.contracts.link import TranscriptionReady
from agent.contracts.whisper_models import UnsupportedTranscriptionOptions
from agent.link.events import BotEvents
from agent.transcribe.base import Transcriber
from agent.transcribe.errors import TranscribeError, TranscriberFailed
from agent.transcribe.factory import open_transcriber
from agent.transcribe.options import TranscribeOptions
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

MAX_RESTARTS = 3
"""Transcribers opened again in one meeting after one failed, before transcription stops."""
FAILED_CLOSE_SECONDS = 30.0
"""How long a failed transcriber may take to deliver what it still can."""


class TranscriptionPipe:
    """One meeting's transcription: open with :meth:`start`, end with :meth:`finish`.

    Args:
        capture: Source of audio frames.
        events: Where segments go.
        settings: The bot's settings (``transcribe_enabled``, tier, language, task).
        options: Model and tier knobs of the agent host.
        work_dir: Scratch folder of the deferred tier.
        bot_id: Prefix of segment ids (unique per meeting).
    """

    def __init__(
        self,
        capture: AudioCapture,
        events: BotEvents,
        settings: BotSettings,
        options: TranscribeOptions,
        work_dir: Path,
        bot_id: str,
        *,
        refine_after_meeting: bool = False,
    ) -> None:
        self._capture = capture
        self.events = events
        self._settings = settings
        self._options = options
        self._refine_after_meeting = refine_after_meeting
        self._work_dir = work_dir
        self._bot_id = bot_id
        self._transcriber: Transcriber | None = None
        self._feeder: asyncio.Task[None] | None = None
        self._emitter: asyncio.Task[None] | None = None
        self._opener: asyncio.Task[None] | None = None
        self._early_activity: list[SpeakerActivity] = []
        self._join_time = 0.0
        self.restarts = 0
        self.finals = 0
        self.partials = 0

    @property
    def running(self) -> bool:
        """Whether a transcriber is open."""
        return self._transcriber is not None

    def use_settings(self, settings: BotSettings) -> None:
        """Transcribe with ``settings`` (language, task, ``transcribe_enabled``).

        Raises:
            RuntimeError: The transcriber is already opening or open.
        """
        if self._opener is not None:
            raise RuntimeError("transcription settings are fixed once it started")
        self._settings = settings

    def start(self, join_time: float) -> None:
        """Open the transcriber in the background and start both pumps once it is open.

        Loading a model takes seconds; the meeting must not wait for it.
        """
        if self._opener is None:
            self._opener = asyncio.create_task(self._open(join_time), name="transcribe-open")

    async def wait_open(self) -> bool:
        """Wait until :meth:`start`'s opening is over; True when a transcriber is open."""
        if self._opener is not None:
            await asyncio.shield(self._opener)
        return self.running

    async def _open(self, join_time: float) -> None:
        """Open the transcriber (unless transcription is off) and start both pumps.

        A model that cannot be loaded is logged and the meeting goes on untranscribed.
        """
        self._join_time = join_time
        self._transcriber = await self._open_one()
        if self._transcriber is None:
            return
        # Speakers who lit up while the model loaded name the audio captured meanwhile.
        for activity in self._early_activity:
            self._transcriber.speaker_activity(activity)
        self._early_activity.clear()
        self._feeder = asyncio.create_task(self._feed(), name="transcribe-feed")
        self._emitter = asyncio.create_task(self._emit(self._transcriber), name="transcribe-emit")
        log.info(
            "transcription started",
            extra={
                "tier": self._settings.transcription_tier,
                "language": self._settings.language,
            },
        )

    def speaker(self, activity: SpeakerActivity) -> None:
        """Pass an active-speaker change on to the transcriber (kept until it is open)."""
        if self._transcriber is not None:
            self._transcriber.speaker_activity(activity)
        elif self._opener is not None and not self._opener.done():
            self._early_activity.append(activity)

    async def _open_one(self) -> Transcriber | None:
        """A transcriber for this meeting (the first, or one replacing a failed one)."""
        try:
            return await open_transcriber(
                self._settings,
                self._options,
                join_time=self._join_time,
                work_dir=self._work_dir,
                refine_after_meeting=self._refine_after_meeting,
                # A replacement's segment ids must not repeat the failed one's.
                id_prefix=f"{self._bot_id}-r{self.restarts}" if self.restarts else self._bot_id,
            )
        except (TranscribeError, UnsupportedTranscriptionOptions) as exc:
            log.error("transcription unavailable", extra={"error": type(exc).__name__})
            return None

    async def _feed(self) -> None:
        while True:
            frame = await self._capture.frames.get()
            transcriber = self._transcriber
            assert transcriber is not None  # noqa: S101 - _open set it before starting us
            try:
                await transcriber.feed(frame)
            except TranscriberFailed as exc:
                if not await self._replace(transcriber, exc):
                    return

    async def _replace(self, failed: Transcriber, exc: TranscriberFailed) -> bool:
        """Open a new transcriber in place of ``failed``; False when no more may be opened.

        The failed one is closed first, within :data:`FAILED_CLOSE_SECONDS`, so the finals its
        surviving task can still decode are delivered; then it is aborted.
        """
        try:
            async with asyncio.timeout(FAILED_CLOSE_SECONDS):
                with contextlib.suppress(TranscriberFailed):
                    await failed.close()
                if self._emitter is not None:
                    await self._emitter
        except TimeoutError:
            log.warning("the failed transcriber did not close in time")
        await failed.abort()
        cause = type(exc.__cause__).__name__ if exc.__cause__ else "unknown"
        if self.restarts >= MAX_RESTARTS:
            log.error(
                "transcription stopped: it failed too often",
                extra={"restarts": self.restarts, "error": cause},
            )
            return False
        self.restarts += 1
        replacement = await self._open_one()
        log.error(
            "transcription failed and was restarted",
            extra={"restart": self.restarts, "error": cause, "open": replacement is not None},
        )
        self.events.diagnostic(
            "transcription_restarted", {"restart": self.restarts, "error": cause}
        )
        if replacement is None:
            return False
        self._transcriber = replacement
        self._emitter = asyncio.create_task(self._emit(replacement), name="transcribe-emit")
        return True

    async def _drain(self, transcriber: Transcriber) -> None:
        """Feed the frames captured but not fed yet, in order, then stop the feeder."""
        if self._feeder is None:
            return
        # The feeder, if it waits in ``feed``, is first in line: frames keep their order.
        while not self._capture.frames.empty():
            await transcriber.feed(self._capture.frames.get_nowait())
        await cancel_and_wait(self._feeder)

    async def _emit(self, transcriber: Transcriber) -> None:
        async for segment in transcriber.segments():
            if segment.completed:
                self.finals += 1
            else:
                self.partials += 1
            await self.events.segment(segment)

    async def finish(self, within_seconds: float) -> None:
        """Feed what was captured, flush the transcriber, deliver the last segments.

        One budget of ``within_seconds`` covers all three: a starved machine (a VM under
        emulation) can hold minutes of captured audio that is not fed yet. Past it the
        transcriber is aborted; the frames still queued are logged as lost.
        """
        if self._opener is not None:
            try:
                await asyncio.wait_for(self._opener, timeout=within_seconds)
            except TimeoutError:
                log.warning("transcriber did not open in time")
        transcriber = self._transcriber
        if transcriber is None:
            return
        began = time.monotonic()
        try:
            async with asyncio.timeout(within_seconds):
                await self._drain(transcriber)
                await transcriber.close()
                if self._emitter is not None:
                    await self._emitter
        except TimeoutError:
            log.warning(
                "transcription did not finish in time",
                extra={"within_s": within_seconds, "frames_left": self._capture.frames.qsize()},
            )
            await transcriber.abort()
        except Exception as exc:
            # The meeting is over either way: report what was transcribed and shut down.
            log.exception("transcription failed at close", extra={"error": type(exc).__name__})
            await transcriber.abort()
        finally:
            for task in (self._feeder, self._emitter):
                if task is not None and not task.done():
                    await cancel_and_wait(task)
            if self._transcriber is not transcriber and self._transcriber is not None:
                # A replacement opened while this one was being closed: it heard nothing.
                await self._transcriber.abort()
        log.info(
            "transcription flushed",
            extra={
                "seconds": round(time.monotonic() - began, 1),
                "finals": self.finals,
                "restarts": self.restarts,
                # The last transcriber's counters: utterances, discards, drops by rule, decodes.
                "metrics": {k: v for k, v in transcriber.metrics.snapshot().items() if v},
            },
        )
        tier = self._settings.transcription_tier.value
        await self.events.transcription_ready(
            TranscriptionReady(tier=tier, segment_count=self.finals)
        )
        self._transcriber = None
