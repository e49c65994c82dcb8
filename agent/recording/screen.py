"""A video recording of the bot's own screen: ffmpeg x11grab plus the meeting's 48 kHz sound.

On the bot's display runtime (images/runtime/: Xvfb and a private PulseAudio whose ``meeting``
sink Chromium plays the meeting into) one ffmpeg runs while the bot is ``active``:

- video: ``x11grab`` of the whole display (the browser window covers it), the mouse pointer
  left out, at a constant ``fps`` (a frame the grab misses under load is repeated, never
  skipped, so the file's frame count is ``fps`` × its length);
- audio: ``-f pulse`` from ``meeting.monitor``, 48 kHz stereo: everything the meeting played,
  full band (the in-page capture's 16 kHz mono is for the transcriber).

Both inputs are stamped with the wall clock, but ffmpeg starts each input's timeline at zero,
and the sound server's input opens up to about a second after the screen's (measured here:
0.6-1.4 s). The capture therefore logs each input's start (``-v info``) and
:func:`input_starts` reads them back, so :func:`finalize_args` can delay the sound by exactly
that gap: picture and sound stay in sync.

It writes Matroska while it runs: a file cut short by a crash or a kill stays readable up to
its last cluster. The picture is H.264 at x264's cheapest settings (``ultrafast``,
``zerolatency``: no lookahead, so nothing is held back when it stops), the one encoder that
keeps up at 1280x720 on a loaded machine — ``bench/screen_recording.py`` at load 15 on 2 cores:
about 11 % of a core with every frame written, where ``veryfast`` took 21 % and fell behind,
and VP8 realtime wrote a quarter of the frames. :func:`finalize_args` then turns the capture
into the format asked for:

| format | capture | finalize |
|---|---|---|
| mp4 | H.264 (yuv420p) + AAC 128 kb/s | rewrapped (``-c copy``), fast-start |
| webm | H.264 + Opus 96 kb/s | picture re-encoded to VP8 (libvpx realtime), sound copied |
| mp3 | MP3 256 kb/s, no picture | rewrapped |

With ``piece_seconds`` (a long meeting; issue 19) ffmpeg's segment muxer writes the capture
as consecutive Matroska pieces of that many seconds (``screen-0000.mkv``, …; a key frame is
forced at each cut, timestamps restart at zero in each) and lists each one in
``screen-pieces.csv`` as it closes, so every closed piece can be finished and uploaded while
the meeting goes on (:meth:`ScreenCapture.closed_pieces`).

ffmpeg is stopped with ``q`` on its stdin (it finishes the file); SIGINT after
:data:`STOP_WAIT_S`, SIGKILL after twice that. It runs in a session of its own, so a Ctrl-C in
the agent's terminal does not cut the recording before the bot has left.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import logging
import os
import re
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.contracts.bot_config import RecordingFormat

log = logging.getLogger(__name__)

STOP_WAIT_S = 10.0
"""How long ffmpeg may take to finish the file after ``q`` (then SIGINT, then SIGKILL)."""
MONITOR = "meeting.monitor"
"""The PulseAudio source a screen recording (and the silence check) hears."""
AUDIO_RATE = 48_000


@dataclass(frozen=True, slots=True)
class ScreenSource:
    """Where the bot's screen and sound are.

    Attributes:
        display: The X display, e.g. ``:99``.
        pulse_server: The PulseAudio server, ``unix:<dir>/pulse/native``.
        width: Screen width in pixels (the grab's size; even).
        height: Screen height in pixels (even).
        fps: Frames per second of the recording.
    """

    display: str
    pulse_server: str
    width: int = 1280
    height: int = 720
    fps: int = 15


@dataclass(frozen=True, slots=True)
class ScreenPiece:
    """One closed piece of a screen capture in pieces.

    Attributes:
        index: 0 for the first piece.
        path: Its Matroska file.
        start_s: Where it begins, seconds from the capture's start.
        end_s: Where it ends, seconds from the capture's start.
    """

    index: int
    path: Path
    start_s: float
    end_s: float


def piece_files(output: Path) -> tuple[Path, Path]:
    """``(file name pattern, list file)`` of a capture into ``output`` in pieces."""
    return (
        output.with_name(f"{output.stem}-%04d.mkv"),
        output.with_name(f"{output.stem}-pieces.csv"),
    )


def capture_args(
    source: ScreenSource, fmt: RecordingFormat, output: Path, piece_seconds: float = 0.0
) -> list[str]:
    """The ffmpeg arguments (without the program) to record ``source`` into ``output``.

    ``output`` is Matroska with the codecs of ``fmt`` (module docstring); mp3 records sound
    only. With ``piece_seconds`` > 0 the capture goes into pieces of that many seconds named
    after ``output`` (:func:`piece_files`) instead of ``output`` itself.
    """
    # Info level for the inputs' start times (input_starts); -nostats keeps the log small.
    args = ["-hide_banner", "-v", "info", "-nostats", "-y"]
    video = fmt is not RecordingFormat.MP3
    if video:
        # A short queue of raw frames (3.5 MB each at 1280x720): an encoder that falls behind
        # makes the grab wait (the constant rate repeats frames) instead of buffering
        # hundreds of megabytes that a stop would then drop.
        args += ["-thread_queue_size", "16", "-f", "x11grab", "-draw_mouse", "0"]
        args += ["-framerate", str(source.fps), "-video_size", f"{source.width}x{source.height}"]
        args += ["-i", f"{source.display}.0+0,0"]
    args += ["-thread_queue_size", "1024", "-f", "pulse", "-sample_rate", str(AUDIO_RATE)]
    args += ["-channels", "2", "-server", source.pulse_server, "-name", "meetbot-recorder"]
    args += ["-i", MONITOR]
    audio_in = 1 if video else 0
    if video:
        args += ["-map", "0:v", "-map", f"{audio_in}:a"]
        # A constant rate: frames the grab missed are repeated, not left out.
        args += ["-fps_mode", "cfr", "-r", str(source.fps)]
    else:
        args += ["-map", f"{audio_in}:a"]
    if video:
        args += ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency"]
        args += ["-crf", "26", "-pix_fmt", "yuv420p", "-g", str(source.fps * 2)]
    if fmt is RecordingFormat.MP4:
        args += ["-c:a", "aac", "-b:a", "128k"]
    elif fmt is RecordingFormat.WEBM:
        args += ["-c:a", "libopus", "-b:a", "96k"]
    else:
        args += ["-c:a", "libmp3lame", "-b:a", "256k"]
    args += ["-ar", str(AUDIO_RATE)]
    if piece_seconds <= 0:
        return [*args, "-f", "matroska", str(output)]
    pattern, listing = piece_files(output)
    if video:
        # A cut needs a key frame: force one at each piece's start rather than wait for the
        # next of the regular ones.
        args += ["-force_key_frames", f"expr:gte(t,n_forced*{piece_seconds:g})"]
    args += ["-f", "segment", "-segment_format", "matroska"]
    args += ["-segment_time", f"{piece_seconds:g}", "-reset_timestamps", "1"]
    args += ["-segment_list", str(listing), "-segment_list_type", "csv"]
    return [*args, str(pattern)]


_INPUT = re.compile(r"^Input #(\d+), ")
_START = re.compile(r"^\s+Duration: .*, start: (-?[0-9.]+)")


def input_starts(log_text: str) -> dict[int, float]:
    """Each input's start time (wall-clock seconds) from an ffmpeg info-level log.

    Returns:
        ``{input index: start}`` for the inputs whose start was logged.
    """
    starts: dict[int, float] = {}
    current: int | None = None
    for line in log_text.splitlines():
        opened = _INPUT.match(line)
        if opened:
            current = int(opened.group(1))
            continue
        started = _START.match(line)
        if started and current is not None and current not in starts:
            starts[current] = float(started.group(1))
    return starts


def finalize_args(
    capture: Path, fmt: RecordingFormat, output: Path, audio_delay_s: float = 0.0
) -> list[str]:
    """The ffmpeg arguments turning the capture into ``fmt`` (module docstring's table).

    Args:
        capture: The Matroska capture.
        fmt: The format asked for.
        output: The file to write.
        audio_delay_s: How much later than the picture the sound began (negative: earlier);
            the later stream is shifted by it. Ignored for mp3 (no picture).
    """
    args = ["-nostdin", "-hide_banner", "-v", "error", "-y"]
    if fmt is RecordingFormat.MP3 or abs(audio_delay_s) < 0.001:
        args += ["-i", str(capture), "-map", "0"]
    else:
        # The capture twice: the picture from one, the sound (shifted) from the other.
        video_offset, audio_offset = max(0.0, -audio_delay_s), max(0.0, audio_delay_s)
        args += ["-itsoffset", f"{video_offset:.3f}", "-i", str(capture)]
        args += ["-itsoffset", f"{audio_offset:.3f}", "-i", str(capture)]
        args += ["-map", "0:v", "-map", "1:a"]
    if fmt is RecordingFormat.WEBM:
        args += ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "800k"]
        args += ["-threads", "2", "-c:a", "copy", "-f", "webm"]
        return [*args, str(output)]
    args += ["-c", "copy"]
    if fmt is RecordingFormat.MP4:
        args += ["-movflags", "+faststart", "-f", "mp4"]
    else:
        args += ["-f", "mp3"]
    return [*args, str(output)]


def pulse_environment(pulse_server: str, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with ``PULSE_SERVER`` set (for PulseAudio clients: ffmpeg, parec)."""
    return {**environ, "PULSE_SERVER": pulse_server}


class ScreenCapture:
    """One ffmpeg recording the screen and the meeting's sound into a Matroska file.

    Args:
        source: The display and sound server.
        fmt: The recording format asked for (the capture's codecs).
        path: The Matroska file to write; its folder must exist.
    """

    def __init__(
        self, source: ScreenSource, fmt: RecordingFormat, path: Path, piece_seconds: float = 0.0
    ) -> None:
        self.source = source
        self.format = fmt
        self.path = path
        self.piece_seconds = piece_seconds
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.error: str | None = None
        self.audio_delay_s = 0.0
        self._process: asyncio.subprocess.Process | None = None

    async def start(self, ffmpeg: str) -> None:
        """Start ffmpeg (returns once it was spawned).

        Raises:
            OSError: ffmpeg could not be run.
        """
        args = capture_args(self.source, self.format, self.path, self.piece_seconds)
        with self.path.with_suffix(".log").open("ab") as err:
            self._process = await asyncio.create_subprocess_exec(
                ffmpeg,
                *args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=err,
                env=pulse_environment(self.source.pulse_server, os.environ),
                start_new_session=True,
            )
        self.started_at = time.time()
        log.info(
            "screen recording started",
            extra={"display": self.source.display, "fps": self.source.fps, "format": self.format},
        )

    def closed_pieces(self) -> list[ScreenPiece]:
        """The pieces ffmpeg has closed so far, in order (blocking: reads the list file).

        Empty when the capture is not in pieces or none has closed yet.
        """
        _, listing = piece_files(self.path)
        try:
            text = listing.read_text()
        except OSError:
            return []
        pieces: list[ScreenPiece] = []
        # One ``name,start,end`` row per closed piece (ffmpeg's csv segment list); a row
        # without its newline is still being written.
        complete = text[: text.rfind("\n") + 1]
        for row in csv.reader(io.StringIO(complete)):
            if len(row) != 3:
                continue  # a row still being written
            try:
                start, end = float(row[1]), float(row[2])
            except ValueError:
                continue
            pieces.append(ScreenPiece(len(pieces), self.path.with_name(row[0]), start, end))
        return pieces

    def written_pieces(self) -> list[Path]:
        """Every piece file on disk, in order, closed or not (blocking)."""
        return sorted(self.path.parent.glob(f"{self.path.stem}-[0-9]*.mkv"))

    def audio_delay(self) -> float:
        """How much later than the picture the sound began, from ffmpeg's log (blocking).

        0 until both inputs' starts are logged, and for mp3 (no picture).
        """
        return self._delay_in(_read(self.path.with_suffix(".log")))

    def _delay_in(self, log_text: str) -> float:
        """:meth:`audio_delay` from the log's text already read."""
        starts = input_starts(log_text)
        if self.format is RecordingFormat.MP3 or 0 not in starts or 1 not in starts:
            return 0.0
        return round(starts[1] - starts[0], 3)

    @property
    def pid(self) -> int | None:
        """The process id of ffmpeg once started (benchmarks measure its CPU)."""
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        """Whether ffmpeg is still recording."""
        return self._process is not None and self._process.returncode is None

    async def stop(self) -> None:
        """Ask ffmpeg to finish the file (``q``; SIGINT, SIGKILL if it does not) and reap it."""
        process = self._process
        if process is None:
            return
        if self.stopped_at is None:
            self.stopped_at = time.time()
        if process.returncode is None and process.stdin is not None:
            with contextlib.suppress(ConnectionError, RuntimeError):
                process.stdin.write(b"q")
                await process.stdin.drain()
                process.stdin.close()
        for signum in (signal.SIGINT, signal.SIGKILL):
            try:
                await asyncio.wait_for(process.wait(), STOP_WAIT_S)
                break
            except TimeoutError:
                log.warning("screen recording did not stop; signalling", extra={"signal": signum})
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signum)
        await process.wait()
        text = await asyncio.to_thread(_read, self.path.with_suffix(".log"))
        # ffmpeg exits 0 after ``q``, 255 when stopped by a signal. An ffmpeg that died
        # mid-meeting (its sound server gone) still leaves a readable Matroska file: that part
        # of the meeting is kept.
        written = [self.path] if self.piece_seconds <= 0 else self.written_pieces()
        size = sum(path.stat().st_size for path in written if path.exists())
        detail = f"ffmpeg exited {process.returncode}: {text.strip()[-400:]}"
        if size == 0:
            self.error = detail
            log.warning("screen recording failed", extra={"detail": detail})
            return
        if process.returncode not in (0, 255):
            log.warning(
                "screen recording ended early; keeping what it wrote", extra={"detail": detail}
            )
        self.audio_delay_s = self._delay_in(text)
        log.info(
            "screen recording stopped",
            extra={
                "returncode": process.returncode,
                "size_bytes": size,
                "audio_delay_s": self.audio_delay_s,
            },
        )


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
