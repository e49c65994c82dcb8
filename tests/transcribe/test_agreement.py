"""LocalAgreement-2 over word hypotheses of one growing utterance."""

from __future__ import annotations

import pytest

from agent.transcribe.agreement import (
    agreed_prefix,
    drop_repeated,
    drop_repeated_words,
    sentence_at_pause,
)
from agent.transcribe.engine import WordTiming
from agent.transcribe.filters import DecodeStats

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
        ("we should", "they should ship", "agreed part under a second after the head"),
        ("so the budget", "so the budget", "nothing follows, and the audio ends 0.5 s later"),
        ("so", "so the budget", "agreed part under a second"),
        ("so the budget is", "so the plan is fine", "they differ after the head"),
    ],
)
def test_nothing_is_agreed_when(previous: str, current: str, why: str) -> None:
    words = _words(current)
    assert agreed_prefix(_words(previous), words, audio_s=words[-1].end + 0.5) is None, why


def _spoken(head: str, body: str, step: float = 0.4) -> list[WordTiming]:
    """``head``'s words within the first 0.9 s of the audio, then ``body``'s from 1.0 s on:
    the body's words at the same times whatever the head holds (as two hops decode them)."""
    heads = head.split()
    span = 0.8 / max(1, len(heads))
    return [
        *(
            WordTiming(f" {word}", 0.1 + i * span, 0.1 + (i + 1) * span - 0.02)
            for i, word in enumerate(heads)
        ),
        *_words(body, start=1.0, step=step),
    ]


# How a decoder reads the start of an utterance cut out of running speech differently from
# one hop to the next: the committed part's last word split or merged, a word of the speaker
# before there or not, a filler. Seen on the stress sample (issue 32).
_HEADS = [
    ("engraved", "in grave"),
    ("in grave", "engraved"),
    ("here.", ""),
    ("", "here."),
    ("uh", "so"),
    ("the budget", "budget"),
]


@pytest.mark.parametrize(("head_before", "head_now"), _HEADS)
@pytest.mark.parametrize("body_words", [4, 7])
def test_a_head_the_hypotheses_read_differently_does_not_stop_agreement(
    head_before: str, head_now: str, body_words: int
) -> None:
    body = "in relief for centuries before the wood cutters of the netherlands".split()
    previous = _spoken(head_before, " ".join(body[:body_words]), step=0.5)
    current = _spoken(head_now, " ".join(body[: body_words + 2]), step=0.5)
    agreement = agreed_prefix(previous, current, audio_s=current[-1].end + 0.5)
    assert agreement is not None
    # The newest hypothesis's reading is committed, its head included.
    assert agreement.text == " ".join([*head_now.split(), *body[:body_words]])


@pytest.mark.parametrize(("head_before", "head_now"), _HEADS)
def test_a_difference_after_the_first_agreed_word_ends_the_agreement(
    head_before: str, head_now: str
) -> None:
    previous = _spoken(head_before, "in relief for centuries before the wood", step=0.5)
    # One word skipped, one word read differently: both end the agreement there.
    skipped = _spoken(head_now, "in relief for before the wood cutters", step=0.5)
    other = _spoken(head_now, "in relief for ages before the wood cutters", step=0.5)
    for current in (skipped, other):
        agreement = agreed_prefix(previous, current, audio_s=6.0)
        assert agreement is None or agreement.text.endswith("in relief for"), agreement


def test_words_alike_far_apart_in_time_do_not_agree() -> None:
    # "the budget" 1.5 s later is another "the budget": nothing agrees after the head.
    previous = _words("the budget is the budget", start=2.0)
    current = _words("so the budget is the", start=0.2)
    assert agreed_prefix(previous, current, audio_s=4.0) is None


def test_the_last_words_are_committed_once_quiet_follows_them() -> None:
    # Both hypotheses end at "quarter", and the audio goes on a second and more after it:
    # a quieter voice the decoder has not read yet. The last word no longer waits for it.
    previous = _words("so the budget for next quarter", step=0.5)
    current = _words("so the budget for next quarter", step=0.5)
    end = current[-1].end
    assert agreed_prefix(previous, current, audio_s=end + 0.9) is None
    agreement = agreed_prefix(previous, current, audio_s=end + 1.2)
    assert agreement is not None and agreement.text == "so the budget for next quarter"
    assert agreement.cut_from == pytest.approx(end)
    # Right after it: the quiet may be a whisper the decoder has not read, which must go whole
    # with the rest.
    assert end < agreement.cut_to <= end + 0.2
    # The previous hypothesis read a word after it: not quiet.
    previous = _words("so the budget for next quarter is", step=0.5)
    assert agreed_prefix(previous, current, audio_s=end + 1.2) is None


