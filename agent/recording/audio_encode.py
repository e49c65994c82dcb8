"""An audio-only recording piece encoded inside the agent's process, with PyAV.

Why not an ffmpeg child, as for views and screen captures (:mod:`agent.recording.encode`):
a piece ends every ``recording_piece_seconds`` during the meeting, and its encode joins the
bot's processes on a VM sized for them. Debian's ffmpeg maps its 215 shared libraries at
every start — 40 of the child's 59 MB PSS — and the ffprobe after it as many again
(bench.piece_tracks). PyAV's libraries are already mapped here (faster-whisper decodes with
them), so in-process the encode costs its codec state and one block of the mix.

The mix is what ffmpeg's ``adelay`` + ``amix=normalize=0`` over a silent base made: each
track's samples added at its offset from the piece's start (to the sample; a track that
began before it starts at 0), summed in float and clipped to full scale, exactly
``duration_s`` long. It is built ``BLOCK_S`` seconds at a time, reading each track's WAV at
its position, so memory holds a block, not the piece.

An mp4 carries a black still (a valid mp4 player expects a picture): ``STILL_SIZE``, one
frame a second, H.264 without lookahead or B-frames, its last frame cut to the audio's end.
"""

from __future__ import annotations

import contextlib
import math
import wave
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

import av
import numpy as np
import numpy.typing as npt
from av.audio.stream import AudioStream
from av.container import OutputContainer
from av.video.stream import VideoStream

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.bot_config import RecordingFormat
from agent.recording.job import EncodeError, EncodeJob

BLOCK_S: Final = 10.0
"""Seconds of the mix held at once."""
STILL_SIZE: Final = (160, 90)
"""Width and height of an audio-only mp4's black still (players scale it)."""

# (codec, bits per second, container) per format: docs/api.md's table, as encode.py's ffmpeg.
_AUDIO: Final = {
    RecordingFormat.MP4: ("aac", 96_000, "mp4"),
    RecordingFormat.MP3: ("libmp3lame", 64_000, "mp3"),
    RecordingFormat.WEBM: ("libopus", 48_000, "webm"),
}
_MS: Final = Fraction(1, 1000)
_FLOAT: Final = ("fltp", "flt")


@dataclass(slots=True)
class Source:
    """One track's WAV, open; where its first sample falls in the piece and its length.

    Attributes:
        wav: The open WAV.
        offset: Samples from the piece's start to the track's first sample.
        length: The track's samples.
    """

    wav: wave.Wave_read
    offset: int
    length: int


def open_sources(job: EncodeJob, stack: contextlib.ExitStack) -> list[Source]:
    """Open ``job``'s track WAVs on ``stack`` (closed with it), each with its offset.

    Raises:
        EncodeError: A track is unreadable or not a 16 kHz mono 16-bit WAV.
    """
    sources: list[Source] = []
    for track in job.tracks:
        try:
            wav = stack.enter_context(wave.open(str(track.path), "rb"))
        except (OSError, EOFError, wave.Error) as exc:
            raise EncodeError(f"track {track.path.name} unreadable: {exc}") from exc
        shape = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate())
        if shape != (1, 2, SAMPLE_RATE):
            raise EncodeError(
                f"track {track.path.name} is {shape} (channels, bytes, Hz), "
                f"not (1, 2, {SAMPLE_RATE})"
            )
        offset = max(0, round((track.start_time - job.started_at) * SAMPLE_RATE))
        sources.append(Source(wav, offset, wav.getnframes()))
    return sources


def mix_block(sources: list[Source], start: int, count: int) -> npt.NDArray[np.float32]:
    """Samples ``start`` to ``start + count`` of the mix, in [-1, 1] (float32, mono)."""
    out = np.zeros(count, dtype=np.float32)
    for source in sources:
        lo = max(start, source.offset)
        hi = min(start + count, source.offset + source.length)
        if hi <= lo:
            continue
        source.wav.setpos(lo - source.offset)
        pcm = np.frombuffer(source.wav.readframes(hi - lo), dtype="<i2")
        out[lo - start : lo - start + len(pcm)] += pcm.astype(np.float32) / 32768.0
    np.clip(out, -1.0, 1.0, out=out)
    return out


def _black_still() -> av.VideoFrame:
    width, height = STILL_SIZE
    rgb = np.zeros((height, width, 3), dtype=np.uint8)
    return av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")


