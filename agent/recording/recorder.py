"""One meeting's recording: audio (and the bot's view) to disk while active, then files.

:class:`MeetingRecorder` is started when the bot becomes ``active`` and stopped when it turns
``stopping`` (before it leaves, so the bot's own goodbye screens are not recorded). While
running it:

- taps :class:`~agent.capture.pcm.AudioCapture`: every remote track's 16 kHz frames go through
  a bounded queue to :class:`~agent.transcribe.audio_io.TrackRecorder` (one WAV per track on
  disk; memory holds at most the queue and ten seconds per track);
- with ``video`` in ``capture_modes``, takes a JPEG of the page ``recording_video_fps`` times a
  second, timestamped, written to disk (a view identical to the previous one is skipped);
- with ``piece_seconds`` and a :class:`~agent.recording.pieces.Shipping`, cuts the recording
  into pieces of that many seconds of the meeting, each encoded and uploaded as soon as it
  ends (:mod:`agent.recording.pieces`), so a crash late in a long meeting keeps all but the
  current piece.

On the bot's own display runtime (a :class:`~agent.recording.screen.ScreenSource`: Xvfb and
PulseAudio, the VM's or ``--display``'s) a recording with ``video`` in ``capture_modes`` is the
screen instead: :class:`~agent.recording.screen.ScreenCapture` runs ffmpeg x11grab with the
meeting's 48 kHz sound, and nothing is tapped or screenshotted; at the end its file is only
rewrapped into the requested format. With pieces, ffmpeg itself cuts the capture every
``piece_seconds``; each piece it closes is rewrapped and uploaded while the meeting goes on
(polled every ``SCREEN_PIECE_POLL_S``), and its scratch files removed.

:meth:`MeetingRecorder.finish` mixes and encodes with ffmpeg (``agent.recording.encode``),
uploads the file (an upload slot from the control plane, three attempts with a doubling pause,
or the agent's data folder without one) and reports an ``artifact`` event of kind
``recording``, which the SSE stream announces as ``recording_ready`` and the control plane as
the ``recording.ready`` webhook; with pieces, this is the last piece (the others went during
the meeting, each with its own ``artifact`` event).
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
from agent.logs import LossReport
from agent.memory.relief import trim_heap
from agent.recording.encode import encode, probe_duration, run_ffmpeg
from agent.recording.job import EncodeError, EncodeJob, ViewFrame, content_type
from agent.recording.pieces import Piece, PieceShipper, Shipping
from agent.recording.screen import ScreenCapture, ScreenPiece, ScreenSource, finalize_args
from agent.transcribe.audio_io import TrackAudio

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Finished:
    """A recording file ready to upload: its length (s) and start (Unix time)."""

    path: Path
    duration_s: float
    started_at: float
    with_video: bool
    screen: bool = False


ROTATION_GRACE_S = 2.0
"""Seconds past a piece's end the writer waits for audio before ending the piece anyway (the
page's frames arrive a little after their capture time)."""
MIN_PIECE_S = 0.5
"""A last piece shorter than this (the bot stopped right at a piece's end) is not encoded."""
QUEUE_FRAMES = 9_600
"""Audio frames (100 ms each) waiting for the disk writer; beyond it frames are dropped.

Two minutes of 8 tracks (at most about 31 MB, held only while the writer lags): the page sends
every block that waited for a slow agent in one call, up to a minute of every track, and the
tap puts that call's frames here all at once. With 600 (stop 13) a soak at load 47 dropped
126,612 frames, three quarters of its meeting's audio."""
SCREENSHOT_TIMEOUT_MS = 5_000
SCREEN_PIECE_POLL_S = 2.0
"""How often the screen capture's list of closed pieces is read."""
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
        piece_seconds: Length of each piece in seconds of the meeting; 0 (or no
            ``shipping``): one file at the end.
        shipping: Where pieces go during the meeting.
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
        piece_seconds: float = 0.0,
        shipping: Shipping | None = None,
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
        self._piece_s = piece_seconds if shipping is not None else 0.0
        self._shipping = shipping
        self._piece = Piece(1, work_dir / "piece-0001", 0.0)
        self._shipper: PieceShipper[Piece] | None = None
        self._screen_shipper: PieceShipper[ScreenPiece] | None = None
        self._screen_queued = 0
        self._screen_watch: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._viewer: asyncio.Task[None] | None = None
        self._screen: ScreenCapture | None = None
        if screen is not None and self._video:
            self._screen = ScreenCapture(
                screen, self._format, work_dir / "screen.mkv", piece_seconds=self._piece_s
            )
        self._screen_start: asyncio.Task[None] | None = None
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.dropped = 0
        self._losses = LossReport(log, "recording dropped audio frames the disk writer missed")

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
        self._piece = Piece(1, self._dir / "piece-0001", self.started_at)
        if self._screen is not None:
            self._screen_start = asyncio.create_task(self._start_screen(), name="recording-screen")
            if self._piece_s > 0:
                self._screen_shipper = PieceShipper(self._ship_screen_piece)
                self._screen_watch = asyncio.create_task(
                    self._watch_screen_pieces(), name="recording-screen-pieces"
                )
            log.info("recording started", extra={"format": self._format.value, "screen": True})
            return
        self._capture.taps.append(self._on_frame)
        if self._piece_s > 0 and self._shipping is not None:
            self._shipper = PieceShipper(self._ship_piece)
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

    async def _watch_screen_pieces(self) -> None:
        """Hand each screen piece ffmpeg closes to the shipper, in order (until cancelled)."""
        while True:
            await asyncio.sleep(SCREEN_PIECE_POLL_S)
            await self._queue_screen_pieces(last_too=False)

    async def _queue_screen_pieces(self, *, last_too: bool) -> ScreenPiece | None:
        """Queue the closed screen pieces not queued yet; return the one left for the end.

        With ``last_too`` false every closed piece goes. With it true (the capture stopped)
        the last piece on disk, closed or cut short by a crash, is returned instead of queued.
        """
        screen, shipper = self._screen, self._screen_shipper
        assert screen is not None and shipper is not None  # noqa: S101 - pieces on the screen only
        closed = await asyncio.to_thread(screen.closed_pieces)
        pieces = list(closed)
        if last_too:
            # A piece ffmpeg could not close (it died) is on disk but not in the list.
            for path in (await asyncio.to_thread(screen.written_pieces))[len(closed) :]:
                start = pieces[-1].end_s if pieces else 0.0
                pieces.append(ScreenPiece(len(pieces), path, start, start))
        last = pieces.pop() if last_too and pieces else None
        for piece in pieces[self._screen_queued :]:
            shipper.put(piece, piece.end_s)
        self._screen_queued = max(self._screen_queued, len(pieces))
        return last

    def _on_frame(self, frame: AudioFrame) -> None:
        if self._queue.full():
            self.dropped += 1
            self._losses.lost()
            return
        self._queue.put_nowait(frame)

    async def _write_audio(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self._until_rotation()):
                    frame = await self._queue.get()
            except TimeoutError:  # nobody speaks: the piece still ends on time
                self._rotate()
                continue
            try:
                if self._shipper is not None and frame.start_time >= self._piece_end():
                    self._rotate()
                await self._piece.tracks.add(frame)
            finally:
                self._queue.task_done()

    def _piece_end(self) -> float:
        return self._piece.started_at + self._piece_s

    def _until_rotation(self) -> float | None:
        """Seconds until the current piece must end without audio (None: one piece)."""
        if self._shipper is None:
            return None
        return max(0.0, self._piece_end() + ROTATION_GRACE_S - time.time())

    def _rotate(self) -> None:
        """End the current piece at its planned end and hand it to the shipper.

        Nothing here awaits, so no frame or view lands between the two pieces.
        """
        assert self._shipper is not None  # noqa: S101 - only called with pieces on
        old, end = self._piece, self._piece_end()
        self._piece = Piece(old.index + 1, self._dir / f"piece-{old.index + 1:04d}", end)
        if old.frames:
            # The view on screen when the new piece begins is its first frame.
            self._piece.frames.append(old.carry_last_frame(self._piece, end))
        self._shipper.put(old, end)
        log.info("recording piece ended", extra={"piece": old.index})

    async def _watch(self) -> None:
        previous = b""
        taken = 0
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
                taken += 1
                piece = self._piece
                path = piece.frames_dir / f"{taken:06d}.jpg"
                await asyncio.to_thread(_write_file, path, jpeg)
                piece.frames.append(ViewFrame(path, at))
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
            if self._screen_watch is not None:
                self._screen_watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._screen_watch
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
        # Pieces that ended before the stop end here, whether or not audio came after them.
        while self._shipper is not None and self.stopped_at >= self._piece_end():
            self._rotate()
        if self.dropped:
            log.warning("recording dropped audio frames in all", extra={"dropped": self.dropped})

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
            if self._shipper is not None:
                await self._shipper.close()  # the pieces that ended before, in order
            if self._piece.index > 1 and self.stopped_at - self._piece.started_at < MIN_PIECE_S:
                return None  # stopped right at a piece's end: nothing after it
            return await self._encode_and_upload(uploader, events, control_plane_url, bot_id)
        except (EncodeError, CommandError, OSError) as exc:
            log.warning("recording failed", extra={"error": type(exc).__name__, "detail": str(exc)})
            return None
        finally:
            if self._screen_shipper is not None:
                await self._screen_shipper.close()  # also when the capture failed
            await asyncio.to_thread(shutil.rmtree, self._dir, True)

    async def _ship_piece(self, piece: Piece, end: float) -> None:
        """Encode and upload a piece that ended during the meeting (the shipper's job)."""
        shipping = self._shipping
        assert shipping is not None  # noqa: S101 - the shipper exists only with it
        # The encode adds its codecs' state to the agent beside the meeting on the bot VM:
        # hand the agent's free heap back before it and what the encoder freed after it,
        # rather than at the next tidy (issue 19: the tree peaked at each piece's end), with
        # the guard's own relief.
        await asyncio.to_thread(trim_heap)
        try:
            await self._encode_piece(
                piece,
                end,
                shipping.uploader,
                shipping.events(),
                shipping.control_plane_url,
                shipping.bot_id,
            )
        finally:
            await asyncio.to_thread(shutil.rmtree, piece.dir, True)
            await asyncio.to_thread(trim_heap)

    async def _encode_and_upload(
        self,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
    ) -> ArtifactEvent | None:
        assert self.started_at is not None and self.stopped_at is not None  # noqa: S101 - checked by finish
        if self._screen is not None:
            return await self._finish_screen_capture(
                self._screen, uploader, events, control_plane_url, bot_id
            )
        return await self._encode_piece(
            self._piece, self.stopped_at, uploader, events, control_plane_url, bot_id
        )

    async def _encode_piece(
        self,
        piece: Piece,
        end: float,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
    ) -> ArtifactEvent:
        """Encode ``piece`` (its start to ``end``), upload it and report it."""
        artifact_id = str(uuid.uuid4())
        tracks: list[TrackAudio] = await piece.tracks.close()
        frames = tuple(piece.frames)
        await asyncio.to_thread(piece.dir.mkdir, parents=True, exist_ok=True)
        job = EncodeJob(
            tracks=tuple(tracks),
            frames=frames,
            started_at=piece.started_at,
            duration_s=max(end - piece.started_at, 0.1),
            fmt=self._format,
            output=piece.dir / f"{artifact_id}.{self._format.value}",
            fps=self._fps,
        )
        duration = await encode(job)
        return await self._report(
            _Finished(job.output, duration, piece.started_at, with_video=bool(frames)),
            uploader,
            events,
            control_plane_url,
            bot_id,
            artifact_id,
        )

    async def _finish_screen_capture(
        self,
        screen: ScreenCapture,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
    ) -> ArtifactEvent | None:
        """The screen recording's last (or only) file, after the pieces before it went.

        Raises:
            EncodeError: The capture failed or left no file, or ffmpeg/ffprobe failed.
        """
        if screen.started_at is None or screen.error is not None:
            raise EncodeError(screen.error or "the screen recording never started")
        if self._screen_shipper is None:
            return await self._finish_screen(
                screen, screen.path, 0.0, uploader, events, control_plane_url, bot_id
            )
        last = await self._queue_screen_pieces(last_too=True)
        await self._screen_shipper.close()  # the pieces before it, in order
        if last is None:
            raise EncodeError("the screen recording left no file")
        if last.index > 0 and self.stopped_at is not None:
            # Stopped right at a cut: the last piece holds next to nothing.
            if self.stopped_at - (screen.started_at + last.start_s) < MIN_PIECE_S:
                return None
        return await self._finish_screen(
            screen, last.path, last.start_s, uploader, events, control_plane_url, bot_id
        )

    async def _ship_screen_piece(self, piece: ScreenPiece, end: float) -> None:
        """Finish and upload a screen piece ffmpeg closed during the meeting (the shipper's)."""
        shipping, screen = self._shipping, self._screen
        assert shipping is not None and screen is not None  # noqa: S101 - pieces need both
        del end  # the piece knows its span
        try:
            await self._finish_screen(
                screen,
                piece.path,
                piece.start_s,
                shipping.uploader,
                shipping.events(),
                shipping.control_plane_url,
                shipping.bot_id,
            )
        finally:
            await asyncio.to_thread(piece.path.unlink, True)

    async def _finish_screen(
        self,
        screen: ScreenCapture,
        capture: Path,
        offset_s: float,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
    ) -> ArtifactEvent:
        """Rewrap one screen capture file into the requested format, upload and report it.

        Args:
            screen: The capture.
            capture: Its file (the whole capture, or one piece).
            offset_s: Where that file begins, seconds from the capture's start.
            uploader: Where the file goes.
            events: Where its ``artifact`` event goes.
            control_plane_url: Asked for an upload slot; None keeps it local.
            bot_id: The bot's id.

        Raises:
            EncodeError: ffmpeg or ffprobe are missing or failed.
        """
        ffmpeg, ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")
        if ffmpeg is None or ffprobe is None:
            raise EncodeError("ffmpeg and ffprobe are needed to finish a recording")
        assert screen.started_at is not None  # noqa: S101 - only finished once started
        artifact_id = str(uuid.uuid4())
        output = self._dir / f"{artifact_id}.{self._format.value}"
        # A piece shipped mid-meeting is finished before stop() read the log: read it now.
        delay = screen.audio_delay_s or await asyncio.to_thread(screen.audio_delay)
        try:
            await run_ffmpeg(ffmpeg, finalize_args(capture, self._format, output, delay))
            duration = await probe_duration(ffprobe, output)
            return await self._report(
                _Finished(
                    output, duration, screen.started_at + offset_s, with_video=True, screen=True
                ),
                uploader,
                events,
                control_plane_url,
                bot_id,
                artifact_id,
            )
        finally:
            await asyncio.to_thread(output.unlink, True)

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


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, making its folder first (a new piece's). Blocking."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
