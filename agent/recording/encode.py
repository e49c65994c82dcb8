"""Turning the recorded tracks (and view frames) into one file with ffmpeg.

Inputs are what :class:`~agent.recording.recorder.MeetingRecorder` leaves on disk: per-track
16 kHz mono WAVs (``agent.transcribe.audio_io.TrackRecorder``) with their start times, and
optionally timestamped JPEG frames of the bot's view. The audio of all tracks is mixed
(``adelay`` to each track's offset, ``amix`` without level normalisation, so a lone speaker is
not attenuated) over a silent base exactly as long as the recording.

Formats (docs/api.md Part 1 ``recording_format``):

| format | video | audio | content type |
|---|---|---|---|
| mp4 | H.264 (libx264 veryfast), a small black still without video capture | AAC | video/mp4 |
| mp3 | none | MP3 (libmp3lame) | audio/mpeg |
| webm | VP8 (libvpx, realtime) with video capture | Opus | video/webm / audio/webm |

mp4 files are fast-start (``-movflags +faststart``: the index is at the front, so players can
start before the download ends).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from agent.audio import SAMPLE_RATE
from agent.contracts.bot_config import RecordingFormat
from agent.transcribe.audio_io import TrackAudio

log = logging.getLogger(__name__)

BLACK_FRAME = "color=c=black:s=160x90:r=1"
"""The still video of an audio-only mp4 (a valid container needs a video track).

