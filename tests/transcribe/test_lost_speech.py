"""No speech lost: a quiet, hoarse voice after a loud one, and the count of voice without text.

Issue 32: a hoarse speaker (Montreal Forced Aligner's ``cold_corpus``) 9 dB quieter than the
loud reading right before them came out as "of this." for 25 s of speech, because the VAD's
state carried from the loud voice kept the quiet one under its threshold, and nothing counted
the voice that never became text. These run the real realtime tier (Silero, tiny.en).
"""

from __future__ import annotations

import numpy as np
import pytest

from agent.audio import SAMPLE_RATE
from agent.transcribe.engine import WhisperEngine
from agent.transcribe.normalize import normalize_text
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.segmenter import SegmenterOptions
from agent.transcribe.vad import SileroSession
from testmeeting.stress import Case, grid, score
from tests.transcribe.helpers import finals, frames, replay

pytestmark = pytest.mark.model

JOIN = 1_700_000_000.0


def _quiet_after_loud() -> list[Case]:
    """The grid's hoarse monologues 9 and 12 dB under a loud reading, 0.3 s after it."""
    return [
        case
        for case in grid(0)
        if case.kind == "quiet_after_loud"
        and case.intervals[1].clip.startswith("mfa_cold_corpus")
        and case.intervals[1].level_db <= -9.0
    ]


def _transcriber(
    engine: WhisperEngine, silero: SileroSession, **options: object
) -> RealtimeTranscriber:
    return RealtimeTranscriber(
        engine,
        join_time=JOIN,
        options=TranscribeOptions(partials=False, **options),
        vad_session=silero,
    )


@pytest.mark.parametrize("index", [0, 1])
async def test_a_quiet_hoarse_monologue_right_after_a_loud_one_is_transcribed(
    index: int, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    cases = _quiet_after_loud()
    assert len(cases) >= 2
    case = cases[index]
    transcriber = _transcriber(tiny_engine, silero)
    got = finals(await replay(transcriber, frames(case.samples, "mix", JOIN)))
    result = score(case, [(s.text, s.start, s.end) for s in got], normalize=normalize_text)
    loud, hoarse = result.recall
    # Before the fix the hoarse 25 s gave 2-4 words of ~60; tiny.en alone on the clip ~0.85.
    assert hoarse >= 0.7, (case.name, [s.text for s in got])
    assert loud >= 0.9
    counters = transcriber.metrics.snapshot()
    assert counters["unaccounted_voice_seconds"] <= 0.05 * counters["voice_evidence_seconds"]


async def test_clean_speech_leaves_no_voice_unaccounted(
    tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    # Read speech: a filler-only stretch ("uh uh uh") decodes to nothing and is counted
    # (rule ``empty``), rightly, so the clean case has none.
    case = next(
        c
        for c in grid(0)
        if c.kind == "pair" and c.gaps_s[0] >= 0.3 and not any(i.what for i in c.intervals)
    )
    transcriber = _transcriber(tiny_engine, silero)
    got = finals(await replay(transcriber, frames(case.samples, "mix", JOIN)))
    assert got
    counters = transcriber.metrics.snapshot()
    assert counters["voice_evidence_seconds"] > 2.0
    assert counters["unaccounted_voice_seconds"] == 0.0, counters


async def test_speech_hidden_from_the_vad_is_counted_as_voice_without_text(
    tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    case = next(c for c in grid(0) if c.kind == "pair" and c.gaps_s[0] >= 0.3)
    # A VAD threshold no window reaches: the speech is there, no utterance ever opens.
    deaf = SegmenterOptions(threshold=0.999, neg_threshold=0.99)
    transcriber = _transcriber(tiny_engine, silero, segmenter=deaf)
    got = finals(await replay(transcriber, frames(case.samples, "mix", JOIN)))
    assert got == []
    counters = transcriber.metrics.snapshot()
    voiced = sum(i.end - i.start for i in case.intervals)
    assert counters["unaccounted_voice_seconds_vad_closed"] >= 0.5 * voiced, counters
    assert counters["unaccounted_voice_seconds"] == counters["voice_evidence_seconds"]


async def test_silence_and_noise_are_no_voice_evidence(
    tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    rng = np.random.default_rng(3)
    n = 4 * SAMPLE_RATE
    white = rng.normal(0, 0.03 * 32768, n)
    hum = 0.05 * 32768 * np.sin(2 * np.pi * 50 * np.arange(n) / SAMPLE_RATE)
    pcm = np.concatenate([np.zeros(n), white, hum, np.zeros(SAMPLE_RATE)]).astype(np.int16)
    transcriber = _transcriber(tiny_engine, silero)
    assert finals(await replay(transcriber, frames(pcm, "t", JOIN))) == []
    assert transcriber.metrics.snapshot()["unaccounted_voice_seconds"] == 0.0
