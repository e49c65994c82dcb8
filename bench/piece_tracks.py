"""Recording piece benchmark: a page holding many tracks, few of them speaking.

A meeting page can hold a remote audio track per possible speaker while only a few speak (the
testmeeting's Meet skin held 42 in the 2-hour soak; 5 had sound in a piece). This feeds one
piece of ``--seconds`` through the recorder's real writer
(:class:`agent.transcribe.audio_io.TrackRecorder`) the way the capture delivers it — a 100 ms
frame per track every 100 ms, digital silence as zeros — with ``--speaking`` tracks taking
turns in real speech from the corpus and the other tracks silent, then encodes the piece as
mp4 with :func:`agent.recording.encode.encode` (in this process since the audio-only encode
left ffmpeg), sampling the PSS of this process and any children every 50 ms. Prints one JSON
line:

``{"bench": "piece_tracks", "tracks", "speaking", "piece_s", "files", "disk_mb", "write_s",
"encode_s", "encode_cpu_s", "pss_before_mb", "encode_added_pss_mb", "pss_after_trim_mb",
"recording_s"}``

(``write_s``: wall seconds the writer took for the whole piece; ``encode_cpu_s``: user + system
CPU of this process and its children during the encode; ``encode_added_pss_mb``: the highest
PSS of the two during the encode less ``pss_before_mb``, what the encode adds to the bot's
tree; ``pss_after_trim_mb``: after the heap trim the recorder runs after a piece;
``recording_s``: the encoded file's duration).

Usage: ``python -m bench.piece_tracks [--tracks 42] [--speaking 5] [--seconds 600]``. Plays
``MEETBOT_SPEECH_DIR`` (or ../shared/data/speech), else the speech packaged with testmeeting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psutil

from agent.capture.audio import SAMPLE_RATE, AudioFrame
from agent.contracts.bot_config import RecordingFormat
from agent.memory.relief import trim_heap
from agent.recording.encode import encode
from agent.recording.job import EncodeJob
from agent.transcribe.audio_io import TrackRecorder
from testmeeting.packaged_speech import corpus_or_packaged
from testmeeting.soak import corpus_clips

BLOCK = SAMPLE_RATE // 10  # the page's 100 ms blocks
START = 1_800_000_000.0


def _speech(folder: Path, name: str) -> npt.NDArray[np.int16]:
    with wave.open(str(folder / name), "rb") as wav:
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.int16)


def conversation(
    clips: list[npt.NDArray[np.int16]], speakers: int, seconds: float
) -> list[npt.NDArray[np.int16]]:
    """Per speaker, ``seconds`` of audio: clips said in turn, 0.3 s apart, zeros elsewhere."""
    total = int(seconds * SAMPLE_RATE)
    tracks = [np.zeros(total, dtype=np.int16) for _ in range(speakers)]
    at, turn = 0, 0
    while at < total:
        clip = clips[turn % len(clips)][: total - at]
        tracks[turn % speakers][at : at + len(clip)] = clip
        at += len(clip) + int(0.3 * SAMPLE_RATE)
        turn += 1
    return tracks


class PeakPss:
    """Samples the PSS of this process and its children every 50 ms on a thread.

    Attributes:
        before_mb: The total when sampling began.
        peak_mb: The highest total seen.
    """

    def __init__(self) -> None:
        self.before_mb = _tree_pss_mb(psutil.Process())
        self.peak_mb = self.before_mb
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakPss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.05):
            self.peak_mb = max(self.peak_mb, _tree_pss_mb(me))


def _tree_pss_mb(root: psutil.Process) -> float:
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            total += process.memory_full_info().pss / 2**20
        except psutil.Error:
            continue
    return total


def _cpu_s() -> float:
    mine, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tracks", type=int, default=42)
    parser.add_argument("--speaking", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=600.0)
    args = parser.parse_args()
    if not 1 <= args.speaking <= args.tracks:
        parser.error("--speaking must be between 1 and --tracks")
    corpus = Path(os.environ.get("MEETBOT_SPEECH_DIR", "../shared/data/speech"))
    speech = await asyncio.to_thread(corpus_or_packaged, corpus)
    clips = [_speech(speech, name) for name, seconds in corpus_clips(speech) if seconds < 30]
    voices = conversation(clips, args.speaking, args.seconds)
    silence = np.zeros(BLOCK, dtype=np.int16)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        recorder = TrackRecorder(work / "tracks")
        began = time.perf_counter()
        for index in range(int(args.seconds * 10)):
            at = START + index / 10
            for track in range(args.tracks):
                if track < args.speaking:
                    pcm = voices[track][index * BLOCK : (index + 1) * BLOCK]
                else:
                    pcm = silence
                await recorder.add(AudioFrame(f"track-{track:02d}", at, pcm))
        tracks = await recorder.close()
        write_s = time.perf_counter() - began
        disk = sum(t.path.stat().st_size for t in tracks)
        out = work / "piece.mp4"
        cpu_before = _cpu_s()
        began = time.perf_counter()
        with PeakPss() as peak:
            duration = await encode(
                EncodeJob(tuple(tracks), (), START, args.seconds, RecordingFormat.MP4, out)
            )
        encode_s = time.perf_counter() - began
        cpu = _cpu_s() - cpu_before
        trim_heap()  # as the recorder does after a piece
        after_mb = _tree_pss_mb(psutil.Process())
    print(
        json.dumps(
            {
                "bench": "piece_tracks",
                "tracks": args.tracks,
                "speaking": args.speaking,
                "piece_s": args.seconds,
                "files": len(tracks),
                "disk_mb": round(disk / 2**20, 1),
                "write_s": round(write_s, 2),
                "encode_s": round(encode_s, 2),
                "encode_cpu_s": round(cpu, 2),
                "pss_before_mb": round(peak.before_mb, 1),
                "encode_added_pss_mb": round(peak.peak_mb - peak.before_mb, 1),
                "pss_after_trim_mb": round(after_mb, 1),
                "recording_s": duration,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
