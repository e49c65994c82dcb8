"""One meeting's recording: audio (and the bot's view) to disk while active, then one file.

:class:`MeetingRecorder` is started when the bot becomes ``active`` and stopped when it turns
``stopping`` (before it leaves, so the bot's own goodbye screens are not recorded). While
running it:

- taps :class:`~agent.capture.pcm.AudioCapture`: every remote track's 16 kHz frames go through
  a bounded queue to :class:`~agent.transcribe.audio_io.TrackRecorder` (one WAV per track on
  disk; memory holds at most the queue and ten seconds per track);
- with ``video`` in ``capture_modes``, takes a JPEG of the page ``recording_video_fps`` times a
  second, timestamped, written to disk (a view identical to the previous one is skipped).

On the bot's own display runtime (a :class:`~agent.recording.screen.ScreenSource`: Xvfb and
PulseAudio, the VM's or ``--display``'s) a recording with ``video`` in ``capture_modes`` is the
screen instead: :class:`~agent.recording.screen.ScreenCapture` runs ffmpeg x11grab with the
meeting's 48 kHz sound, and nothing is tapped or screenshotted; at the end its file is only
rewrapped into the requested format.

:meth:`MeetingRecorder.finish` mixes and encodes with ffmpeg (``agent.recording.encode``),
uploads the file (an upload slot from the control plane, three attempts with a doubling pause,
or the agent's data folder without one) and reports an ``artifact`` event of kind
``recording``, which the SSE stream announces as ``recording_ready`` and the control plane as
the ``recording.ready`` webhook.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import shutil
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from playwright.async_api import Error as PlaywrightError

from agent.artifacts import ArtifactUploader, StoredArtifact
from agent.audio import AudioFrame
from agent.browser.session import BrowserSession
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotSettings, CaptureMode
from agent.contracts.link import ArtifactEvent, ArtifactKind, UploadSlot
from agent.errors import CommandError
from agent.events import BotEvents
from agent.recording.encode import (
    EncodeError,
    EncodeJob,
    ViewFrame,
    content_type,
    encode,
    probe_duration,
    run_ffmpeg,
)
from agent.recording.screen import ScreenCapture, ScreenSource, finalize_args
from agent.transcribe.audio_io import TrackAudio, TrackRecorder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Finished:
    """A recording file ready to upload: its length (s) and start (Unix time)."""

    path: Path
    duration_s: float
    started_at: float
    with_video: bool
    screen: bool = False


QUEUE_FRAMES = 600
"""Audio frames (100 ms each) waiting for the disk writer; beyond it frames are dropped."""
SCREENSHOT_TIMEOUT_MS = 5_000
UPLOAD_ATTEMPTS = 3
UPLOAD_RETRY_S = 2.0
"""First pause between upload attempts (doubling): a control plane restarting at the meeting's
end must not cost the recording."""


class MeetingRecorder:
    """Records one meeting (see the module docstring).

    Args:
        capture: The bot's audio capture (tapped while recording).
        browser: The bot's browser (view frames).
        settings: The bot's settings (``capture_modes``, ``recording_format``).
        work_dir: Scratch folder for tracks, frames and the encoded file (removed at the end).
        video_fps: View frames per second with video capture.
        jpeg_quality: JPEG quality of the view frames (10-100).
        screen: The bot's display and sound server; with ``video`` captured, the recording is
            that screen (see the module docstring). None: the page's audio and view frames.
    """

    def __init__(
        self,
        capture: AudioCapture,
        browser: BrowserSession,
        settings: BotSettings,
        work_dir: Path,
        video_fps: float = 1.0,
        jpeg_quality: int = 70,
        screen: ScreenSource | None = None,
    ) -> None:
        self._capture = capture
        self._browser = browser
        self._format = settings.recording_format
        self._video = CaptureMode.VIDEO in settings.capture_modes
        self._dir = work_dir
        self._interval = 1.0 / video_fps
        self._fps = math.ceil(video_fps)
        self._quality = jpeg_quality
        self._queue: asyncio.Queue[AudioFrame] = asyncio.Queue(maxsize=QUEUE_FRAMES)
        self._tracks = TrackRecorder(work_dir / "tracks")
        self._frames: list[ViewFrame] = []
        self._writer: asyncio.Task[None] | None = None
        self._viewer: asyncio.Task[None] | None = None
        self._screen: ScreenCapture | None = None
        if screen is not None and self._video:
            self._screen = ScreenCapture(screen, self._format, work_dir / "screen.mkv")
        self._screen_start: asyncio.Task[None] | None = None
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.dropped = 0

    @property
    def running(self) -> bool:
        """Whether capture is on (between :meth:`start` and :meth:`stop_capture`)."""
        return self.started_at is not None and self.stopped_at is None

    def start(self, at: float | None = None) -> None:
        """Start recording (the bot just became ``active``); a second call does nothing.

        Args:
            at: Epoch seconds where the recording's timeline begins (the bot's join time);
                now when None. Audio is placed on this timeline by its capture time.
        """
        if self.started_at is not None:
            return
        self.started_at = time.time() if at is None else at
        if self._screen is not None:
            self._screen_start = asyncio.create_task(self._start_screen(), name="recording-screen")
            log.info("recording started", extra={"format": self._format.value, "screen": True})
            return
        self._capture.taps.append(self._on_frame)
        self._writer = asyncio.create_task(self._write_audio(), name="recording-audio")
        if self._video:
            self._viewer = asyncio.create_task(self._watch(), name="recording-view")
        log.info("recording started", extra={"format": self._format.value, "video": self._video})

    async def _start_screen(self) -> None:
        assert self._screen is not None  # noqa: S101 - start() checked it
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg is None:
            log.warning("recording failed", extra={"error": "ffmpeg is not installed"})
            return
        await asyncio.to_thread(self._dir.mkdir, parents=True, exist_ok=True)
        try:
            await self._screen.start(ffmpeg)
        except OSError as exc:
            log.warning("recording failed", extra={"error": type(exc).__name__, "detail": str(exc)})

    def _on_frame(self, frame: AudioFrame) -> None:
        if self._queue.full():
            self.dropped += 1
            return
        self._queue.put_nowait(frame)

    async def _write_audio(self) -> None:
        while True:
            frame = await self._queue.get()
            try:
                await self._tracks.add(frame)
            finally:
                self._queue.task_done()

    async def _watch(self) -> None:
        frames_dir = self._dir / "frames"
        await asyncio.to_thread(frames_dir.mkdir, parents=True, exist_ok=True)
        previous = b""
        while True:
            began = time.monotonic()
            at = time.time()
            try:
                jpeg = await self._browser.page.screenshot(
                    type="jpeg", quality=self._quality, timeout=SCREENSHOT_TIMEOUT_MS
                )
            except (PlaywrightError, RuntimeError):
                # A page mid-navigation or busy: the previous frame stays on screen longer.
                jpeg = b""
            digest = hashlib.blake2b(jpeg, digest_size=16).digest() if jpeg else b""
            if jpeg and digest != previous:
                previous = digest
                path = frames_dir / f"{len(self._frames):06d}.jpg"
                await asyncio.to_thread(path.write_bytes, jpeg)
                self._frames.append(ViewFrame(path, at))
            await asyncio.sleep(max(0.0, self._interval - (time.monotonic() - began)))

    async def stop_capture(self) -> None:
        """Stop taking audio and view frames; write what is queued to disk."""
        if not self.running:
            return
        self.stopped_at = time.time()
        if self._screen_start is not None:
            await self._screen_start
            assert self._screen is not None  # noqa: S101 - set with _screen_start
            await self._screen.stop()
            return
        with contextlib.suppress(ValueError):
            self._capture.taps.remove(self._on_frame)
        if self._viewer is not None:
            self._viewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._viewer
        if self._writer is not None:
            if not self._writer.done():
                await self._queue.join()
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        if self.dropped:
            log.warning("recording dropped audio frames", extra={"dropped": self.dropped})

    async def finish(
        self,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
    ) -> ArtifactEvent | None:
        """Encode, upload and report the recording; None when nothing was recorded or it failed.

        Failures (ffmpeg, the upload) are logged, not raised: a bot without its recording still
        completes its meeting. The scratch folder is removed in every case.

        Args:
            uploader: Where the file goes.
            events: Where the ``artifact`` event (and so ``recording_ready``) goes.
            control_plane_url: Asked for an upload slot; None keeps the file in the uploader's
                local folder.
            bot_id: The bot's id (for the upload slot).
        """
        await self.stop_capture()
        if self.started_at is None or self.stopped_at is None:
            return None
        try:
            return await self._encode_and_upload(uploader, events, control_plane_url, bot_id)
        except (EncodeError, CommandError, OSError) as exc:
            log.warning("recording failed", extra={"error": type(exc).__name__, "detail": str(exc)})
            return None
        finally:
            await asyncio.to_thread(shutil.rmtree, self._dir, True)

    async def _encode_and_upload(
        self,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
    ) -> ArtifactEvent:
        assert self.started_at is not None and self.stopped_at is not None  # noqa: S101 - checked by finish
        artifact_id = str(uuid.uuid4())
        name = f"{artifact_id}.{self._format.value}"
        if self._screen is not None:
            return await self._finish_screen(
                self._screen, uploader, events, control_plane_url, bot_id, artifact_id
            )
        tracks: list[TrackAudio] = await self._tracks.close()
        job = EncodeJob(
            tracks=tuple(tracks),
            frames=tuple(self._frames),
            started_at=self.started_at,
            duration_s=max(self.stopped_at - self.started_at, 0.1),
            fmt=self._format,
            output=self._dir / name,
            fps=self._fps,
        )
        await asyncio.to_thread(self._dir.mkdir, parents=True, exist_ok=True)
        duration = await encode(job)
        return await self._report(
            _Finished(job.output, duration, self.started_at, with_video=bool(self._frames)),
            uploader,
            events,
            control_plane_url,
            bot_id,
            artifact_id,
        )

    async def _finish_screen(
        self,
        screen: ScreenCapture,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
        artifact_id: str,
    ) -> ArtifactEvent:
        """Rewrap the screen capture into the requested format, upload and report it.

        Raises:
            EncodeError: The capture failed or left no file, or ffmpeg/ffprobe failed.
        """
        ffmpeg, ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")
        if ffmpeg is None or ffprobe is None:
            raise EncodeError("ffmpeg and ffprobe are needed to finish a recording")
        if screen.started_at is None or screen.error is not None:
            raise EncodeError(screen.error or "the screen recording never started")
        output = self._dir / f"{artifact_id}.{self._format.value}"
        await run_ffmpeg(
            ffmpeg, finalize_args(screen.path, self._format, output, screen.audio_delay_s)
        )
        duration = await probe_duration(ffprobe, output)
        return await self._report(
            _Finished(output, duration, screen.started_at, with_video=True, screen=True),
            uploader,
            events,
            control_plane_url,
            bot_id,
            artifact_id,
        )

    async def _report(
        self,
        done: _Finished,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
        artifact_id: str,
    ) -> ArtifactEvent:
        """Upload a finished recording file and report it as an ``artifact`` event."""
        mime = content_type(self._format, with_video=done.with_video)
        size = (await asyncio.to_thread(done.path.stat)).st_size
        stored = await self._upload(uploader, control_plane_url, bot_id, done.path, mime)
        frame = ArtifactEvent(
            kind=ArtifactKind.RECORDING,
            artifact_id=artifact_id,
            storage_key=stored.storage_key,
            content_type=mime,
            size_bytes=size,
            format=self._format.value,
            duration_s=done.duration_s,
            captured_at=datetime.fromtimestamp(done.started_at, UTC),
        )
        await events.artifact(frame)
        log.info(
            "recording uploaded",
            extra={
                "format": self._format.value,
                "size_bytes": size,
                "duration_s": done.duration_s,
                "screen": done.screen,
            },
        )
        return frame

    @staticmethod
    async def _upload(
        uploader: ArtifactUploader,
        control_plane_url: str | None,
        bot_id: str,
        path: Path,
        mime: str,
    ) -> StoredArtifact:
        name = path.name

        async def attempt() -> StoredArtifact:
            slot: UploadSlot | None = None
            if control_plane_url:
                size = (await asyncio.to_thread(path.stat)).st_size
                slot = await uploader.request_slot(
                    control_plane_url, bot_id, ArtifactKind.RECORDING, name, mime, size
                )
            return await uploader.store_file(path, mime, name, slot)

        for number in range(1, UPLOAD_ATTEMPTS):
            try:
                return await attempt()
            except CommandError:
                log.info("recording upload retried", extra={"attempt": number})
                await asyncio.sleep(UPLOAD_RETRY_S * 2 ** (number - 1))
        return await attempt()
