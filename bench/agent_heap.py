"""Agent heap benchmark: what glibc's malloc settings cost a transcribing bot in memory and CPU.

A bot's Python holds tiny.en and base (the default bot, language detected) and decodes what
it hears as the realtime tier does: partials of an open utterance every 2 s, then its final,
with the encoder window of at least 15 s. Between the agent's minutely tidies its heap grows
back by the decodes' freed buffers that glibc keeps (issue 19: the agent sat at 320-335 MB
between tidies and 258-272 MB right after one in a soak). Two things decide which buffers are
kept. The arenas: with two, a decode freed into one arena is allocated again in the other
(``2-arenas`` against the agent's one). glibc's mapping threshold: by default it rises to the
largest block freed (up to 32 MB), so after the first decodes nearly every buffer comes from
the heap and stays there; a fixed threshold
(``MALLOC_MMAP_THRESHOLD_``) maps larger blocks on their own and unmaps them when freed, at
the price of page faults.

Each setting runs in a process of its own (the variables are read by glibc at start), with
the agent's own arena cap (:func:`agent.process.heap.tune`) and the models loaded and trimmed as the
agent does (:func:`agent.transcribe.factory.load_engine`). Decodes run one at a time through
``asyncio.to_thread``, as the realtime tier's scheduler runs them, while a task beside them
keeps other pool threads busy as the ingest's VAD analysis does (so decodes land on different
threads, as in the agent): each of ``--clips`` corpus clips ``--rounds`` times, every 2 s
prefix as a partial with tiny.en, then the whole clip as the final, then base detecting the
clip's language as for a newcomer. It prints one JSON line per setting:

``{"bench": "agent_heap", "setting", "env", "decodes", "audio_s", "cpu_s", "cpu_per_audio_s",
"wall_s", "pss_loaded_mb", "pss_after_mb", "pss_trimmed_mb"}``

(``pss_after_mb``: PSS once the decodes ended, what the heap kept; ``pss_trimmed_mb``: after a
``malloc_trim``, what the tidy gets back to; ``cpu_per_audio_s``: CPU seconds per second of
audio decoded, partials included).

Usage: ``python -m bench.agent_heap [--settings default,2-arenas,128k,1m,4m] [--clips 12]
[--rounds 2]``.
Plays ``MEETBOT_SPEECH_DIR`` (or ../shared/data/speech), else the speech packaged with
testmeeting.
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
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psutil

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.bot_config import Task
from agent.process import heap
from agent.transcribe.audio_io import read_audio
from agent.transcribe.engine import DecodeOptions, WhisperEngine
from agent.transcribe.factory import load_engine
from agent.transcribe.options import TranscribeOptions
from testmeeting.packaged_speech import corpus_or_packaged
from testmeeting.soak import corpus_clips

SETTINGS: dict[str, dict[str, str]] = {
    "default": {},
    "2-arenas": {"MALLOC_ARENA_MAX": "2"},
    "128k": {"MALLOC_MMAP_THRESHOLD_": "131072"},
    "512k": {"MALLOC_MMAP_THRESHOLD_": "524288"},
    "1m": {"MALLOC_MMAP_THRESHOLD_": "1048576"},
    "4m": {"MALLOC_MMAP_THRESHOLD_": "4194304"},
}
PARTIAL_EVERY_S = 2.0


def _pss_mb() -> float:
    return float(psutil.Process().memory_full_info().pss) / 2**20


def _clip(path: Path) -> npt.NDArray[np.float32]:
    return (read_audio(path).astype(np.float32) / 32768.0).astype(np.float32)


async def _decodes(
    tiny: WhisperEngine, base: WhisperEngine, clips: list[npt.NDArray[np.float32]], rounds: int
) -> tuple[int, float]:
    """The realtime tier's decodes, one at a time: partials every 2 s, the final, a detection.

    Returns:
        (decodes, seconds of audio decoded).
    """
    options = DecodeOptions(window_s=15.0)
    decodes, audio_s = 0, 0.0
    step = int(PARTIAL_EVERY_S * SAMPLE_RATE)
    for _ in range(rounds):
        for audio in clips:
            for end in [*range(step, len(audio), step), len(audio)]:
                await asyncio.to_thread(
                    tiny.decode, audio[:end], language="en", task=Task.TRANSCRIBE, options=options
                )
                decodes, audio_s = decodes + 1, audio_s + end / SAMPLE_RATE
            await asyncio.to_thread(
                base.decode, audio, language=None, task=Task.TRANSCRIBE, options=options
            )
            decodes, audio_s = decodes + 1, audio_s + len(audio) / SAMPLE_RATE
    return decodes, audio_s


async def _ingest_beside(stop: asyncio.Event) -> None:
    """Pool threads busy beside the decodes, as the ingest's analysis of each 0.1 s batch."""
    batch = np.zeros(SAMPLE_RATE // 10, dtype=np.float32)
    while not stop.is_set():
        await asyncio.to_thread(np.abs, batch)
        await asyncio.sleep(0.01)


async def one(setting: str, clips: int, rounds: int) -> dict[str, object]:
    """Measure one setting in this process (its variables were set before it started)."""
    heap.tune()
    speech = await asyncio.to_thread(
        corpus_or_packaged, Path(os.environ.get("MEETBOT_SPEECH_DIR", "../shared/data/speech"))
    )
    names = [name for name, seconds in corpus_clips(speech) if 3 < seconds < 15][:clips]
    audio = [_clip(speech / name) for name in names]
    with tempfile.TemporaryDirectory() as models:
        options = TranscribeOptions(models_dir=Path(models))
        tiny = await load_engine("tiny.en", options)
        base = await load_engine("base", options)
    loaded = _pss_mb()
    process = psutil.Process()
    cpu_before = sum(process.cpu_times()[:2])
    began = time.perf_counter()
    stop = asyncio.Event()
    beside = asyncio.create_task(_ingest_beside(stop))
    try:
        decodes, audio_s = await _decodes(tiny, base, audio, rounds)
    finally:
        stop.set()
        await beside
    wall = time.perf_counter() - began
    cpu = sum(process.cpu_times()[:2]) - cpu_before
    after = _pss_mb()
    heap.trim()
    trimmed = _pss_mb()
    return {
        "bench": "agent_heap",
        "setting": setting,
        "env": SETTINGS[setting],
        "decodes": decodes,
        "audio_s": round(audio_s, 1),
        "cpu_s": round(cpu, 1),
        "cpu_per_audio_s": round(cpu / audio_s, 4),
        "wall_s": round(wall, 1),
        "pss_loaded_mb": round(loaded, 1),
        "pss_after_mb": round(after, 1),
        "pss_trimmed_mb": round(trimmed, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default="default,2-arenas,128k,1m,4m")
    parser.add_argument("--clips", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(one(args.one, args.clips, args.rounds))), flush=True)
        return 0
    for setting in args.settings.split(","):
        if setting not in SETTINGS:
            parser.error(f"unknown setting {setting!r}; known: {', '.join(SETTINGS)}")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
        env.update(SETTINGS[setting])
        command = [sys.executable, "-m", "bench.agent_heap", "--one", setting]
        command += ["--clips", str(args.clips), "--rounds", str(args.rounds)]
        subprocess.run(command, env=env, check=True)  # noqa: S603 - this module, fixed args
    return 0


if __name__ == "__main__":
    sys.exit(main())
