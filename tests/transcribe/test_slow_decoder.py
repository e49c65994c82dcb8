"""Realtime tier on a decoder slower than the audio: finals keep coming, partials wait.

The decoder is the bundled tiny.en, real, except that each decode lasts at least ``factor``
times the audio it covers, as on an overloaded host or a CPU emulated by TCG (where one decode
takes minutes). Frames arrive at the pace of speech (a live meeting), so partials fall due
while people talk. First the decoder is slow, then it is fast again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.link import Segment
from agent.transcribe.models import resolve_model
from agent.transcribe.normalize import word_error_rate
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.vad import SileroSession
from tests.transcribe.helpers import (
    FaultyEngine,
    finals,
    frames,
    load_wav,
    reference,
    silence,
)

pytestmark = [pytest.mark.model, pytest.mark.slow]

JOIN = 1_700_000_000.0
# (clip, silence after it, seconds): while the first two are said each decode lasts 1.5 times
# its audio; from the third on the decoder runs at its own speed.
SLOW = [("LJ001-0004.wav", 1.0), ("LJ001-0011.wav", 1.2)]
FAST = [("LJ001-0001.wav", 1.0), ("LJ001-0005.wav", 1.0), ("LJ001-0003.wav", 1.5)]


@pytest.fixture(scope="module")
def slowed(models_dir: Path) -> FaultyEngine:
    """A tiny.en of its own (the factor must not reach the other tests' engine)."""
    return FaultyEngine.load(resolve_model("tiny.en", models_dir))


def _pcm(speech: Path, script: list[tuple[str, float]]) -> npt.NDArray[np.int16]:
    return np.concatenate(
        [p for clip, gap in script for p in (load_wav(speech, clip), silence(gap))]
    )


async def test_a_slow_decoder_pauses_partials_and_still_finals_every_utterance(
    speech: Path,
    slowed: FaultyEngine,
    silero: SileroSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="agent.transcribe.pace")
    slow_pcm, fast_pcm = _pcm(speech, SLOW), _pcm(speech, FAST)
    stream = frames(np.concatenate([slow_pcm, fast_pcm]), "t", JOIN)
    switch_at = JOIN + len(slow_pcm) / SAMPLE_RATE
    transcriber = RealtimeTranscriber(
        slowed,
        join_time=JOIN,
        options=TranscribeOptions(partial_interval_s=1.0),
        vad_session=silero,
    )
    got: list[Segment] = []
    while_slow: dict[str, float] = {}
    slowed.factor = 1.5

    async def collect() -> None:
        async for segment in transcriber.segments():
            got.append(segment)

    async with asyncio.TaskGroup() as group:
        group.create_task(collect())
        async with transcriber:
            began = time.monotonic()
            for frame in stream:
                if frame.start_time >= switch_at and slowed.factor:
                    while_slow = transcriber.metrics.snapshot()
                    slowed.factor = 0.0
                # A frame is there once its last sample has been said.
                delay = began + (frame.end_time - JOIN) - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await transcriber.feed(frame)

    # While slow: not one partial decoded, the skipped ones counted, and said so in the log.
    assert while_slow["slow_decoder"] == 1, while_slow
    assert while_slow.get("decodes_partial", 0) == 0, while_slow
    assert while_slow["partials_paused"] >= 1, while_slow
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("partials paused") for m in messages), messages
    # Fast again: partials are back.
    after = transcriber.metrics.snapshot()
    assert after["slow_decoder"] == 0 and after["decodes_partial"] >= 1, after
    assert any(m.startswith("partials resumed") for m in messages), messages
    # Nothing lost: every sentence has its final, and together they say what was said.
    done = finals(got)
    starts, cursor = [], 0.0
    for clip, gap in [*SLOW, *FAST]:
        length = len(load_wav(speech, clip)) / SAMPLE_RATE
        starts.append((cursor, cursor + length))
        cursor += length + gap
    for lo, hi in starts:
        assert any(s.start < hi and s.end > lo for s in done), (lo, hi, done)
    said = " ".join(reference(speech, clip) for clip, _ in [*SLOW, *FAST])
    assert word_error_rate(said, " ".join(s.text for s in done)) <= 0.15, done
