"""Guards against hallucinated text and repetition loops."""

from __future__ import annotations

import pytest

from agent.transcribe.filters import DecodeStats, collapse_repetitions, judge

pytestmark = pytest.mark.unit

CONFIDENT = DecodeStats(no_speech_prob=0.01, avg_logprob=-0.2, compression_ratio=1.3)


def test_collapse_repetitions() -> None:
    assert collapse_repetitions("no no no no no no") == "no"
    assert collapse_repetitions("I think so so so") == "I think so so so"
    loop = "we will go there. " * 6
    assert collapse_repetitions("Then " + loop.strip()) == "Then we will go there."


def test_confident_speech_is_kept() -> None:
    assert judge(" Ask not what your country can do. ", CONFIDENT, 2.0).text == (
        "Ask not what your country can do."
    )


def test_no_speech_is_dropped() -> None:
    stats = DecodeStats(no_speech_prob=0.9, avg_logprob=-1.2, compression_ratio=1.0)
    assert judge("Hello there.", stats, 1.0).dropped == "no_speech"


def test_known_hallucination_on_little_voice_is_dropped() -> None:
    assert judge("Thanks for watching!", CONFIDENT, 0.3).dropped == "known_hallucination"
    assert judge("Thank you.", CONFIDENT, 2.0).dropped is None


def test_repetition_loop_is_cut_or_dropped() -> None:
    loop = "and then " * 20
    shaky = DecodeStats(no_speech_prob=0.1, avg_logprob=-0.8, compression_ratio=6.0)
    sure = DecodeStats(no_speech_prob=0.1, avg_logprob=-0.3, compression_ratio=6.0)
    assert judge(loop, shaky, 3.0).dropped == "repetition"
    assert judge(loop, sure, 3.0).text == "and then"


def test_empty_and_punctuation_only_are_dropped() -> None:
    assert judge(" ... ", CONFIDENT, 1.0).dropped == "empty"
