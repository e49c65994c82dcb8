"""The recording of the bot's own screen, from its ffmpeg capture to uploaded files.

On the bot's display runtime (a :class:`~agent.recording.screen.ScreenSource`: Xvfb and
PulseAudio, the VM's or ``--display``'s) a recording with ``video`` is the screen:
:class:`~agent.recording.screen.ScreenCapture` runs ffmpeg x11grab with the meeting's 48 kHz
sound, and nothing of the page is tapped or screenshotted. :class:`ScreenRecording` starts
that capture, and at the end rewraps its file into the requested format
(:func:`~agent.recording.screen.finalize_args`) and publishes it
(:mod:`agent.recording.publish`). With pieces, ffmpeg itself cuts the capture every
``piece_seconds``; each piece it closes is rewrapped and uploaded while the meeting goes on
(polled every ``SCREEN_PIECE_POLL_S``), and its scratch files removed.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from pathlib import Path

from agent.contracts.bot_config import RecordingFormat
from agent.contracts.link import ArtifactEvent
from agent.recording.encode import probe_duration, run_ffmpeg
from agent.recording.job import EncodeError
from agent.recording.page import MIN_PIECE_S
from agent.recording.pieces import PieceShipper, Shipping
from agent.recording.publish import Destination, RecordingFile, publish
from agent.recording.screen import ScreenCapture, ScreenPiece, ScreenSource, finalize_args
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

SCREEN_PIECE_POLL_S = 2.0
"""How often the screen capture's list of closed pieces is read."""


class ScreenRecording:
    """Records the bot's screen and turns the capture (or its pieces) into files.

    Args:
        source: The bot's display and sound server.
        fmt: The recording's format.
        work_dir: Scratch folder of the capture and its finished files (the caller removes it).
        piece_seconds: Length of each piece in seconds; 0: one file at the end.
        shipping: Where pieces go during the meeting (required for pieces).
    """

    def __init__(
        self,
        source: ScreenSource,
        fmt: RecordingFormat,
        work_dir: Path,
        *,
        piece_seconds: float,
        shipping: Shipping | None,
    ) -> None:
        self._capture = ScreenCapture(
            source, fmt, work_dir / "screen.mkv", piece_seconds=piece_seconds
        )
        self._format = fmt
        self._dir = work_dir
        self._piece_s = piece_seconds
        self._shipping = shipping
        self._shipper: PieceShipper[ScreenPiece] | None = None
        self._queued = 0
        self._watch: asyncio.Task[None] | None = None
        self._start: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the capture (in a task of its own) and, with pieces, their watch."""
        self._start = asyncio.create_task(self._start_capture(), name="recording-screen")
        if self._piece_s > 0:
            self._shipper = PieceShipper(self._ship_piece)
            self._watch = asyncio.create_task(self._watch_pieces(), name="recording-screen-pieces")
        log.info("recording started", extra={"format": self._format.value, "screen": True})

    async def stop(self) -> None:
        """Stop the capture (ffmpeg finishes its file) and the watch of its pieces."""
        if self._start is not None:
            await self._start
        await self._capture.stop()
        await cancel_and_wait(self._watch)

    async def finish(self, stopped_at: float, to: Destination) -> ArtifactEvent | None:
        """The screen recording's last (or only) file, after the pieces before it went.

        Args:
            stopped_at: Epoch seconds the capture stopped.
            to: Where the file goes.

        Returns:
            Its ``artifact`` event; None when the last piece holds next to nothing.

        Raises:
            EncodeError: The capture failed or left no file, or ffmpeg/ffprobe failed.
            CommandError: The upload failed.
            OSError: A file could not be read.
        """
        screen = self._capture
        if screen.started_at is None or screen.error is not None:
            raise EncodeError(screen.error or "the screen recording never started")
        if self._shipper is None:
            return await self._finish_file(screen.path, 0.0, to)
        last = await self._queue_pieces(last_too=True)
        await self._shipper.close()  # the pieces before it, in order
        if last is None:
            raise EncodeError("the screen recording left no file")
        # Stopped right at a cut: the last piece holds next to nothing.
        if last.index > 0 and stopped_at - (screen.started_at + last.start_s) < MIN_PIECE_S:
            return None
        return await self._finish_file(last.path, last.start_s, to)

    async def close(self) -> None:
        """Ship the pieces still queued (also when the capture failed)."""
        if self._shipper is not None:
            await self._shipper.close()

    async def _start_capture(self) -> None:
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg is None:
            log.warning("recording failed", extra={"error": "ffmpeg is not installed"})
            return
        await asyncio.to_thread(self._dir.mkdir, parents=True, exist_ok=True)
        try:
            await self._capture.start(ffmpeg)
        except OSError as exc:
            log.warning("recording failed", extra={"error": type(exc).__name__, "detail": str(exc)})

    async def _watch_pieces(self) -> None:
        """Hand each screen piece ffmpeg closes to the shipper, in order (until cancelled)."""
        while True:
            await asyncio.sleep(SCREEN_PIECE_POLL_S)
            await self._queue_pieces(last_too=False)

    async def _queue_pieces(self, *, last_too: bool) -> ScreenPiece | None:
        """Queue the closed screen pieces not queued yet; return the one left for the end.

        With ``last_too`` false every closed piece goes. With it true (the capture stopped)
        the last piece on disk, closed or cut short by a crash, is returned instead of queued.
        """
        screen, shipper = self._capture, self._shipper
        assert shipper is not None  # noqa: S101 - called with pieces only
        closed = await asyncio.to_thread(screen.closed_pieces)
        pieces = list(closed)
        if last_too:
            # A piece ffmpeg could not close (it died) is on disk but not in the list.
            for path in (await asyncio.to_thread(screen.written_pieces))[len(closed) :]:
                start = pieces[-1].end_s if pieces else 0.0
                pieces.append(ScreenPiece(len(pieces), path, start, start))
        last = pieces.pop() if last_too and pieces else None
        for piece in pieces[self._queued :]:
            shipper.put(piece, piece.end_s)
        self._queued = max(self._queued, len(pieces))
        return last

    async def _ship_piece(self, piece: ScreenPiece, end: float) -> None:
        """Finish and upload a screen piece ffmpeg closed during the meeting (the shipper's)."""
        shipping = self._shipping
        assert shipping is not None  # noqa: S101 - pieces need it
        del end  # the piece knows its span
        try:
            await self._finish_file(piece.path, piece.start_s, shipping.destination())
        finally:
            await asyncio.to_thread(piece.path.unlink, True)

    async def _finish_file(self, capture: Path, offset_s: float, to: Destination) -> ArtifactEvent:
        """Rewrap one capture file into the requested format, upload and report it.

        Args:
            capture: The file (the whole capture, or one piece).
            offset_s: Where that file begins, seconds from the capture's start.
            to: Where it goes.

        Raises:
            EncodeError: ffmpeg or ffprobe are missing or failed.
        """
        screen = self._capture
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
            return await publish(
                RecordingFile(
                    output, duration, screen.started_at + offset_s, with_video=True, screen=True
                ),
                self._format,
                artifact_id,
                to,
            )
        finally:
            await asyncio.to_thread(output.unlink, True)
