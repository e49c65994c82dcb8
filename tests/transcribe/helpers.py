"""Shared helpers of the transcription tests: reading the speech corpus, replaying frames."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import wave
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agent.capture.audio import SAMPLE_RATE, AudioFrame, SpeakerActivity
from agent.contracts.bot_config import Task
from agent.contracts.link import Segment
from agent.transcribe.engine import DecodeOptions, DecodeResult, WhisperEngine
from agent.transcribe.realtime import RealtimeTranscriber
from tests.plugins.paths import need_clip

FRAME = SAMPLE_RATE // 10  # 100 ms, the capture's block size


def load_wav(speech: Path, name: str) -> npt.NDArray[np.int16]:
    """Samples of a corpus WAV (16 kHz mono 16-bit); skips when the packaged set lacks it."""
    with wave.open(str(need_clip(speech, name)), "rb") as wav:
        assert (wav.getnchannels(), wav.getframerate()) == (1, SAMPLE_RATE)
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.int16)


def reference(speech: Path, name: str) -> str:
    """The reference text of a corpus WAV."""
    return (speech / name.replace(".wav", ".txt")).read_text(encoding="utf-8")


def silence(seconds: float) -> npt.NDArray[np.int16]:
    """Digital silence."""
    return np.zeros(int(seconds * SAMPLE_RATE), dtype=np.int16)


def frames(
    pcm: npt.NDArray[np.int16],
    track_id: str,
    start_time: float,
    speaker: str | None = None,
) -> list[AudioFrame]:
    """Cut ``pcm`` into 100 ms frames stamped from ``start_time`` on."""
    return [
        AudioFrame(track_id, start_time + i / SAMPLE_RATE, pcm[i : i + FRAME], speaker)
        for i in range(0, len(pcm), FRAME)
    ]


async def replay(
    transcriber: RealtimeTranscriber,
    stream: Sequence[AudioFrame | SpeakerActivity],
) -> list[Segment]:
    """Feed frames and activities as fast as accepted, close, and return every segment."""
    collected: list[Segment] = []

    async def collect() -> None:
        async for segment in transcriber.segments():
            collected.append(segment)

    async with asyncio.TaskGroup() as group:
        group.create_task(collect())
        async with transcriber:
            for item in stream:
                if isinstance(item, AudioFrame):
                    await transcriber.feed(item)
                else:
                    transcriber.speaker_activity(item)
    return collected


def finals(segments: Sequence[Segment]) -> list[Segment]:
    """Completed, non-empty segments in start order."""
    return sorted((s for s in segments if s.completed and s.text), key=lambda s: s.start)


def interleave(*streams: Sequence[AudioFrame]) -> list[AudioFrame]:
    """Merge per-track frame lists by timestamp (how capture delivers overlapping tracks)."""
    merged = [frame for stream in streams for frame in stream]
    return sorted(merged, key=lambda f: (f.start_time, f.track_id))


class FaultyEngine(WhisperEngine):
    """A loaded model decoding for real, with the faults a starved CPU or a weak model brings.

    Load it with ``FaultyEngine.load`` (a model of its own: the engine wraps its model's encoder,
    so sharing one would chain two engines' windows). The knobs may change between decodes:

    - slower, as a starved or emulated CPU is: each decode lasts at least ``factor`` times its
      audio, then ``extra_s`` more (a fixed cost per decode, as emulation adds); the result's
      ``seconds`` counts the wait;
    - ``blank_first_passes``: every decode at temperature 0 alone (partials, speculative
      decodes, finals, their rechecks in the full window) returns its result with the text
      emptied, as tiny.en once read 3.6 s of voice as nothing; a decode allowed temperature
      fallback runs for real.

    ``decodes`` counts the decodes, ``blanked`` those emptied.
    """

    def __init__(self, model: Any, name: str, multilingual: bool) -> None:
        super().__init__(model, name, multilingual)
        self.factor = 0.0
        self.extra_s = 0.0
        self.blank_first_passes = False
        self.decodes = 0
        self.blanked = 0

    def decode(
        self,
        audio: npt.NDArray[np.float32],
        *,
        language: str | None,
        task: Task,
        options: DecodeOptions,
        prompt: str | None = None,
    ) -> DecodeResult:
        """Decode for real, then wait until the slowed length (counted in the result)."""
        result = super().decode(audio, language=language, task=task, options=options, prompt=prompt)
        wanted = max(result.seconds, self.factor * len(audio) / SAMPLE_RATE) + self.extra_s
        self.decodes += 1
        if wanted > result.seconds:
            time.sleep(wanted - result.seconds)
            result = dataclasses.replace(result, seconds=wanted)
        if self.blank_first_passes and len(options.temperatures) == 1:
            self.blanked += 1
            result = dataclasses.replace(result, text="", words=())
        return result
