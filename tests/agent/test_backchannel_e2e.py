"""A backchannel said over another speaker, end to end through Chromium (issue 12).

Linda reads a 9.7 s sentence; half-way through, Chris says "Fire fox" over her (2.4 s of
real recorded speech), and Mary answers after Linda. The real agent (``agent.meeting.bot.Bot``, its
Chromium, capture, realtime tier) sits in the testmeeting room; its finals must give Chris's
words a final of their own under his name, and Linda's and Mary's turns theirs:

- on Google Meet (one remote track per participant; the page does not say whose track is
  whose, its speaking tiles do): before, each track was named after whoever's tile was lit
  longest during the segment, Linda's throughout, so Chris's words were "Linda"'s;
- on Zoom (one mixed track, speakers told by the active-speaker frames): before, a segment
  cut at Chris's indicator was named the same way, after Linda.

The conversation is laid out by ``testmeeting.conversation`` (a backchannel starts 40-60 % of
the way through the turn before it).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from agent.contracts.bot_config import BotSettings
from agent.contracts.link import Segment
from agent.contracts.status import BotStatus
from agent.transcribe.normalize import normalize_text
from testmeeting import TestMeetingServer
from testmeeting.conversation import Script, build_conversation
from testmeeting.scenario import Scenario
from tests.agent.link_peer import LinkPeer
from tests.agent.linked_bot import linked_bot
from tests.plugins.paths import need_clip

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

TOKEN = "agent-token-for-tests"
LEAD_IN_S = 1.0
SCRIPT: Script = (
    ("Linda", ("LJ001-0001.wav",), False),
    ("Chris", ("common_voice_en_22058266.wav",), True),
    ("Mary", ("LJ001-0002.wav",), False),
)
MEETING_IDS = {"google_meet": "bck-chan-nel", "zoom": "84100200300"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(speech: Path) -> AsyncIterator[TestMeetingServer]:
    for _, files, _ in SCRIPT:
        for name in files:
            need_clip(speech, name)
    async with TestMeetingServer(speech_dir=speech) as running:
        yield running


def _scenario(platform: str, speech: Path) -> tuple[Scenario, float]:
    """The room's script and the scenario second at which the last voice ends."""
    talk = build_conversation(speech, "conversation", script=SCRIPT)
    participants = talk.scenario_participants()
    for participant in participants:
        for utterance in participant["utterances"]:  # type: ignore[attr-defined]
            utterance["at"] = round(float(utterance["at"]) + LEAD_IN_S, 3)
    scenario = Scenario.model_validate(
        {
            "platform": platform,
            "meeting_id": MEETING_IDS[platform],
            "lobby": False,
            "participants": participants,
        }
    )
    return scenario, LEAD_IN_S + max(t.voiced_end for t in talk.turns)


def _words(text: str) -> set[str]:
    return set(normalize_text(text).split())


@pytest.mark.parametrize("platform", ["google_meet", "zoom"])
async def test_a_backchannel_over_another_speaker_gets_its_own_final_under_its_name(
    platform: str, server: TestMeetingServer, speech: Path, tmp_path: Path
) -> None:
    scenario, voice_ends = _scenario(platform, speech)
    room = await server.create_room(scenario)
    peer = LinkPeer(str(uuid.uuid4()), TOKEN)
    await peer.start()
    bot = linked_bot(
        peer,
        TOKEN,
        server,
        (platform, MEETING_IDS[platform]),
        BotSettings(bot_name="Notetaker", transcribe_enabled=True),
        tmp_path,
        drain_timeout_seconds=30.0,
    )
    task = asyncio.create_task(bot.run())
    try:
        await peer.wait_for(
            lambda: any(e.status.value == "active" for e in peer.events_of("status")),
            within=60,
        )
        # The talk, then the finals of its last words (a loaded machine decodes slowly).
        await asyncio.sleep(voice_ends + 1.0)
        with contextlib.suppress(TimeoutError):
            await peer.wait_for(
                lambda: any(
                    e.segment.speaker == "Mary" for e in peer.events_of("transcript_segment")
                ),
                within=30,
            )
        await room.end()
        assert await asyncio.wait_for(task, 60) is BotStatus.COMPLETED
    finally:
        if not task.done():
            bot.request_stop()
            await asyncio.wait_for(task, 60)
        await peer.stop()

    finals: list[Segment] = [e.segment for e in peer.events_of("transcript_segment")]
    said = {e.name: e for e in room.timeline() if e.type == "speech"}
    chris = said["Chris"]

    def overlaps(segment: Segment, lo: float, hi: float) -> bool:
        start = segment.absolute_start_time.timestamp()
        return start < hi and segment.absolute_end_time.timestamp() > lo

    heard = [(s.speaker, s.start, s.end, s.text) for s in finals]
    mine = [
        s for s in finals if s.speaker == "Chris" and overlaps(s, chris.t, chris.end or chris.t)
    ]
    assert mine, heard  # Chris's words have a final of their own, under his name
    if platform == "google_meet":
        # His own track: his words, none of Linda's.
        got = set().union(*(_words(s.text) for s in mine))
        assert got & {"fire", "fox", "firefox"}, heard
        assert not got & _words(said["Linda"].text or ""), heard
    for name in ("Linda", "Mary"):
        event = said[name]
        assert any(
            s.speaker == name and overlaps(s, event.t, event.end or event.t) for s in finals
        ), (name, heard)
