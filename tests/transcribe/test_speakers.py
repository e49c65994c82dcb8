"""Active-speaker intervals matched to segment times."""

from __future__ import annotations

import pytest

from agent.capture.audio import SpeakerActivity
from agent.transcribe.speakers import FloorChanges, SpeakerTimeline, TrackNames, floor_holder_for

pytestmark = pytest.mark.unit


def test_max_overlap_wins() -> None:
    timeline = SpeakerTimeline(
        [
            SpeakerActivity("Ada", True, 10.0),
            SpeakerActivity("Ada", False, 14.0),
            SpeakerActivity("Bob", True, 13.5),
            SpeakerActivity("Bob", False, 20.0),
        ]
    )
    assert timeline.speaker_for(10.5, 14.2) == "Ada"
    assert timeline.speaker_for(13.6, 19.0) == "Bob"
    assert timeline.speaker_for(30.0, 31.0) is None


def test_open_interval_and_out_of_order_changes() -> None:
    timeline = SpeakerTimeline()
    timeline.add(SpeakerActivity("Cy", False, 5.0))
    timeline.add(SpeakerActivity("Cy", True, 2.0))
    timeline.add(SpeakerActivity("Di", True, 6.0))
    assert timeline.intervals("Cy", until=10.0) == [(2.0, 5.0)]
    assert timeline.speaker_for(6.5, 9.0) == "Di"
    timeline.forget_before(5.5)
    assert timeline.intervals("Cy", until=10.0) == []
    assert timeline.speaker_for(6.5, 9.0) == "Di"


def test_the_floor_changes_hands_when_someone_else_speaks_or_a_backchannel_ends() -> None:
    floor = FloorChanges()
    assert floor.observe(SpeakerActivity("Ada", True, 1.0)) is None  # the first voice
    assert floor.observe(SpeakerActivity("Ada", False, 2.0)) is None
    assert floor.observe(SpeakerActivity("Ada", True, 2.5)) is None  # Ada again
    assert floor.observe(SpeakerActivity("Bob", True, 4.0)) == 4.0  # Bob says "yeah" over Ada
    assert floor.observe(SpeakerActivity("Bob", False, 4.6)) == 4.6  # back to Ada
    assert floor.observe(SpeakerActivity("Ada", False, 6.0)) is None  # nobody else on


def _backchannel() -> SpeakerTimeline:
    """Linda speaks 10-20 s; Chris says something over her, his tile lit 14.3-16.4 s."""
    return SpeakerTimeline(
        [
            SpeakerActivity("Linda", True, 10.2),
            SpeakerActivity("Chris", True, 14.3),
            SpeakerActivity("Chris", False, 16.4),
            SpeakerActivity("Linda", False, 20.3),
        ]
    )


def test_a_backchannel_holds_the_floor_while_its_indicator_is_on() -> None:
    timeline = _backchannel()
    assert timeline.speaker_for(13.8, 16.2) == "Linda"  # lit longest: the one said over
    assert floor_holder_for(timeline, 13.8, 16.2) == "Chris"
    assert floor_holder_for(timeline, 10.0, 13.8) == "Linda"
    assert floor_holder_for(timeline, 16.2, 20.0) == "Linda"
    assert floor_holder_for(timeline, 30.0, 31.0) is None


def test_per_participant_tracks_are_named_by_who_the_indicators_tie_to_them() -> None:
    names = TrackNames(_backchannel())
    # Chris's final comes first; his tile lit a poll late, so only Linda's shows at its start.
    names.observe("track-c", 14.0, 16.2)
    assert names.name("track-c", 14.0, 16.2) == "Chris"
    assert names.owner("track-c") is None
    names.observe("track-l", 10.0, 16.5)
    names.observe("track-l", 16.5, 20.0)
    assert names.owner("track-l") == "Linda"
    assert names.name("track-l", 13.0, 16.5) == "Linda"  # her own, Chris lit or not
    assert names.name("track-c", 14.0, 16.2) == "Chris"  # Linda's name is her track's


def test_a_new_track_is_named_after_whose_tile_lit_up_as_it_started_even_late() -> None:
    """Fay speaks 46.0-47.8 s on her track, Chris says "Firefox" over her at 46.7-47.3 s on
    his; a loaded page reads both tiles 0.8 s late, so Fay's tile is read lit all through
    Chris's words. Her tile lit up as her voice started: her track's first final is hers, and
    Chris's, at the same time on another track, is not.
    """
    lag = 0.8
    timeline = SpeakerTimeline(
        [
            SpeakerActivity("Fay", True, 46.0 + lag),
            SpeakerActivity("Chris", True, 46.7 + lag),
            SpeakerActivity("Chris", False, 47.6 + lag),
            SpeakerActivity("Fay", False, 48.1 + lag),
        ]
    )
    names = TrackNames(timeline)
    assert timeline.speaker_for(46.7, 47.3) == "Fay"
    assert names.name("track-f", 46.0, 47.8) == "Fay"
    names.observe("track-f", 46.0, 47.8)
    names.remember("track-f", "Fay", 46.0, 47.8)
    assert names.owner("track-f") is None  # 0.7 s of evidence: not yet
    assert names.name("track-c", 46.7, 47.3) == "Chris"
