"""The meeting page's recording: its audio tracks and views to disk, then encoded files.

:class:`PageRecording` is the recording where the bot has no display runtime of its own (or no
``video`` is captured). While it runs it:

- taps :class:`~agent.capture.pcm.AudioCapture`: every remote track's 16 kHz frames go through
  a bounded queue (``QUEUE_FRAMES``) to :class:`~agent.transcribe.audio_io.TrackRecorder` (one
  WAV per track on disk; memory holds at most the queue and ten seconds per track);
- with ``video``, takes a JPEG of the page ``video_fps`` times a second, timestamped, written
  to disk (a view identical to the previous one is skipped);
- with ``piece_seconds`` and a :class:`~agent.recording.pieces.Shipping`, cuts the recording
  into pieces of that many seconds of the meeting (:mod:`agent.recording.pieces`), each
  encoded and uploaded as soon as it ends.

Its last (or only) piece is encoded (``agent.recording.encode``) and published
(:mod:`agent.recording.publish`) by :meth:`PageRecording.finish`.
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
from pathlib import Path

from playwright.async_api import Error as PlaywrightError

from agent.browser.session import BrowserSession
from agent.capture.audio import AudioFrame
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import RecordingFormat
from agent.contracts.link import ArtifactEvent
from agent.memory.relief import trim_heap
from agent.process.logs import LossReport
from agent.recording.encode import encode
from agent.recording.job import EncodeJob, ViewFrame
from agent.recording.pieces import Piece, PieceShipper, Shipping
from agent.recording.publish import Destination, RecordingFile, publish
from agent.transcribe.audio_io import TrackAudio
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

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


class PageRecording:
    """Records the page's audio (and views) in pieces and turns them into files.

    Args:
        capture: The bot's audio capture (tapped while recording).
        browser: The bot's browser (view frames).
        fmt: The recording's format.
        work_dir: Scratch folder of the pieces (the caller removes it).
        video: Whether view frames are taken.
        video_fps: View frames per second with video.
        jpeg_quality: JPEG quality of the view frames (10-100).
        piece_seconds: Length of each piece in seconds of the meeting; 0: one piece.
        shipping: Where pieces go during the meeting (required for pieces).
    """

    def __init__(
        self,
        capture: AudioCapture,
        browser: BrowserSession,
        fmt: RecordingFormat,
        work_dir: Path,
        *,
        video: bool,
        video_fps: float,
        jpeg_quality: int,
        piece_seconds: float,
        shipping: Shipping | None,
    ) -> None:
        self._capture = capture
        self._browser = browser
        self._format = fmt
        self._video = video
        self._dir = work_dir
        self._interval = 1.0 / video_fps
        self._fps = math.ceil(video_fps)
        self._quality = jpeg_quality
        self._queue: asyncio.Queue[AudioFrame] = asyncio.Queue(maxsize=QUEUE_FRAMES)
        self._piece_s = piece_seconds
        self._shipping = shipping
        self._piece = Piece(1, work_dir / "piece-0001", 0.0)
        self._shipper: PieceShipper[Piece] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._viewer: asyncio.Task[None] | None = None
        self.dropped = 0
        """Audio frames dropped because the disk writer lagged ``QUEUE_FRAMES`` behind."""
        self._losses = LossReport(log, "recording dropped audio frames the disk writer missed")

    def start(self, started_at: float) -> None:
        """Tap the audio and start the writer (and the view) from ``started_at`` (epoch s)."""
        self._piece = Piece(1, self._dir / "piece-0001", started_at)
        self._capture.taps.append(self._on_frame)
        if self._piece_s > 0 and self._shipping is not None:
            self._shipper = PieceShipper(self._ship_piece)
        self._writer = asyncio.create_task(self._write_audio(), name="recording-audio")
        if self._video:
            self._viewer = asyncio.create_task(self._watch(), name="recording-view")
        log.info("recording started", extra={"format": self._format.value, "video": self._video})

    async def stop(self, stopped_at: float) -> None:
        """Stop taking audio and views at ``stopped_at`` (epoch s); write what is queued."""
        with contextlib.suppress(ValueError):
            self._capture.taps.remove(self._on_frame)
        await cancel_and_wait(self._viewer)
        if self._writer is not None and not self._writer.done():
            await self._queue.join()
        await cancel_and_wait(self._writer)
        # Pieces that ended before the stop end here, whether or not audio came after them.
        while self._shipper is not None and stopped_at >= self._piece_end():
            self._rotate()
        if self.dropped:
            log.warning("recording dropped audio frames in all", extra={"dropped": self.dropped})

    async def finish(self, stopped_at: float, to: Destination) -> ArtifactEvent | None:
        """Ship the pieces that ended, then encode and publish the last one.

        Returns:
            Its ``artifact`` event; None when it is too short to keep (``MIN_PIECE_S``).

        Raises:
            EncodeError: The encoder failed.
            CommandError: The upload failed.
            OSError: A file could not be read or written.
        """
        if self._shipper is not None:
            await self._shipper.close()  # the pieces that ended before, in order
        if self._piece.index > 1 and stopped_at - self._piece.started_at < MIN_PIECE_S:
            return None  # stopped right at a piece's end: nothing after it
        return await self._encode_piece(self._piece, stopped_at, to)

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
            await self._encode_piece(piece, end, shipping.destination())
        finally:
            await asyncio.to_thread(shutil.rmtree, piece.dir, True)
            await asyncio.to_thread(trim_heap)

    async def _encode_piece(self, piece: Piece, end: float, to: Destination) -> ArtifactEvent:
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
        return await publish(
            RecordingFile(job.output, duration, piece.started_at, with_video=bool(frames)),
            self._format,
            artifact_id,
            to,
        )


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, making its folder first (a new piece's). Blocking."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
