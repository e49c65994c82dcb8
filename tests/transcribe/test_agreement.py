"""LocalAgreement-2 over word hypotheses of one growing utterance."""

from __future__ import annotations

import pytest

from agent.transcribe.agreement import agreed_prefix
from agent.transcribe.engine import WordTiming

pytestmark = pytest.mark.unit


def _words(text: str, start: float = 0.2, step: float = 0.4) -> list[WordTiming]:
    """Words of ``text`` one after another, ``step`` seconds each, with 0.05 s between them."""
    return [
        WordTiming(f" {word}", start + i * step, start + (i + 1) * step - 0.05)
        for i, word in enumerate(text.split())
    ]


def test_the_words_both_hypotheses_start_with_are_agreed() -> None:
    previous = _words("so the budget for next")
    current = _words("so the budget for next quarter is")
    agreement = agreed_prefix(previous, current, audio_s=3.2)
    assert agreement is not None
    assert agreement.text == "so the budget for next"
    assert agreement.cut_from == pytest.approx(current[4].end)
    assert agreement.cut_to == pytest.approx(current[5].start)


def test_agreement_ignores_case_and_punctuation() -> None:
    previous = [WordTiming(" So,", 0.2, 0.5), WordTiming(" the", 0.6, 0.8), *_words("plan is", 0.9)]
    current = [WordTiming(" so", 0.2, 0.5), WordTiming(" the", 0.6, 0.8), *_words("plan is done", 0.9)]
    agreement = agreed_prefix(previous, current, audio_s=3.0)
    assert agreement is not None and agreement.text == "so the plan is"


@pytest.mark.parametrize(
    ("previous", "current", "why"),
    [
        ("we should", "they should ship", "first word differs"),
        ("so the budget", "so the budget", "nothing follows the agreed words"),
        ("so", "so the budget", "agreed part under a second"),
    ],
)
def test_nothing_is_agreed_when(previous: str, current: str, why: str) -> None:
    assert agreed_prefix(_words(previous), _words(current), audio_s=10.0) is None, why


def test_a_word_at_the_end_of_the_audio_is_never_agreed() -> None:
    previous = _words("so the budget for next quarter")
    current = _words("so the budget for next quarter")
    # The audio ends 0.1 s after "next": it and everything after may still be cut off.
    agreement = agreed_prefix(previous, current, audio_s=current[4].end + 0.1)
    assert agreement is not None and agreement.text == "so the budget for"


def test_first_hypothesis_agrees_with_nothing() -> None:
    assert agreed_prefix([], _words("so the budget for next quarter"), audio_s=10.0) is None
