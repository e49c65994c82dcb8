"""Utterance cutting from VAD probabilities, on the frames' own clock."""

from __future__ import annotations

import numpy as np
import pytest

from agent.transcribe.segmenter import (
    Discarded,
    Ended,
    Resume,
    SegmenterEvent,
    SegmenterOptions,
    Speculate,
    Started,
    UtteranceSegmenter,
)
from agent.transcribe.vad import WINDOW

pytestmark = pytest.mark.unit

W_S = WINDOW / 16_000  # seconds per window


def _run(segmenter: UtteranceSegmenter, pattern: list[float]) -> list[SegmenterEvent]:
    """Push one window per probability; each window's samples carry its index."""
    events: list[SegmenterEvent] = []
    for prob in pattern:
        samples = np.full(WINDOW, segmenter.samples_seen // WINDOW, dtype=np.float32)
        events += segmenter.push(samples, np.array([prob], dtype=np.float32))
    return events


def _windows(seconds: float) -> int:
    return round(seconds / W_S)


def test_utterance_is_speculated_then_ended_with_the_same_audio() -> None:
    seg = UtteranceSegmenter()
    pattern = [0.0] * 20 + [0.9] * _windows(1.0) + [0.0] * _windows(1.0)
    events = _run(seg, pattern)
    kinds = [type(e) for e in events]
    assert kinds == [Started, Speculate, Ended]
    started, speculate, ended = events
    assert isinstance(started, Started) and isinstance(ended, Ended)
    assert isinstance(speculate, Speculate)
    # Pre-roll of ~0.3 s (9 windows) before the first voiced window.
    assert started.start_sample == (20 - 9) * WINDOW
    assert ended.speculated
    np.testing.assert_array_equal(ended.audio, speculate.audio)
    assert ended.lead == 9 * WINDOW
    assert ended.voiced_s == pytest.approx(_windows(1.0) * W_S)
    assert ended.trail == 5 * WINDOW  # 0.16 s of silence kept after speech


def test_speech_resuming_before_the_endpoint_continues_the_utterance() -> None:
    seg = UtteranceSegmenter()
    pattern = [0.9] * 20 + [0.1] * 8 + [0.9] * 20 + [0.0] * 30
    events = _run(seg, pattern)
    assert [type(e) for e in events] == [Started, Speculate, Resume, Speculate, Ended]
    ended = events[-1]
    assert isinstance(ended, Ended)
    assert ended.utterance == 0
    assert len(ended.audio) == (20 + 8 + 20 + 5) * WINDOW


def test_clicks_shorter_than_min_speech_are_not_utterances() -> None:
    seg = UtteranceSegmenter()
    events = _run(seg, [0.0] * 10 + [0.9] * 3 + [0.0] * 30)
    assert not any(isinstance(e, Ended) for e in events)
    assert [type(e) for e in events] == [Started, Speculate, Discarded]


def test_a_short_word_whose_consonants_sit_near_the_threshold_is_kept() -> None:
    """Silero's probabilities of a real "six" said 0.2 s after another speaker's word (issue
    19's soak lost it): 5 windows at 0.5 or more, 7 by the hysteresis. It is a word, not a
    click, and must reach the decoder."""
    six = [0.77, 0.84, 0.68, 0.33, 0.17, 0.49, 0.56, 0.53, 0.48, 0.48, 0.3, 0.22, 0.12, 0.06]
    events = _run(UtteranceSegmenter(), [0.0] * 10 + six + [0.02] * 30)
    assert [type(e) for e in events] == [Started, Speculate, Ended]
    ended = events[-1]
    assert isinstance(ended, Ended)
    assert ended.voiced_s == pytest.approx(5 * W_S)


def test_hysteresis_keeps_mid_probabilities_inside_speech() -> None:
    seg = UtteranceSegmenter(SegmenterOptions(threshold=0.5, neg_threshold=0.35))
    events = _run(seg, [0.9] * 10 + [0.4] * 40 + [0.0] * 30)
    ended = [e for e in events if isinstance(e, Ended)]
    assert len(ended) == 1
    assert not any(isinstance(e, Speculate) for e in events[:-2])
    assert len(ended[0].audio) == (10 + 40 + 5) * WINDOW


def test_long_speech_is_split_at_its_quietest_window() -> None:
    opts = SegmenterOptions(max_utterance_s=10.0, split_search_s=4.0)
    seg = UtteranceSegmenter(opts)
    speech = [0.9] * _windows(12.0)
    speech[_windows(8.0)] = 0.4  # a breath 8 s in
    events = _run(seg, [*speech, *([0.0] * 30)])
    ended = [e for e in events if isinstance(e, Ended)]
    assert len(ended) == 2
    first, second = ended
    assert len(first.audio) == _windows(8.0) * WINDOW
    assert second.start_sample == first.start_sample + len(first.audio)
    # Nothing lost or doubled at the cut.
    assert first.audio[-1] + 1 == second.audio[0]


def test_flush_ends_an_open_utterance() -> None:
    seg = UtteranceSegmenter()
    _run(seg, [0.9] * 20)
    tail = seg.push(np.zeros(100, dtype=np.float32), np.zeros(0, dtype=np.float32))
    assert tail == []
    events = seg.flush()
    assert len(events) == 1 and isinstance(events[0], Ended)
    assert len(events[0].audio) == 20 * WINDOW + 100
    assert not seg.speaking


def test_a_short_pause_in_long_speech_commits_without_waiting_for_the_endpoint() -> None:
    seg = UtteranceSegmenter(SegmenterOptions(soft_max_s=4.0))
    short = [0.9] * _windows(2.0) + [0.1] * 7 + [0.9] * _windows(1.0)
    long = [0.9] * _windows(4.5) + [0.1] * 7 + [0.9] * _windows(1.0) + [0.0] * 30
    events = _run(seg, short + long)
    ended = [e for e in events if isinstance(e, Ended)]
    # The first pause (inside 3 s of speech) is no commit point; the one after 4.5 s is one,
    # 0.16 s into the pause, with exactly the speculated audio; then the tail ends normally.
    assert len(ended) == 2
    first, second = ended
    assert first.speculated
    assert len(first.audio) == (len(short) + _windows(4.5) + 5) * WINDOW
    assert second.start_sample > first.start_sample + len(first.audio) - 10 * WINDOW


def test_a_cut_ends_the_utterance_at_the_quietest_window_before_the_change() -> None:
    seg = UtteranceSegmenter()
    pattern = [0.9] * _windows(3.0)
    pattern[_windows(2.0)] = 0.2  # the two voices barely touch here
    _run(seg, pattern)
    at = _windows(2.2) * WINDOW
    events = seg.cut(at, search_before=_windows(0.6) * WINDOW, min_part=_windows(0.5) * WINDOW)
    assert [type(e) for e in events] == [Ended, Started]
    ended, started = events
    assert isinstance(ended, Ended) and isinstance(started, Started)
    assert len(ended.audio) == _windows(2.0) * WINDOW
    assert started.start_sample == _windows(2.0) * WINDOW
    assert seg.speaking
    # Too close to the start of the new utterance: nothing to cut.
    assert seg.cut(started.start_sample + WINDOW, _windows(0.6) * WINDOW, WINDOW * 10) == []


def _push_with_evidence(
    segmenter: UtteranceSegmenter, pattern: list[float], loud: bool | list[bool] = True
) -> list[SegmenterEvent]:
    events: list[SegmenterEvent] = []
    louds = [loud] * len(pattern) if isinstance(loud, bool) else loud
    for prob, is_loud in zip(pattern, louds, strict=True):
        samples = np.zeros(WINDOW, dtype=np.float32)
        events += segmenter.push(
            samples, np.array([prob], dtype=np.float32), np.array([is_loud], dtype=np.bool_)
        )
    return events


# The unheard counter on its own: without the level start (tested below), which would open
# an utterance on these loud windows.
_VAD_ONLY = SegmenterOptions(threshold=0.5, evidence_threshold=0.15, level_open_s=None)


def test_voice_the_vad_never_opened_for_is_counted_unheard() -> None:
    seg = UtteranceSegmenter(_VAD_ONLY)
    # 1 s of windows at 0.3: voice by the evidence test, never an utterance.
    _push_with_evidence(seg, [0.0] * 10 + [0.3] * _windows(1.0) + [0.0] * _windows(1.0))
    seg.flush()
    assert seg.unheard_s == pytest.approx(_windows(1.0) * W_S)


@pytest.mark.parametrize("every", [2, 3, 4])
def test_voice_the_vad_hears_only_in_scattered_windows_is_counted_unheard(every: int) -> None:
    # Whispered speech: a window in two, three or four reaches the evidence threshold, never
    # six in a row (mfa_whisper: 18 of 115 windows at 0.15 or more, in runs of 1-5).
    seg = UtteranceSegmenter(_VAD_ONLY)
    pattern = ([0.3] + [0.05] * (every - 1)) * (_windows(2.0) // every)
    _push_with_evidence(seg, [0.0] * 10 + pattern + [0.0] * _windows(1.0))
    seg.flush()
    assert seg.unheard_s == pytest.approx(pattern.count(0.3) * W_S)


def test_blips_farther_apart_than_a_bridge_stay_blips() -> None:
    seg = UtteranceSegmenter(_VAD_ONLY)
    # Three windows of evidence, then six without, over and over: each blip stands alone.
    _push_with_evidence(seg, [0.0] * 10 + ([0.3] * 3 + [0.0] * 6) * 8 + [0.0] * 20)
    seg.flush()
    assert seg.unheard_s == 0.0


def test_quiet_windows_and_short_blips_are_not_unheard_voice() -> None:
    seg = UtteranceSegmenter(_VAD_ONLY)
    # Loud but improbable, probable but not loud, and a 0.1 s blip: none of it is lost voice.
    _push_with_evidence(seg, [0.05] * _windows(1.0))
    _push_with_evidence(seg, [0.3] * _windows(1.0), loud=False)
    _push_with_evidence(seg, [0.0] * 10 + [0.3] * 3 + [0.0] * 20)
    seg.flush()
    assert seg.unheard_s == 0.0


def test_utterances_carry_their_evidence_and_a_discarded_one_says_what_it_lost() -> None:
    seg = UtteranceSegmenter()
    events = _push_with_evidence(seg, [0.0] * 12 + [0.9] * _windows(1.0) + [0.0] * _windows(1.0))
    ended = [e for e in events if isinstance(e, Ended)]
    assert len(ended) == 1 and ended[0].evidence_s == pytest.approx(_windows(1.0) * W_S)
    rest = _windows(1.0)
    click = _push_with_evidence(seg, [0.9, 0.3, 0.3] + [0.0] * rest, [True] * 3 + [False] * rest)
    discarded = [e for e in click if isinstance(e, Discarded)]
    assert len(discarded) == 1 and discarded[0].evidence_s == pytest.approx(3 * W_S)
    assert seg.unheard_s == 0.0


def _whisper(seconds: float, every: int, loud_share: float) -> tuple[list[float], list[bool]]:
    """Windows of speech Silero scores as silence: a window in ``every`` reaches the evidence
    threshold (0.2), the rest 0.05; ``loud_share`` of them stand above the noise floor, the
    others fall between words. MFA's whispered and falsetto clips, in the conversation: 5-29 %
    of windows at 0.15 or more, none at 0.5, 64-85 % loud."""
    n = _windows(seconds)
    probs = [0.2 if i % every == 0 else 0.05 for i in range(n)]
    quiet_every = max(2, round(1 / max(1e-6, 1 - loud_share)))
    louds = [i % every == 0 or i % quiet_every != quiet_every - 1 for i in range(n)]
    return probs, louds


@pytest.mark.parametrize("every", [3, 5, 10])
@pytest.mark.parametrize("loud_share", [0.65, 0.85, 1.0])
def test_speech_the_vad_scores_as_silence_is_opened_by_its_level(
    every: int, loud_share: float
) -> None:
    seg = UtteranceSegmenter()
    probs, louds = _whisper(2.5, every, loud_share)
    quiet = _windows(1.0)
    events = _push_with_evidence(
        seg, [0.0] * quiet + probs + [0.0] * quiet, [False] * quiet + louds + [False] * quiet
    )
    started = [e for e in events if isinstance(e, Started)]
    ended = [e for e in events if isinstance(e, Ended)]
    assert len(started) == len(ended) == 1, events
    assert started[0].by_level and ended[0].by_level
    # It holds the whole whisper from its first window (its voice starts there: the lead is
    # the pre-roll only), and the level held it voiced.
    assert started[0].start_sample <= quiet * WINDOW
    assert ended[0].start_sample + ended[0].lead == quiet * WINDOW
    assert ended[0].start_sample + len(ended[0].audio) >= (quiet + len(probs) - 3) * WINDOW
    assert ended[0].voiced_s >= 0.6 * len(probs) * W_S
    assert seg.unheard_s == 0.0


@pytest.mark.parametrize(
    "probs",
    [
        [0.02] * _windows(3.0),  # white or brown noise, a hum: loud, never probable
        [0.2, 0.2] + [0.02] * _windows(3.0),  # two probable windows in 3 s
        [0.3] * 5,  # a loud 0.16 s blip: shorter than ``level_open_s``
    ],
    ids=["noise", "two_blips_in_noise", "short_blip"],
)
def test_loud_audio_without_voice_evidence_opens_nothing(probs: list[float]) -> None:
    seg = UtteranceSegmenter()
    quiet = [0.0] * _windows(1.0)
    events = _push_with_evidence(
        seg,
        quiet + probs + quiet,
        [False] * len(quiet) + [True] * len(probs) + [False] * len(quiet),
    )
    events += seg.flush()
    assert events == []


def test_without_the_level_start_a_whisper_is_only_counted_unheard() -> None:
    seg = UtteranceSegmenter(_VAD_ONLY)
    probs, louds = _whisper(2.5, 3, 1.0)
    quiet = _windows(1.0)
    events = _push_with_evidence(
        seg, [0.0] * quiet + probs + [0.0] * quiet, [False] * quiet + louds + [False] * quiet
    )
    assert events == []
    seg.flush()
    assert seg.unheard_s > 0.0
