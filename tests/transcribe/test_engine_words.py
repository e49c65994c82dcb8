"""Word timings of one decode: the single pass the realtime tier's hypotheses use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from agent.contracts.bot_config import Task
from agent.transcribe.engine import DecodeOptions, WhisperEngine
from testmeeting.packaged_speech import conversational_clips

pytestmark = pytest.mark.unit

# Clips of a few seconds with words apart: fillers, a pause, a question (conversational set).
# Whether faster-whisper's path encodes a second window on a clip depends on the CPU's int8
# arithmetic: on one 2-core machine the first three did on one clip, on another (AMD EPYC) on
# none, while the last two did there; so the five together. Either path also encodes again
# when the decode's last timestamp falls short of the audio's end (faster-whisper's seek).
_CLIPS = ("mfa_uh", "mfa_whatscalled", "mfa_erpause", "mfa_uhuh", "mfa_laughter")


@contextmanager
def counted_encodes(engine: WhisperEngine) -> Iterator[list[int]]:
    """Count the CTranslate2 encoder calls the engine makes inside the block."""
    calls = [0]
    model: Any = engine._model  # observed, not replaced
    inner = model.model

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(inner, name)

        def encode(self, *args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            return inner.encode(*args, **kwargs)

    model.model = Counting()
    try:
        yield calls
    finally:
        model.model = inner


def test_a_single_pass_times_the_words_as_faster_whispers_path_does_with_one_encode(
    tiny_engine: WhisperEngine,
) -> None:
    clips = {clip.name: clip for clip in conversational_clips()}
    encodes = {"ours": 0, "theirs": 0}
    for name in _CLIPS:
        samples = clips[name].samples
        audio = (samples / 32768).astype(np.float32)
        with counted_encodes(tiny_engine) as theirs_calls:
            theirs = tiny_engine.decode(
                audio,
                language="en",
                task=Task.TRANSCRIBE,
                options=DecodeOptions(word_timestamps=True, window_s=15.0),
            )
        with counted_encodes(tiny_engine) as our_calls:
            ours = tiny_engine.decode(
                audio,
                language="en",
                task=Task.TRANSCRIBE,
                options=DecodeOptions(word_timestamps=True, single_pass=True, window_s=15.0),
            )
        encodes["ours"] += our_calls[0]
        encodes["theirs"] += theirs_calls[0]
        assert our_calls[0] <= theirs_calls[0], name
        assert ours.words, name
        # The same words at the same times, up to those a second window of theirs added.
        assert ours.words == theirs.words[: len(ours.words)], name
        assert ours.text.startswith(" ".join(w.word.strip() for w in ours.words[:1]))
    # The cost this saves is real: faster-whisper's path encodes again from the last word.
    assert encodes["ours"] < encodes["theirs"], encodes
