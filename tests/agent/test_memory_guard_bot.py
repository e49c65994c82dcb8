"""A bot whose memory is over its limit reports it, frees what it can, and stays in the meeting.

The agent (``agent.meeting.bot.Bot``, its own Chromium) joins a testmeeting room with limits far
below what any bot holds (warn 1 MB, limit 2 MB, a reading every second): its first reading is over
the limit, so the guard relieves (Chromium's caches; Python's heap when glibc had free memory to
give back) and reports a ``memory`` frame over a real link. The voice is not among what was freed: a
bot that has not spoken has not loaded it (it loads on the first speech). The bot stays active until
it is stopped.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from agent.contracts.bot_config import BotSettings
from agent.contracts.link import MemoryReport
from agent.contracts.status import BotStatus
from testmeeting import TestMeetingServer, parse_scenario
from tests.agent.link_peer import LinkPeer
from tests.agent.linked_bot import linked_bot

pytestmark = pytest.mark.browser

TOKEN = "agent-token-for-tests"
SCENARIO = """
platform: google_meet
meeting_id: 'mem-guar-dss'
lobby: false
participants:
  - name: Alice
    utterances: [{at: 0.5, file: jfk.wav}]
"""


@pytest_asyncio.fixture
async def peer() -> AsyncIterator[LinkPeer]:
    link = LinkPeer(str(uuid.uuid4()), TOKEN)
    await link.start()
    yield link
    await link.stop()


async def test_over_the_limit_the_bot_relieves_reports_and_stays(
    speech: Path, peer: LinkPeer, tmp_path: Path
) -> None:
    async with TestMeetingServer(speech_dir=speech) as server:
        await server.create_room(parse_scenario(SCENARIO))
        bot = linked_bot(
            peer,
            TOKEN,
            server,
            ("google_meet", "mem-guar-dss"),
            BotSettings(bot_name="Guarded", transcribe_enabled=False),
            tmp_path,
            memory_warn_mb=1,
            memory_limit_mb=2,
            memory_interval_seconds=1.0,
            memory_relief_cooldown_seconds=3600,
        )
        task = asyncio.create_task(bot.run())
        try:
            await peer.wait_for(lambda: peer.events_of("memory"), within=90)
            # Three more readings: all over the limit, none reported again (one per crossing).
            await asyncio.sleep(3.5)
            assert bot.machine.status is BotStatus.ACTIVE
        finally:
            bot.request_stop()
            final = await asyncio.wait_for(task, 60)
    reports: list[MemoryReport] = peer.events_of("memory")
    assert len(reports) == 1
    (report,) = reports
    assert report.level == "limit"
    assert report.relieved[0] == "browser_caches"
    assert "voice" not in report.relieved  # the bot never spoke: no voice was loaded
    assert {"agent", "driver", "browser", "renderer"} <= report.parts.keys()
    assert report.after_mb is not None and report.tree_mb > 300
    assert final is BotStatus.COMPLETED
    statuses = [e.status for e in peer.events_of("status")]
    assert statuses[-3:] == [BotStatus.ACTIVE, BotStatus.STOPPING, BotStatus.COMPLETED]
