"""Turning the recorded tracks (and view frames) into one file.

Inputs are what :class:`~agent.recording.page.PageRecording` leaves on disk: per-track
16 kHz mono WAVs (``agent.transcribe.audio_io.TrackRecorder``) with their start times, and
optionally timestamped JPEG frames of the bot's view. The audio of all tracks is mixed (each
track at its offset, summed without level normalisation, so a lone speaker is not attenuated)
over a silent base exactly as long as the recording.

:func:`encode` picks the encoder: a recording without a picture (no view frames, or mp3) is
encoded in the agent's process (:mod:`agent.recording.audio_encode`: no ffmpeg child at every
piece's end); with view frames ffmpeg runs, concatenating the JPEGs (``adelay`` + ``amix`` for
the sound).

Formats (docs/api.md Part 1 ``recording_format``):

| format | video | audio | content type |
|---|---|---|---|
| mp4 | H.264 (libx264 veryfast), a small black still without video capture | AAC | video/mp4 |
| mp3 | none | MP3 (libmp3lame) | audio/mpeg |
| webm | VP8 (libvpx, realtime) with video capture | Opus | video/webm / audio/webm |

mp4 files are fast-start (``movflags +faststart``: the index is at the front, so players can
start before the download ends).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import replace
from pathlib import Path

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.bot_config import RecordingFormat
from agent.recording.audio_encode import encode_audio_only
from agent.recording.job import EncodeError, EncodeJob

log = logging.getLogger(__name__)


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


def ffmpeg_args(job: EncodeJob, concat_list: Path) -> list[str]:
    """The ffmpeg argument list (without the program) for ``job``, which has view frames.

    Args:
        job: What to encode (mp4 or webm: mp3 has no picture, see :func:`encode`).
        concat_list: The ffconcat list of the view frames (see :func:`write_concat_list`).
    """
    duration = f"{job.duration_s:.3f}"
    args = ["-nostdin", "-hide_banner", "-v", "error", "-y"]
    args += ["-f", "lavfi", "-t", duration, "-i", f"anullsrc=r={SAMPLE_RATE}:cl=mono"]
    for track in job.tracks:
        args += ["-i", str(track.path)]
    video_in = 1 + len(job.tracks)
    args += ["-f", "concat", "-safe", "0", "-i", str(concat_list)]

    graph: list[str] = []
    mixed = ["[0:a]"]
    for index, track in enumerate(job.tracks, start=1):
        delay_ms = max(0, round((track.start_time - job.started_at) * 1000))
        graph.append(f"[{index}:a]adelay=delays={delay_ms}:all=1[t{index}]")
        mixed.append(f"[t{index}]")
    graph.append(f"{''.join(mixed)}amix=inputs={len(mixed)}:duration=first:normalize=0[aout]")
    scale = "scale=trunc(iw/2)*2:trunc(ih/2)*2,format=yuv420p"
    graph.append(f"[{video_in}:v]{scale},fps={max(job.fps, 1)}[vout]")
    args += ["-filter_complex", ";".join(graph), "-map", "[aout]", "-map", "[vout]"]
    # Two encoder threads: the last piece is encoded after the browser has closed; a piece cut
    # mid-meeting shares the machine with the meeting for its few seconds (bench.piece_tracks).
    args += ["-t", duration, "-threads", "2"]
    if job.fmt is RecordingFormat.MP4:
        # No lookahead: the views change about once a second, and x264's lookahead frames
        # were 9 MB of a piece encode's 87 MB (bench.piece_tracks).
        args += ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]
        args += ["-x264-params", "rc-lookahead=0:sync-lookahead=0"]
        args += ["-c:a", "aac", "-b:a", "96k", "-movflags", "+faststart", "-f", "mp4"]
    else:
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
    """Encode ``job``; returns the file's duration in seconds as the file reports it.

    Without a picture (no view frames, or mp3) the encode runs in a worker thread of this
    process (:func:`~agent.recording.audio_encode.encode_audio_only`); with view frames,
    ffmpeg in a subprocess.

    Raises:
        EncodeError: A track is unreadable, an encoder failed, or ffmpeg/ffprobe (needed for
            view frames) are missing or failed.
    """
    with_picture = bool(job.frames) and job.fmt is not RecordingFormat.MP3
    log.info(
        "encoding recording",
        extra={
            "format": job.fmt.value,
            "tracks": len(job.tracks),
            "frames": len(job.frames) if with_picture else 0,
            "duration_s": round(job.duration_s, 2),
            "encoder": "ffmpeg" if with_picture else "in-process",
        },
    )
    if not with_picture:
        return await asyncio.to_thread(encode_audio_only, replace(job, frames=()))
    ffmpeg, ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")
    if ffmpeg is None or ffprobe is None:
        raise EncodeError("ffmpeg and ffprobe are needed to encode a recording with views")
    concat_list = job.frames[0].path.parent / "frames.ffconcat"
    await asyncio.to_thread(write_concat_list, job, concat_list)
    await run_ffmpeg(ffmpeg, ffmpeg_args(job, concat_list))
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
