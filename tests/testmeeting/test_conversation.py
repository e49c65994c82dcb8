"""Conversation scenarios: natural turn-taking laid out from real speech, with ground truth."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from bench.conversation import Final, score, stream_items
from meetbot.demo.scenario import build_conversation_scenario
from testmeeting.conversation import build_conversation

pytestmark = pytest.mark.unit


def test_natural_conversation_has_overlaps_backchannels_and_a_paused_monologue(
    speech: Path,
) -> None:
    talk = build_conversation(speech)
    floor = [t for t in talk.turns if not t.backchannel]
    gaps = [b.voiced_start - a.voiced_end for a, b in itertools.pairwise(floor)]
    assert all(-0.3 - 1e-6 <= gap <= 0.3 + 1e-6 for gap in gaps), gaps
    assert any(gap < 0 for gap in gaps)  # someone starts before the other has finished
    for turn in (t for t in talk.turns if t.backchannel):
        over = [t for t in floor if t.voiced_start < turn.voiced_start < t.voiced_end]
        assert over and over[0].speaker != turn.speaker
    monologue = max(floor, key=lambda t: t.voiced_end - t.voiced_start)
    assert 20.0 <= monologue.voiced_end - monologue.voiced_start <= 30.0
    pauses = [
        b.voiced_start - a.voiced_end
        for a, b in zip(monologue.pieces, monologue.pieces[1:], strict=False)
    ]
    assert pauses and all(0.3 - 1e-6 <= p <= 0.4 + 1e-6 for p in pauses)
    assert 55.0 <= talk.duration <= 90.0
    # Per-speaker tracks add up to the mixed one.
    assert len(talk.mixed()) == len(talk.track("Linda"))


def test_polite_style_leaves_gaps_and_layouts_feed_the_right_tracks(speech: Path) -> None:
    talk = build_conversation(speech, "polite")
    gaps = [b.voiced_start - a.voiced_end for a, b in itertools.pairwise(talk.turns)]
    assert all(gap >= 1.0 for gap in gaps)
    per_speaker = stream_items(talk, "per_speaker", 100.0)
    assert {i.track_id for i in per_speaker if hasattr(i, "track_id")} == {
        f"track-{n}" for n in talk.speakers
    }
    mixed = stream_items(talk, "mixed", 100.0)
    assert sum(1 for i in mixed if hasattr(i, "speaking")) == 2 * len(talk.turns)


def test_scoring_finds_lost_turns_spanning_finals_and_wrong_names(speech: Path) -> None:
    talk = build_conversation(speech, "polite")
    perfect = [
        Final(t.text, t.speaker, t.voiced_start, t.voiced_end, t.voiced_end + 0.5)
        for t in talk.turns
    ]
    good = score(talk, perfect, "mixed")
    assert good.lost == [] and good.spanning == [] and good.wer == 0.0
    assert good.speaker_accuracy == 1.0 and good.delays == [0.5] * good.turns
    first, second = talk.turns[0], talk.turns[1]
    glued = Final(
        f"{first.text} {second.text}", first.speaker, first.voiced_start, second.voiced_end
    )
    bad = score(talk, [glued], "mixed")
    assert glued in bad.spanning
    assert second in bad.lost
    assert bad.speaker_accuracy < 0.5


def test_the_demo_can_play_the_conversation(speech: Path) -> None:
    demo = build_conversation_scenario("zoom", speech, "conversation")
    names = {p.name for p in demo.scenario.participants}
    assert {"Linda", "Sam", "Chris"} <= names
    assert len(demo.references) == len(demo.voiced_ends) == len(build_conversation(speech).pieces)
