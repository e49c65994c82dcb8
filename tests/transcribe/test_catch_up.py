"""Catch-up mode: a decoder far slower than speech still transcribes every turn.

A bot VM emulated without KVM takes minutes per Whisper decode (the padded 30 s window costs
the same whatever is in it). The engine here is the bundled tiny.en, decoding for real, on a
machine made slower by a fixed cost per decode (``SlowEngine``, as emulation adds); the
scheduler, segmenter and committer under test are the real ones.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agent.contracts.bot_config import Task
from agent.contracts.link import Segment
from agent.transcribe.engine import DecodeOptions, DecodeResult, WhisperEngine
from agent.transcribe.normalize import word_error_rate
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.vad import SileroSession
from tests.transcribe.helpers import (
    finals,
    frames,
    interleave,
    load_wav,
    reference,
    replay,
    silence,
)

pytestmark = [pytest.mark.model, pytest.mark.slow]

JOIN = 1_700_000_000.0
# Above a third of the default partial_interval_max_s (8 s): partials could not keep up.
EXTRA_DECODE_S = 3.0


def _catching_up(transcriber: RealtimeTranscriber) -> bool:
    return transcriber.catching_up  # read through a call: it changes between two reads


def _more_finals(transcriber: RealtimeTranscriber, than: int) -> bool:
    return transcriber.metrics.finals > than


class SlowEngine(WhisperEngine):
    """The same loaded model, each decode ``extra_s`` slower (like a CPU under emulation)."""

    def __init__(self, engine: WhisperEngine, extra_s: float) -> None:
        super().__init__(engine._model, engine.name, engine.multilingual)
        self.extra_s = extra_s
        self.decodes = 0

    def decode(
        self,
        audio: npt.NDArray[np.float32],
        *,
        language: str | None,
        task: Task,
        options: DecodeOptions,
        prompt: str | None = None,
    ) -> DecodeResult:
        """Decode for real, then wait ``extra_s`` (seconds counted in the result)."""
        result = super().decode(audio, language=language, task=task, options=options, prompt=prompt)
        time.sleep(self.extra_s)
        self.decodes += 1
        return dataclasses.replace(result, seconds=result.seconds + self.extra_s)


async def test_a_slow_decoder_skips_partials_and_merges_each_speakers_backlog(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    # Ada reads three sentences with short breaths; Bob talks over her second one.
    ada = np.concatenate(
        [
            load_wav(speech, "LJ001-0001.wav"),
            silence(0.6),
            load_wav(speech, "LJ001-0002.wav"),
            silence(0.6),
            load_wav(speech, "LJ001-0003.wav"),
            silence(1.0),
        ]
    )
    bob = np.concatenate([silence(11.0), load_wav(speech, "jfk.wav"), silence(1.0)])
    stream = interleave(frames(ada, "track-a", JOIN, "Ada"), frames(bob, "track-b", JOIN, "Bob"))
    engine = SlowEngine(tiny_engine, EXTRA_DECODE_S)
    transcriber = RealtimeTranscriber(
        engine,
        join_time=JOIN,
        options=TranscribeOptions(partial_interval_s=1.0),
        vad_session=silero,
    )

    segments = await replay(transcriber, stream)

    metrics = transcriber.metrics
    got = finals(segments)
    said = {name: " ".join(s.text for s in got if s.speaker == name) for name in ("Ada", "Bob")}
    ada_reference = " ".join(reference(speech, f"LJ001-000{n}.wav") for n in (1, 2, 3))
    # Every turn is transcribed, each under its own speaker.
    assert word_error_rate(ada_reference, said["Ada"]) <= 0.2, said
    assert word_error_rate(reference(speech, "jfk.wav"), said["Bob"]) <= 0.2, said
    assert {s.speaker for s in got} == {"Ada", "Bob"}
    # The first slow decode switched the mode on; nothing speculative or partial ran after it.
    assert metrics.catch_up_entries == 1
    assert metrics.decodes["partial"] + metrics.decodes["speculative"] <= 1
    # A backlog of one speaker cost one decode: fewer decodes than utterances ended.
    assert metrics.finals_merged >= 1
    assert engine.decodes < metrics.utterances
    # A merged final keeps the times of the speech it covers.
    for segment in got:
        assert 0 <= segment.start < segment.end
    ada_finals = [s for s in got if s.speaker == "Ada"]
    assert ada_finals[-1].end >= len(ada) / 16_000 - 1.5
    assert min(s.start for s in ada_finals) <= 0.5


async def test_partials_resume_when_decoding_is_fast_again(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    # A bound of 16 / 3 s to enter and 16 / 6 s to leave: far from tiny.en's own decode time
    # even on a loaded machine (about 1.3 s for 2 s of speech at load 13).
    engine = SlowEngine(tiny_engine, 6.0)
    transcriber = RealtimeTranscriber(
        engine,
        join_time=JOIN,
        options=TranscribeOptions(partial_interval_s=1.0, partial_interval_max_s=16.0),
        vad_session=silero,
    )
    seen: list[Segment] = []
    clock = JOIN

    async def say(name: str) -> None:
        nonlocal clock
        pcm = np.concatenate([load_wav(speech, name), silence(1.0)])
        for frame in frames(pcm, "t", clock):
            await transcriber.feed(frame)
        clock += len(pcm) / 16_000

    changed = asyncio.Event()  # set by every segment (each follows the decode it reports)

    async def until(done: Callable[[], bool]) -> None:
        async with asyncio.timeout(120):
            while not done():
                changed.clear()
                await changed.wait()

    async with transcriber:

        async def collect() -> None:
            async for segment in transcriber.segments():
                seen.append(segment)
                changed.set()

        collector = asyncio.create_task(collect())
        await say("LJ001-0002.wav")
        await until(lambda: transcriber.metrics.finals >= 1)
        assert _catching_up(transcriber)
        engine.extra_s = 0.0  # the host is quiet again: short turns, each decoded alone
        for name in ["LJ001-0008.wav", "LJ001-0002.wav"] * 4:
            if not _catching_up(transcriber):
                break
            finals_before = transcriber.metrics.finals
            await say(name)
            await until(partial(_more_finals, transcriber, finals_before))
        assert not _catching_up(transcriber)
        # A sentence at the pace of speech: partial or speculative decodes run again.
        before = transcriber.metrics.decodes["partial"] + transcriber.metrics.decodes["speculative"]
        skipped = transcriber.metrics.catch_up_skipped
        pcm = np.concatenate([load_wav(speech, "LJ001-0001.wav"), silence(1.0)])
        sentence_at = clock - JOIN - 0.5
        for frame in frames(pcm, "t", clock):
            await transcriber.feed(frame)
            await asyncio.sleep(0.1)
    await collector
    metrics = transcriber.metrics
    assert metrics.catch_up_entries == 1
    assert metrics.decodes["partial"] + metrics.decodes["speculative"] > before
    assert metrics.catch_up_skipped == skipped
    sentence = " ".join(s.text for s in finals(seen) if s.start >= sentence_at)
    assert word_error_rate(reference(speech, "LJ001-0001.wav"), sentence) <= 0.25
