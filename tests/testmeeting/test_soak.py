"""The soak meeting: its layout, and a short one played by the simulator with the real corpus."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from testmeeting import TestMeetingServer
from testmeeting.room import prepare_audio
from testmeeting.soak import REGULARS, corpus_clips, soak_scenario

pytestmark = pytest.mark.unit

CLIPS = [("a.wav", 4.0), ("b.wav", 7.0), ("c.wav", 2.5)]


def test_an_hour_is_continuous_talk_with_guests_coming_and_going() -> None:
    scenario, turns = soak_scenario(
        CLIPS, 3600, platform="google_meet", meeting_id="abc-defg-hij", churn_every_s=180
    )
    people = {p.name: p for p in scenario.participants}
    guests = [p for p in scenario.participants if p.name not in REGULARS]
    assert len(guests) == 19  # one every 3 minutes after the first three
    assert all(p.join_at == 0 and p.leave_at is None for p in people.values() if p.name in REGULARS)
    for guest in guests:
        assert guest.leave_at is not None and guest.join_at < guest.leave_at <= 3600
        assert guest.chat and guest.hands and guest.screens
    # Turns follow one another without overlap, from the lead-in to the end.
    assert turns[0].at == 2.0 and turns[-1].at < 3600
    for before, after in itertools.pairwise(turns):
        assert after.at == pytest.approx(before.at + before.duration + 0.4, abs=0.002)
    # Only people in the meeting speak, and guests do speak.
    for turn in turns:
        person = people[turn.speaker]
        assert person.join_at < turn.at
        assert person.leave_at is None or turn.at + turn.duration < person.leave_at
    assert {t.speaker for t in turns} > set(REGULARS)
    assert sum(len(p.utterances) for p in scenario.participants) == len(turns)
    assert scenario.end_at == pytest.approx(turns[-1].at + turns[-1].duration + 3, abs=0.01)
    # A chat line a minute from a regular.
    assert sum(len(people[name].chat) for name in REGULARS) == 59


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="clips"):
        soak_scenario([], 60, platform="google_meet", meeting_id="abc-defg-hij")


async def test_a_short_soak_is_played_and_the_corpus_is_decoded_once(speech: Path) -> None:
    clips = corpus_clips(speech)[:2]
    scenario, turns = soak_scenario(
        clips, 16, platform="google_meet", meeting_id="abc-defg-hij", churn_every_s=4
    )
    scenario = scenario.model_copy(update={"clock": "room_created", "lobby": False})
    prepared = prepare_audio(scenario, [speech])
    assert len(prepared) == len(turns) > len(clips)
    assert len({id(p.pcm) for p in prepared.values()}) == len(clips)  # one copy per clip
    async with TestMeetingServer(speech_dir=speech) as server:
        room = await server.create_room(scenario)
        assert scenario.end_at is not None
        await asyncio.sleep(scenario.end_at + 1.0)  # the host ends it then
        assert room.state.ended
        kinds = [e.type for e in room.timeline()]
    assert kinds.count("speech") == len(turns)
    assert {"joined", "left", "chat", "hand_raised", "hand_lowered", "screen"} <= set(kinds)
    assert kinds[-1] == "meeting_ended"
