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
    # 2.5 s and more of agreed words are committed whole, boundary or not.
    previous = _words("so the budget for next", step=0.6)
    current = _words("so the budget for next quarter is", step=0.6)
    agreement = agreed_prefix(previous, current, audio_s=4.5)
    assert agreement is not None
    assert agreement.text == "so the budget for next"
    assert agreement.cut_from == pytest.approx(current[4].end)
    assert agreement.cut_to == pytest.approx(current[5].start)


def test_before_it_is_urgent_the_commit_ends_where_a_phrase_does() -> None:
    words = [
        WordTiming(" We", 0.1, 0.3),
        WordTiming(" shipped", 0.35, 0.8),
        WordTiming(" it,", 0.85, 1.1),  # a comma: a phrase ends here
        WordTiming(" then", 1.15, 1.4),
        WordTiming(" we", 1.45, 1.6),
        WordTiming(" tested", 1.65, 2.0),
        WordTiming(" it", 2.3, 2.4),  # 0.3 s pause before it: another boundary
        WordTiming(" again", 2.45, 2.7),
    ]
    agreement = agreed_prefix(words[:7], words, audio_s=3.2)
    assert agreement is not None and agreement.text == "We shipped it, then we tested"
    # Agreed only up to "then we": the comma is the last boundary.
    agreement = agreed_prefix(words[:5], [*words[:5], WordTiming(" ran", 1.65, 2.0)], 3.2)
    assert agreement is not None and agreement.text == "We shipped it,"
    # Agreed up to "shipped" with no boundary yet: nothing.
    assert agreed_prefix(words[:2], [*words[:2], WordTiming(" them", 0.85, 1.1)], 3.2) is None


def test_agreement_ignores_case_and_punctuation() -> None:
    previous = [
        WordTiming(" So,", 0.2, 0.5),
        WordTiming(" the", 0.6, 0.8),
        *_words("plan is", 0.9, 1.0),
    ]
    current = [
        WordTiming(" so", 0.2, 0.5),
        WordTiming(" the", 0.6, 0.8),
        *_words("plan is done", 0.9, 1.0),
    ]
    agreement = agreed_prefix(previous, current, audio_s=4.5)
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
    previous = _words("so the budget for next quarter", step=0.6)
    current = _words("so the budget for next quarter", step=0.6)
    # The audio ends 0.1 s after "next": it and everything after may still be cut off.
    agreement = agreed_prefix(previous, current, audio_s=current[4].end + 0.1)
    assert agreement is not None and agreement.text == "so the budget for"


def test_first_hypothesis_agrees_with_nothing() -> None:
    assert agreed_prefix([], _words("so the budget for next quarter"), audio_s=10.0) is None