def _add_audio(container: OutputContainer, fmt: RecordingFormat) -> AudioStream:
    codec, bit_rate, _ = _AUDIO[fmt]
    stream = container.add_stream(codec, rate=SAMPLE_RATE)
    if not isinstance(stream, AudioStream):  # the table names audio codecs only
        raise EncodeError(f"{codec} is not an audio codec")
    stream.layout = "mono"
    stream.bit_rate = bit_rate
    # The mix is float; each codec takes it planar (aac, mp3) or packed (opus), one channel.
    stream.format = next(f for f in stream.codec.audio_formats or () if f.name in _FLOAT)
    return stream


def _add_still(container: OutputContainer) -> VideoStream:
    stream = container.add_stream(
        "libx264",
        rate=1,
        # A still needs neither lookahead nor B-frames; without B-frames packets leave in
        # frame order, so each one's duration is known (the last is cut to the audio's end).
        options={"preset": "veryfast", "x264-params": "rc-lookahead=0:sync-lookahead=0:bframes=0"},
    )
    stream.width, stream.height = STILL_SIZE
    stream.pix_fmt = "yuv420p"
    stream.codec_context.time_base = _MS
    stream.thread_count = 1
    return stream


def _mux_still(
    container: OutputContainer, stream: VideoStream, frame: av.VideoFrame | None, total_ms: int
) -> None:
    for packet in stream.encode(frame):
        assert packet.pts is not None  # noqa: S101 - an encoder's packets carry their time
        packet.duration = min(1000, total_ms - packet.pts)
        container.mux(packet)


def encode_audio_only(job: EncodeJob) -> float:
    """Mix ``job``'s tracks and encode them to ``job.output``. Blocking: run in a thread.

    Args:
        job: An audio-only job (no ``frames``).

    Returns:
        The written file's duration in seconds, as its container reports it.

    Raises:
        EncodeError: A track is not a 16 kHz mono 16-bit WAV, or the encoder failed.
    """
    if job.frames:
        raise EncodeError("view frames are encoded by ffmpeg (agent.recording.encode)")
    total = max(1, round(job.duration_s * SAMPLE_RATE))
    total_ms = math.ceil(total * 1000 / SAMPLE_RATE)
    options = {"movflags": "+faststart"} if job.fmt is RecordingFormat.MP4 else {}
    try:
        with contextlib.ExitStack() as stack:
            sources = open_sources(job, stack)
            container = stack.enter_context(
                av.open(str(job.output), mode="w", format=_AUDIO[job.fmt][2], options=options)
            )
            audio = _add_audio(container, job.fmt)
            still = _add_still(container) if job.fmt is RecordingFormat.MP4 else None
            frame_size = audio.codec_context.frame_size or 1024
            block = frame_size * max(1, round(BLOCK_S * SAMPLE_RATE / frame_size))
            picture = _black_still()
            for start in range(0, total, block):
                mixed = mix_block(sources, start, min(block, total - start))
                if still is not None:  # the seconds this block starts, one frame each
                    first, end = math.ceil(start / SAMPLE_RATE), start + len(mixed)
                    for second in range(first, math.ceil(end / SAMPLE_RATE)):
                        picture.pts, picture.time_base = second * 1000, _MS
                        _mux_still(container, still, picture, total_ms)
                for at in range(0, len(mixed), frame_size):
                    chunk = mixed[at : at + frame_size]
                    frame = av.AudioFrame.from_ndarray(
                        chunk.reshape(1, -1), format=audio.format.name, layout="mono"
                    )
                    frame.sample_rate, frame.pts = SAMPLE_RATE, start + at
                    frame.time_base = Fraction(1, SAMPLE_RATE)
                    container.mux(audio.encode(frame))
            container.mux(audio.encode(None))
            if still is not None:
                _mux_still(container, still, None, total_ms)
    except (av.FFmpegError, EncodeError) as exc:
        job.output.unlink(missing_ok=True)  # nothing half-written is left to upload
        if isinstance(exc, EncodeError):
            raise
        raise EncodeError(f"encoding {job.output.name} failed: {exc}") from exc
    return written_duration(job)


def written_duration(job: EncodeJob) -> float:
    """The duration of ``job.output`` as its container reports it, in seconds.

    Raises:
        EncodeError: The file cannot be read or reports no duration.
    """
    try:
        with av.open(str(job.output)) as written:
            duration = written.duration
    except av.FFmpegError as exc:
        raise EncodeError(f"{job.output.name} unreadable after encoding: {exc}") from exc
    if duration is None:
        raise EncodeError(f"{job.output.name} reports no duration")
    return round(duration / av.time_base, 3)
