"""The conversational speech set, the stress grid built from it, and the stress scorer.

The real packaged clips throughout (decoded once per module by ffmpeg), plus a few synthetic
clips where an exact property (a level, a clipped mix) is easier to force.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from agent.transcribe.normalize import normalize_text
from testmeeting import packaged_speech, stress
from testmeeting.packaged_speech import Clip

pytestmark = pytest.mark.unit

RATE = stress.SAMPLE_RATE
MAX_BYTES = 2_500_000
LICENCES = ("MIT", "CC BY 4.0", "CC0 1.0", "Public domain")
SEED = 3


@pytest.fixture(scope="module")
def cases() -> list[stress.Case]:
    return stress.grid(SEED)


def _level_differences(case: stress.Case) -> list[float]:
    stems = case.stems()
    first = stress.active_level_db(stems[0])
    return [stress.active_level_db(stem) - first for stem in stems]


# -- the conversational set -------------------------------------------------------------------


def test_the_conversational_set_is_small_licensed_and_sourced() -> None:
    folder = packaged_speech.CONVERSATIONAL_DIR
    rows = packaged_speech.conversational_rows()
    files = sorted(p.name for p in folder.iterdir())
    assert sum((folder / f).stat().st_size for f in files) <= MAX_BYTES
    stems = [row["file"].removesuffix(".opus") for row in rows]
    assert files == sorted(
        ["MANIFEST.tsv", *(f"{s}.opus" for s in stems), *(f"{s}.txt" for s in stems)]
    )
    for row in rows:
        assert row["license"].startswith(LICENCES), row["file"]
        assert row["source_repo"].count("/") == 1 and row["source_path"], row["file"]
        assert re.fullmatch(r"[0-9a-f]{40}", row["commit"]), row["file"]
        assert row["speaker"] and row["what"] and row["attribution"], row["file"]
        assert (folder / row["file"]).read_bytes()[:4] == b"OggS"
    assert {row["speaker"] for row in rows} >= {"mfa-1", "ami-FEE013", "ami-FEE016", "ami-MEO015"}


def test_the_loader_decodes_every_clip_without_copying() -> None:
    rows = {row["file"].removesuffix(".opus"): row for row in packaged_speech.conversational_rows()}
    clips = packaged_speech.conversational_clips()
    assert [clip.name for clip in clips] == list(rows)
    for clip in clips:
        assert clip.samples.dtype == np.int16 and clip.samples.ndim == 1
        assert not clip.samples.flags.owndata  # a view of the decoded bytes
        # Opus keeps the length to the sample after its pre-skip; allow one 20 ms frame.
        assert clip.duration == pytest.approx(float(rows[clip.name]["duration_s"]), abs=0.02)
        assert np.abs(clip.samples.astype(np.int32)).max() > 500, clip.name
        assert normalize_text(clip.text), clip.name
        assert clip.speaker == rows[clip.name]["speaker"] and clip.language == "en"
    # Fillers are kept in the references as spoken (the normaliser drops them).
    cold = next(clip for clip in clips if clip.name == "mfa_cold_corpus")
    assert cold.text.startswith("uh so") and not normalize_text(cold.text).startswith("uh")


def test_every_packaged_clip_has_a_speaker() -> None:
    files = {row["file"] for row in packaged_speech.packaged_rows()}
    assert files == set(packaged_speech.PACKAGED_SPEAKERS)
    english = packaged_speech.packaged_clips("en")
    assert english and all(clip.language == "en" for clip in english)
    assert len({clip.speaker for clip in english}) >= 6


# -- the generator ----------------------------------------------------------------------------


def test_the_grid_crosses_every_level_with_every_gap(cases: list[stress.Case]) -> None:
    kinds = {kind: [c for c in cases if c.kind == kind] for kind in {c.kind for c in cases}}
    assert set(kinds) == {"pair", "triple", "quiet_after_loud", "pause_in_monologue"}
    cells = set(itertools.product(stress.LEVELS_DB, stress.GAPS_S))
    assert {(c.intervals[1].level_db, c.gaps_s[0]) for c in kinds["pair"]} == cells
    assert {(c.intervals[1].level_db, c.gaps_s[0]) for c in kinds["triple"]} == cells
    quiet = set(itertools.product(stress.QUIET_LEVELS_DB, stress.GAPS_S))
    assert {(c.intervals[1].level_db, c.gaps_s[0]) for c in kinds["quiet_after_loud"]} == quiet
    assert len({c.name for c in cases}) == len(cases)
    for case in cases:
        speakers = [interval.speaker for interval in case.intervals]
        assert len(set(speakers)) == len(speakers), case.name  # never a voice with itself
    # The loud reading is LJ Speech, the quiet voice one of the conversational set's.
    for case in kinds["quiet_after_loud"]:
        loud, quiet_clip = case.intervals
        assert loud.clip == "LJ001-0001+LJ001-0002+LJ001-0003" and loud.speaker == "lj"
        assert quiet_clip.what and quiet_clip.level_db < 0


def test_gaps_and_overlaps_are_exact(cases: list[stress.Case]) -> None:
    for case in cases:
        assert len(case.gaps_s) == len(case.intervals) - 1
        for (a, b), gap in zip(itertools.pairwise(case.intervals), case.gaps_s, strict=True):
            assert b.start - a.end == pytest.approx(gap, abs=1e-9), case.name
            assert round((b.start - a.end) * RATE) == round(gap * RATE)
        assert case.intervals[-1].end < case.duration_s


def test_levels_differ_by_the_asked_decibels(cases: list[stress.Case]) -> None:
    for case in cases:
        asked = [interval.level_db for interval in case.intervals]
        measured = _level_differences(case)
        assert measured == pytest.approx(asked, abs=0.5), case.name


def test_the_track_is_the_sum_of_its_stems_and_never_clips(cases: list[stress.Case]) -> None:
    for case in cases[::7]:
        track = case.samples
        assert track.dtype == np.int16 and len(track) == round(case.duration_s * RATE)
        total = np.sum([stem.astype(np.int64) for stem in case.stems()], axis=0)
        assert np.abs(track.astype(np.int64) - total).max() <= len(case.pieces)
        assert np.abs(track.astype(np.int32)).max() < 32767
        # The first voice starts after the lead-in silence.
        assert not track[: round(0.2 * RATE)].any()


def test_a_monologue_gets_two_seconds_of_silence_between_words(cases: list[stress.Case]) -> None:
    paused = [c for c in cases if c.kind == "pause_in_monologue"]
    assert len(paused) >= 10
    for case in paused:
        assert case.pause_at_s is not None
        monologue = case.intervals[-1]
        assert monologue.end - monologue.start >= stress.MONOLOGUE_MIN_S + stress.PAUSE_S
        share = (case.pause_at_s - monologue.start) / (monologue.end - monologue.start - 2.0)
        assert 0.25 <= share <= 0.75, case.name
        stem = case.stems()[-1]
        at = round(case.pause_at_s * RATE)
        assert not stem[at : at + round(stress.PAUSE_S * RATE)].any(), case.name
        # Both sides of the pause are speech of the same clip.
        assert stem[at - 4000 : at].any() and stem[at + 32000 : at + 36000].any()


def test_the_grid_is_deterministic_per_seed(cases: list[stress.Case]) -> None:
    again = stress.grid(SEED)
    assert [c.intervals for c in again] == [c.intervals for c in cases]
    for first, second in zip(cases[::11], again[::11], strict=True):
        assert np.array_equal(first.samples, second.samples)
    other = stress.grid(SEED + 1)
    assert [c.intervals for c in other] != [c.intervals for c in cases]


def test_sample_is_a_fixed_subset_with_every_kind(cases: list[stress.Case]) -> None:
    chosen = stress.sample(6, SEED)
    assert len(chosen) == 6
    assert [c.name for c in chosen] == [c.name for c in stress.sample(6, SEED)]
    assert {c.name for c in chosen} <= {c.name for c in cases}
    assert {c.kind for c in chosen[:4]} == {
        "pair",
        "triple",
        "quiet_after_loud",
        "pause_in_monologue",
    }


def _tone_clip(name: str, speaker: str, seconds: float, amplitude: float) -> Clip:
    """Half a second of silence, a 220 Hz tone with a short loud click, half a second of silence."""
    t = np.arange(round(seconds * RATE)) / RATE
    tone = amplitude * np.sin(2 * np.pi * 220 * t)
    tone[RATE // 2 : RATE // 2 + 40] = 32000  # a peak far above the active level
    quiet = np.zeros(RATE // 2)
    samples = np.concatenate([quiet, tone, quiet]).astype(np.int16)
    return Clip(name, samples, f"{name} words here", speaker, "en", "synthetic")


def test_a_mix_that_would_clip_is_turned_down_whole() -> None:
    clips = [
        _tone_clip("alpha", "a", 3.0, 20000),
        _tone_clip("bravo", "b", 2.0, 8000),
        _tone_clip("charlie", "c", 2.5, 3000),
    ]
    cases = stress.grid(0, levels_db=(12.0, -12.0), gaps_s=(-0.3, 0.4), clips=clips)
    assert [c.kind for c in cases] == ["pair"] * 4 + ["triple"] * 4  # no LJ, no quiet set
    for case in cases:
        assert np.abs(case.samples.astype(np.int32)).max() < 32767
        asked = [interval.level_db for interval in case.intervals]
        assert _level_differences(case) == pytest.approx(asked, abs=0.5), case.name
    with pytest.raises(ValueError, match="three speakers"):
        stress.grid(0, clips=clips[:2])


# -- the scorer -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(cases: list[stress.Case]) -> stress.Case:
    """A pair whose references share no word and repeat none: every verdict is unambiguous."""
    for case in cases:
        if case.kind != "pair":
            continue
        a, b = (normalize_text(interval.text).split() for interval in case.intervals)
        distinct = len(set(a)) == len(a) and len(set(b)) == len(b)
        if distinct and len(a) >= 4 and len(b) >= 4 and not set(a) & set(b):
            return case
    raise AssertionError("no pair with disjoint references")


def test_perfect_finals_recall_everything_and_span_nothing(pair: stress.Case) -> None:
    finals = [(iv.text, iv.start, iv.end) for iv in pair.intervals]
    result = stress.score(pair, finals, normalize=normalize_text)
    assert result.recall == (1.0, 1.0) and result.spanning == 0
    # Split at a word inside each clip, the finals still score the same.
    split = []
    for iv in pair.intervals:
        words = iv.text.split()
        middle = (iv.start + iv.end) / 2
        split += [(" ".join(words[:2]), iv.start, middle), (" ".join(words[2:]), middle, iv.end)]
    assert stress.score(pair, split, normalize=normalize_text).recall == (1.0, 1.0)


def test_a_final_merging_two_clips_is_counted(pair: stress.Case) -> None:
    a, b = pair.intervals
    merged = [(f"{a.text} {b.text}", a.start, b.end)]
    result = stress.score(pair, merged, normalize=normalize_text)
    assert result.recall == (1.0, 1.0) and result.spanning == 1
    # One word of the next speaker swallowed at the end of a final is not a span.
    first_of_b = b.text.split()[0]
    leaky = [(f"{a.text} {first_of_b}", a.start, b.start + 0.3), (b.text, b.start, b.end)]
    assert stress.score(pair, leaky, normalize=normalize_text).spanning == 0
    # Two of them are.
    two_of_b = " ".join(normalize_text(b.text).split()[:2])
    leaky = [(f"{a.text} {two_of_b}", a.start, b.start + 0.6)]
    assert stress.score(pair, leaky, normalize=normalize_text).spanning == 1


def test_a_missing_clip_scores_zero(pair: stress.Case) -> None:
    a = pair.intervals[0]
    result = stress.score(pair, [(a.text, a.start, a.end)], normalize=normalize_text)
    assert result.recall == (1.0, 0.0) and result.spanning == 0
    assert result.words[1] == ()
    assert stress.score(pair, [], normalize=normalize_text).recall == (0.0, 0.0)


def test_recall_counts_words_in_order_and_ignores_wrong_ones(pair: stress.Case) -> None:
    a, b = pair.intervals
    words = normalize_text(b.text).split()
    half = len(words) // 2
    # The second half of b, said before its first half: only one half is in order.
    swapped = " ".join(words[half:] + words[:half])
    finals = [(a.text, a.start, a.end), (f"{swapped} zebra zebra", b.start, b.end)]
    result = stress.score(pair, finals, normalize=normalize_text)
    assert result.recall[0] == 1.0
    assert result.recall[1] == pytest.approx(max(half, len(words) - half) / len(words))
    # Timing off by a second does not move words to the wrong clip: they are aligned.
    late = [(a.text, a.start + 1.0, a.end + 1.0), (b.text, b.start + 1.0, b.end + 1.0)]
    assert stress.score(pair, late, normalize=normalize_text).recall == (1.0, 1.0)


def test_the_final_holding_each_clips_last_recovered_word_is_named(pair: stress.Case) -> None:
    a, b = pair.intervals
    a_words, b_words = (normalize_text(iv.text).split() for iv in pair.intervals)
    # Passed out of time order: indices refer to the list as passed, not the sorted one.
    finals = [
        (" ".join(b_words[2:]), b.start + 0.5, b.end),  # 0: b's end
        (" ".join(a_words[:2]), a.start, a.start + 0.5),  # 1: a's head
        (" ".join(a_words[2:] + b_words[:2]), a.start + 0.5, b.start + 0.5),  # 2: a's end
    ]
    result = stress.score(pair, finals, normalize=normalize_text)
    assert result.recall == (1.0, 1.0)
    assert result.last_final == (2, 0)
    # b's tail never said: its last recovered word is in the final that holds b's head; a
    # clip with nothing recovered has none.
    cut = [(a.text, a.start, a.end), (" ".join(b_words[:2]), b.start, b.start + 0.5)]
    assert stress.score(pair, cut, normalize=normalize_text).last_final == (0, 1)
    assert stress.score(pair, cut[:1], normalize=normalize_text).last_final == (0, None)