def test_a_word_at_the_end_of_the_audio_is_never_agreed() -> None:
    previous = _words("so the budget for next quarter", step=0.6)
    current = _words("so the budget for next quarter", step=0.6)
    # The audio ends 0.1 s after "next": it and everything after may still be cut off.
    agreement = agreed_prefix(previous, current, audio_s=current[4].end + 0.1)
    assert agreement is not None and agreement.text == "so the budget for"


def test_first_hypothesis_agrees_with_nothing() -> None:
    assert agreed_prefix([], _words("so the budget for next quarter"), audio_s=10.0) is None


@pytest.mark.parametrize(
    ("text", "tail", "kept"),
    [
        ("sound or options kind of recording", ("sound", "or", "options"), "kind of recording"),
        ("options, kinds of recording", ("or", "options", "kind"), "of recording"),
        ("kinds of recording", ("options", "kind"), "of recording"),
        ("worked on it", ("we", "work"), "on it"),
        ("then we left", ("saw", "them"), "then we left"),  # another word, not a re-read
        ("they said so", ("and", "the"), "they said so"),  # too short to tell
        ("the plan", (), "the plan"),
    ],
)
def test_the_rest_of_a_commit_drops_its_reread_of_the_committed_end(
    text: str, tail: tuple[str, ...], kept: str
) -> None:
    assert drop_repeated(text, tail) == kept


def test_words_of_the_overlap_are_the_committed_part_read_again() -> None:
    # The rest starts 0.4 s before the cut: a word ending by then was committed already.
    words = [
        WordTiming(" kinds", 0.0, 0.42),
        WordTiming(" of", 0.6, 0.8),
        WordTiming(" recording", 0.85, 1.4),
    ]
    assert [w.word for w in drop_repeated_words(words, ("options", "kind"))] == [
        " of",
        " recording",
    ]
    assert [w.word for w in drop_repeated_words(words, ("sound", "or"))] == [" of", " recording"]
    # A short word just after the cut is new.
    fresh = [WordTiming(" I", 0.41, 0.52), *words[1:]]
    assert [w.word for w in drop_repeated_words(fresh, ("sound", "or"))] == [
        " I",
        " of",
        " recording",
    ]
    # Not the rest of a commit (no tail): nothing is dropped.
    assert drop_repeated_words(words, ()) == tuple(words)


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("He began a confused complaint against the wizard.", True),
        ("Is that the budget for next quarter?", True),
        ("Okay!", True),
        ('He said "we ship it."', True),
        ("and that's the plan.)", True),
        ("He began a confused complaint against the", False),
        ("so the budget for next quarter,", False),
        ("There's gonna be no...", False),  # trailing off
        ("...", False),
        ("", False),
    ],
)
def test_a_pause_cuts_only_after_a_whole_sentence(text: str, ends: bool) -> None:
    cut = sentence_at_pause(text, DecodeStats(0.05, -0.3, 1.2), pause_at_s=2.4, audio_s=2.56)
    assert (cut is not None) is ends
    if cut is not None:
        assert cut.at_pause and cut.text == text.strip()
        assert (cut.cut_from, cut.cut_to) == (2.4, 2.56)


@pytest.mark.parametrize(
    ("avg_logprob", "no_speech_prob", "pause_at_s", "why"),
    [
        (-0.95, 0.05, 2.4, "the decoder is unsure of the text"),
        (-0.3, 0.7, 2.4, "the decoder thinks nobody spoke"),
        (-0.3, 0.05, 0.6, "under a second of audio before the pause"),
    ],
)
def test_a_pause_does_not_cut_when(
    avg_logprob: float, no_speech_prob: float, pause_at_s: float, why: str
) -> None:
    stats = DecodeStats(no_speech_prob, avg_logprob, 1.2)
    cut = sentence_at_pause("Okay, let's ship it.", stats, pause_at_s, 3.0)
    assert cut is None, why
