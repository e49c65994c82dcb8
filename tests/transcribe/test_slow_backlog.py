"""A decoder far slower than speech merges each speaker's backlog of finals.

A bot VM emulated without KVM takes minutes per Whisper decode (the padded 30 s window costs
the same whatever is in it). The engine here is the bundled tiny.en, decoding for real, on a
machine made slower by a fixed cost per decode (``FaultyEngine``, as emulation adds); the
scheduler, segmenter and committer under test are the real ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agent.transcribe.models import resolve_model
from agent.transcribe.normalize import word_error_rate
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.vad import SileroSession
from tests.transcribe.helpers import (
    FaultyEngine,
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
# Slower than the audio it decodes (the pace's real-time factor above 1): a slow decoder.
EXTRA_DECODE_S = 3.0


async def test_a_slow_decoders_backlog_is_decoded_per_speaker_in_one_go(
    speech: Path, models_dir: Path, silero: SileroSession, tmp_path: Path
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
    engine = FaultyEngine.load(resolve_model("tiny.en", models_dir))
    engine.extra_s = EXTRA_DECODE_S
    transcriber = RealtimeTranscriber(
        engine,
        join_time=JOIN,
        # A backlog over 4 s of audio waits on disk: the merges read it back.
        options=TranscribeOptions(
            partial_interval_s=1.0, backlog_memory_s=4.0, backlog_dir=tmp_path / "backlog"
        ),
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
    # Slow from the first decode on: no partial or speculative decode ran.
    assert metrics.slow_decoder == 1
    assert metrics.decodes["partial"] + metrics.decodes["speculative"] <= 1
    # A backlog of one speaker cost one decode: fewer decodes than utterances ended.
    assert metrics.finals_merged >= 1
    assert engine.decodes < metrics.utterances
    # Part of the backlog waited on disk, and nothing of it is left there.
    assert metrics.finals_spilled >= 1
    assert metrics.backlog_s == 0
    assert list((tmp_path / "backlog").iterdir()) == []
    # A merged final keeps the times of the speech it covers.
    for segment in got:
        assert 0 <= segment.start < segment.end
    ada_finals = [s for s in got if s.speaker == "Ada"]
    assert ada_finals[-1].end >= len(ada) / 16_000 - 1.5
    assert min(s.start for s in ada_finals) <= 0.5
