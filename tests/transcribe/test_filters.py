"""Guards against hallucinated text and repetition loops."""

from __future__ import annotations

import pytest

from agent.transcribe.filters import DecodeStats, collapse_repetitions, judge, repeats_a_phrase
from agent.transcribe.normalize import hesitations

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


def test_known_hallucination_is_dropped_on_evidence_of_no_speech() -> None:
    doubtful = DecodeStats(no_speech_prob=0.6, avg_logprob=-0.6, compression_ratio=0.5)
    unsure = DecodeStats(no_speech_prob=0.1, avg_logprob=-1.1, compression_ratio=0.5)
    assert judge("Thanks for watching!", doubtful, 0.8).dropped == "known_hallucination"
    assert judge("Thank you.", unsure, 0.8).dropped == "known_hallucination"
    assert judge("Okay.", CONFIDENT, 0.0).dropped == "no_voice"


def test_short_common_words_said_with_voice_are_kept() -> None:
    # The VAD heard a short voice and the model is sure: someone said it.
    for said in ("Okay.", "Bye.", "Thank you.", "So."):
        assert judge(said, CONFIDENT, 0.3).text == said


def test_repetition_loop_is_cut_or_dropped() -> None:
    loop = "and then " * 20
    shaky = DecodeStats(no_speech_prob=0.1, avg_logprob=-0.8, compression_ratio=6.0)
    sure = DecodeStats(no_speech_prob=0.1, avg_logprob=-0.3, compression_ratio=6.0)
    assert judge(loop, shaky, 3.0).dropped == "repetition"
    assert judge(loop, sure, 3.0).text == "and then"


def test_empty_and_punctuation_only_are_dropped() -> None:
    assert judge(" ... ", CONFIDENT, 1.0).dropped == "empty"


@pytest.mark.parametrize("said", ["Um...", "Uh, uh.", "Hmm.", "Mm-hmm.", "Erm, uh...", "UM"])
@pytest.mark.parametrize("evidence_s", [0.0, 0.8, 2.5])
def test_hesitations_alone_are_dropped_as_hesitations_not_as_nothing(
    said: str, evidence_s: float
) -> None:
    # What tiny.en read for the unaccounted voice of the stress sample: heard, not lost.
    verdict = judge(said, CONFIDENT, 1.0, evidence_s)
    assert (verdict.text, verdict.dropped) == ("", "hesitation")
    assert hesitations(said) >= 1
    # With a word in it, it is speech, hesitations and all.
    assert judge(f"{said} Okay.", CONFIDENT, 1.0, evidence_s).text == f"{said} Okay."
    assert hesitations(f"{said} Okay.") == hesitations(said)


def test_a_phrase_said_twice_in_a_row_is_found_a_repeated_word_is_not() -> None:
    twice = "This is me talking really slow. This is me talking really slow."
    assert repeats_a_phrase(twice)
    assert not repeats_a_phrase("And here are some more words, words, words, words.")
    assert not repeats_a_phrase("Ask not what your country can do for you, ask what you can do.")


@pytest.mark.parametrize(
    ("no_speech", "logprob", "text", "kept"),
    [
        (0.15, -0.16, "There's gonna be no voice speech whatsoever here.", True),  # whispered
        (0.08, -0.83, "Montreal Forest a liner.", True),
        (0.7, -0.4, "Montreal Forest a liner.", False),  # the model says nobody spoke
        (0.2, -1.2, "And tree all fall.", False),  # unsure of every word
        (0.05, -0.2, "Thank you.", False),  # what Whisper writes on noise, however sure
    ],
)
def test_an_utterance_the_level_opened_is_kept_only_when_the_model_is_sure(
    no_speech: float, logprob: float, text: str, kept: bool
) -> None:
    stats = DecodeStats(no_speech_prob=no_speech, avg_logprob=logprob, compression_ratio=1.2)
    verdict = judge(text, stats, voiced_s=2.0, evidence_s=0.3, by_level=True)
    assert (verdict.dropped is None) is kept
    # The same decode from an utterance the VAD opened is kept unless it is no speech.
    assert judge(text, stats, voiced_s=2.0, evidence_s=0.3).dropped in (None, "known_hallucination")
    # With a second of voice evidence, the model's doubt alone drops nothing.
    assert judge(text, stats, voiced_s=2.0, evidence_s=1.0, by_level=True).dropped is None


@pytest.mark.parametrize("evidence_s", [0.0, 2.0])
@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("M" + "a" * 69, "Maaa"),  # tiny.en on a drawn-out "Montreal" (MFA's mfa_long)
        ("Sooooooo, what now?", "Sooo, what now?"),
        ("Hmmmmm.", "Hmmm."),
        ("We need 1000000 units.", "We need 1000000 units."),  # digits are not a loop
        ("Sooo, what now?", "Sooo, what now?"),
        ("A bookkeeper's committee.", "A bookkeeper's committee."),
    ],
)
def test_a_letter_run_inside_a_word_is_cut_to_three(
    text: str, kept: str, evidence_s: float
) -> None:
    verdict = judge(text, DecodeStats(0.1, -0.3, 1.2), voiced_s=2.0, evidence_s=evidence_s)
    assert verdict.dropped is None and verdict.text == kept