Small because its size is all it costs: players scale it to their frame, and at 640x360 x264's
frame buffers were 18 MB of a piece encode's 78 MB PSS (60 MB at 160x90; bench.piece_tracks).
"""


class EncodeError(RuntimeError):
    """ffmpeg is missing or failed; the message carries the tail of its stderr."""


@dataclass(frozen=True, slots=True)
class ViewFrame:
    """One JPEG of the bot's view.

    Attributes:
        path: The JPEG file.
        at: Epoch seconds when it was captured.
    """

    path: Path
    at: float


@dataclass(frozen=True, slots=True)
class EncodeJob:
    """What to encode.

    Attributes:
        tracks: Per-track WAVs with their start times (epoch seconds).
        frames: View frames in capture order (empty: audio-only capture).
        started_at: Epoch seconds where the recording begins.
        duration_s: Length of the recording in seconds.
        fmt: Output format.
        output: Path of the file to write.
        fps: Output frame rate with view frames (a view repeats until the next one); the
            capture rate rounded up is enough, more only costs encoding time.
    """

    tracks: tuple[TrackAudio, ...]
    frames: tuple[ViewFrame, ...]
    started_at: float
    duration_s: float
    fmt: RecordingFormat
    output: Path
    fps: int = 1


def content_type(fmt: RecordingFormat, with_video: bool) -> str:
    """MIME type of a recording in ``fmt`` (mp4 always has a video track)."""
    if fmt is RecordingFormat.MP3:
        return "audio/mpeg"
    if fmt is RecordingFormat.WEBM:
        return "video/webm" if with_video else "audio/webm"
    return "video/mp4"


def write_concat_list(job: EncodeJob, path: Path) -> None:
    """Write an ffconcat list showing each frame until the next one. Blocking.

    The first frame also covers the start of the recording, the last one its end, so the
    video is as long as the audio.
    """
    end = job.started_at + job.duration_s
    lines = ["ffconcat version 1.0"]
    for index, frame in enumerate(job.frames):
        until = job.frames[index + 1].at if index + 1 < len(job.frames) else end
        since = job.started_at if index == 0 else frame.at
        lines += [f"file '{frame.path.name}'", f"duration {max(until - since, 0.001):.3f}"]
    # The concat demuxer ignores the last entry's duration unless the file is listed again.
    lines.append(f"file '{job.frames[-1].path.name}'")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def ffmpeg_args(job: EncodeJob, concat_list: Path | None) -> list[str]:
    """The ffmpeg argument list (without the program) for ``job``.

    Args:
        job: What to encode.
        concat_list: The ffconcat list of the view frames (see :func:`write_concat_list`);
            None for audio-only capture.
    """
    duration = f"{job.duration_s:.3f}"
    args = ["-nostdin", "-hide_banner", "-v", "error", "-y"]
    args += ["-f", "lavfi", "-t", duration, "-i", f"anullsrc=r={SAMPLE_RATE}:cl=mono"]
    for track in job.tracks:
        args += ["-i", str(track.path)]
    next_input = 1 + len(job.tracks)
    video_in: int | None = None
    wants_video = job.fmt is not RecordingFormat.MP3
    if wants_video and concat_list is not None:
        args += ["-f", "concat", "-safe", "0", "-i", str(concat_list)]
        video_in = next_input
    elif job.fmt is RecordingFormat.MP4:
        args += ["-f", "lavfi", "-t", duration, "-i", BLACK_FRAME]
        video_in = next_input

    graph: list[str] = []
    mixed = ["[0:a]"]
    for index, track in enumerate(job.tracks, start=1):
        delay_ms = max(0, round((track.start_time - job.started_at) * 1000))
        graph.append(f"[{index}:a]adelay=delays={delay_ms}:all=1[t{index}]")
        mixed.append(f"[t{index}]")
    graph.append(f"{''.join(mixed)}amix=inputs={len(mixed)}:duration=first:normalize=0[aout]")
    if video_in is not None:
        scale = "scale=trunc(iw/2)*2:trunc(ih/2)*2,format=yuv420p"
        rate = f",fps={max(job.fps, 1)}" if concat_list is not None else ""
        graph.append(f"[{video_in}:v]{scale}{rate}[vout]")
    args += ["-filter_complex", ";".join(graph), "-map", "[aout]"]
    if video_in is not None:
        args += ["-map", "[vout]"]
    # Two encoder threads: the last piece is encoded after the browser has closed; a piece cut
    # mid-meeting shares the machine with the meeting for its few seconds (bench.piece_tracks).
    args += ["-t", duration, "-threads", "2"]
    if job.fmt is RecordingFormat.MP4:
        # No lookahead: the picture is a still or views at about 1 per second, and x264's
        # lookahead frames were 9 MB of the piece encode's 87 MB (bench.piece_tracks).
        args += ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]
        args += ["-x264-params", "rc-lookahead=0:sync-lookahead=0"]
        args += ["-c:a", "aac", "-b:a", "96k", "-movflags", "+faststart", "-f", "mp4"]
    elif job.fmt is RecordingFormat.MP3:
        args += ["-c:a", "libmp3lame", "-b:a", "64k", "-f", "mp3"]
    else:
        if video_in is not None:
            args += ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "400k"]
        args += ["-c:a", "libopus", "-b:a", "48k", "-f", "webm"]
    return [*args, str(job.output)]


async def run_ffmpeg(program: str, args: list[str], cwd: Path | None = None) -> bytes:
    """Run ``program`` with ``args`` to its end; returns its stdout.

    Raises:
        EncodeError: It exited non-zero (the message has the tail of its stderr).
    """
    process = await asyncio.create_subprocess_exec(
        program,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
    )
    try:
        out, err = await process.communicate()
    except asyncio.CancelledError:
        # The owner gave up: do not leave ffmpeg running behind it.
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise
    if process.returncode != 0:
        tail = err.decode(errors="replace").strip()[-400:]
        raise EncodeError(f"{Path(program).name} exited {process.returncode}: {tail}")
    return out


async def encode(job: EncodeJob) -> float:
    """Encode ``job`` with ffmpeg in a subprocess; returns the file's duration in seconds.

    Raises:
        EncodeError: ffmpeg or ffprobe is missing, or either failed.
    """
    ffmpeg, ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")
    if ffmpeg is None or ffprobe is None:
        raise EncodeError("ffmpeg and ffprobe are needed to encode a recording")
    concat_list: Path | None = None
    if job.frames and job.fmt is not RecordingFormat.MP3:
        concat_list = job.frames[0].path.parent / "frames.ffconcat"
        await asyncio.to_thread(write_concat_list, job, concat_list)
    args = ffmpeg_args(job, concat_list)
    log.info(
        "encoding recording",
        extra={
            "format": job.fmt.value,
            "tracks": len(job.tracks),
            "frames": len(job.frames),
            "duration_s": round(job.duration_s, 2),
        },
    )
    await run_ffmpeg(ffmpeg, args)
    return await probe_duration(ffprobe, job.output)


async def probe_duration(ffprobe: str, path: Path) -> float:
    """Duration of a media file in seconds as ffprobe reports it.

    Raises:
        EncodeError: ffprobe failed or printed no number.
    """
    out = await run_ffmpeg(
        ffprobe,
        ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
    )
    try:
        return round(float(out.decode().strip()), 3)
    except ValueError as exc:
        raise EncodeError("ffprobe gave no duration") from exc
