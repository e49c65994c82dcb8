"""Recording encode benchmark: wall time and real-time factor of a recording's encode.

Builds a synthetic meeting of ``--minutes`` on disk the way the recorder leaves it: two tracks
of real speech (utterances from ``MEETBOT_SPEECH_DIR``, else from the speech packaged with
testmeeting, repeated along the meeting, each track
its own 16 kHz WAV) and, for the video rows, one 1280x720 JPEG view every ``--view-every``
seconds (alternating colours, so every frame is new). Then encodes each format with
:func:`agent.recording.encode.encode` (audio-only in-process, views with ffmpeg) and prints one
JSON line per format and capture:

``{"bench": "recording_encode", "format", "video", "meeting_s", "encode_s", "rtf",
"size_bytes", "bytes_per_s"}`` (``rtf`` = encode seconds / meeting seconds).

Usage: ``.venv/bin/python bench/recording.py [--minutes 2] [--view-every 1.0]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.bot_config import RecordingFormat
from agent.recording.encode import encode
from agent.recording.job import EncodeJob, ViewFrame
from agent.transcribe.audio_io import TrackAudio
from testmeeting.packaged_speech import corpus_or_packaged


def _speech(folder: Path, name: str) -> np.ndarray:
    with wave.open(str(folder / name), "rb") as wav:
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")


def _track(path: Path, clip: np.ndarray, seconds: float, offset_s: float) -> None:
    total = np.zeros(int(seconds * SAMPLE_RATE), dtype=np.int16)
    step = 2 * len(clip)  # speak half the time
    for start in range(int(offset_s * SAMPLE_RATE), len(total) - len(clip), step):
        total[start : start + len(clip)] = clip
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(total.astype("<i2").tobytes())


def _views(folder: Path, seconds: float, every: float) -> tuple[ViewFrame, ...]:
    colours = ("navy", "darkgreen")
    for index, colour in enumerate(colours):
        subprocess.run(  # noqa: S603 - fixed argv
            [  # noqa: S607 - ffmpeg from PATH
                "ffmpeg",
                "-v",
                "error",
                "-y",
                "-f",
                "lavfi",
                "-i",
                f"testsrc2=s=1280x720,drawbox=c={colour}:t=fill:w=200:h=200",
                "-frames:v",
                "1",
                str(folder / f"c{index}.jpg"),
            ],
            check=True,
        )
    frames = []
    for index in range(int(seconds / every)):
        path = folder / f"{index:06d}.jpg"
        path.hardlink_to(folder / f"c{index % 2}.jpg")
        frames.append(ViewFrame(path, 1000.0 + index * every))
    return tuple(frames)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--view-every", type=float, default=1.0)
    args = parser.parse_args()
    corpus = Path(os.environ.get("MEETBOT_SPEECH_DIR", "../shared/data/speech"))
    speech = await asyncio.to_thread(corpus_or_packaged, corpus)  # packaged clips if no corpus
    if not (speech / "MANIFEST.tsv").is_file():
        print(f"real speech not found at {speech}: set MEETBOT_SPEECH_DIR", file=sys.stderr)
        return 2
    seconds = args.minutes * 60
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, clip, offset in (("a", "LJ001-0001.wav", 0.0), ("b", "LJ001-0003.wav", 10.0)):
            await asyncio.to_thread(
                _track, work / f"{name}.wav", _speech(speech, clip), seconds, offset
            )
        tracks = (TrackAudio("a", 1000.0, work / "a.wav"), TrackAudio("b", 1000.0, work / "b.wav"))
        (work / "views").mkdir()
        views = await asyncio.to_thread(_views, work / "views", seconds, args.view_every)
        for fmt in RecordingFormat:
            for frames in ((), views):
                if fmt is RecordingFormat.MP3 and frames:
                    continue
                out = work / f"out.{fmt.value}"
                began = time.perf_counter()
                await encode(EncodeJob(tracks, frames, 1000.0, seconds, fmt, out))
                took = time.perf_counter() - began
                size = out.stat().st_size
                print(
                    json.dumps(
                        {
                            "bench": "recording_encode",
                            "format": fmt.value,
                            "video": bool(frames),
                            "meeting_s": seconds,
                            "encode_s": round(took, 2),
                            "rtf": round(took / seconds, 4),
                            "size_bytes": size,
                            "bytes_per_s": round(size / seconds),
                        }
                    )
                )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
