"""A bot in a meeting of several minutes: its page's renderer must not keep growing.

The agent (``agent.bot.Bot``, its own Chromium with the flags it ships) sits in a testmeeting
room where two people talk without pause, with its camera on (the simulator grabs the bot's
camera once a second, as a platform's self-view or video pipeline does). The renderer's USS is
sampled every 5 s for three minutes from admission. Its growth is the highest sample of the
last minute (:data:`LATE`) minus the median of :data:`BASELINE` (the page loaded, the capture
running), per minute between the two windows; it must stay under
:data:`MAX_GROWTH_MB_PER_MIN`. A least-squares slope does not work here: the renderer's caches
fill in steps of 40–60 MB and Chromium purges them now and then, so a short window's slope
swings by ±30 MB/min on the fixed build, and the leak fills its cache within two minutes and
then lies flat.

Why 40 MB/min (issue 19; this test's own figures on this 2-core machine, 5 s samples):

- Without ``--enable-low-end-device-mode`` (the leak: every camera frame the page drew stayed
  in a software cache until it held ~550–620 MB): 99 → 600 MB in 150 s at load 7–16, and
  **205 MB/min** by this measure at load 15 (the test fails). Session 10 measured the same
  leak at 51.8 MB/min as a slope over 90–230 s at load 10; that also fails.
- With it: 124–208 MB throughout; **+2 MB/min** at load 1–3 and **−12 MB/min** at load 5–15.
  The worst fixed case seen is a single cache step of 55 MB inside the window (session 10, at
  load 10), which reads as 28 MB/min here.

So 40 MB/min sits above every fixed figure and below every leaking one. The soak benchmark
(``bench/soak.py``) measures the real goal (≤ 50 MB per hour of new audio).
"""

from __future__ import annotations

import asyncio
import csv
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest
import pytest_asyncio

from agent.contracts.bot_config import BotSettings
from testmeeting import TestMeetingServer, parse_scenario
from tests.agent.link_peer import LinkPeer
from tests.agent.linked_bot import linked_bot

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

MEETING_SECONDS = 190.0
SAMPLE_EVERY_SECONDS = 5.0
BASELINE = (20.0, 50.0)  # the page has loaded and the capture runs: its median is the base
LATE = (120.0, 185.0)  # the last minute: its highest sample is compared with the base
MAX_GROWTH_MB_PER_MIN = 40.0
TOKEN = "agent-token-for-tests"


def _talk(speech: Path, seconds: float) -> str:
    """Two people taking turns with the corpus's English clips, 0.2 s apart, for ``seconds``."""
    with (speech / "MANIFEST.tsv").open() as manifest:
        clips = [
            (row["file"], float(row["duration_s"]))
            for row in csv.DictReader(manifest, delimiter="\t")
            if row["language"] == "en"
        ]
    turns: dict[str, list[str]] = {"Alice": [], "Bob": []}
    at, n = 0.5, 0
    while at < seconds:
        name, duration = clips[n % len(clips)]
        turns["Alice" if n % 2 == 0 else "Bob"].append(f"{{at: {at:.2f}, file: {name}}}")
        at += duration + 0.2
        n += 1
    lines = ["lobby: false", "participants:"]
    for who, utterances in turns.items():
        lines.append(f"  - name: {who}")
        lines.append(f"    utterances: [{', '.join(utterances)}]")
    return "\n".join(lines)


def _renderer_uss_mb() -> float:
    """USS of this process tree's Chromium renderers, in MiB (the bot runs one)."""
    total = 0
    for process in psutil.Process().children(recursive=True):
        try:
            if "--type=renderer" in " ".join(process.cmdline()):
                total += process.memory_full_info().uss
        except psutil.Error:
            continue
    return total / 2**20


def _growth_per_minute(samples: list[tuple[float, float]]) -> float:
    """(highest USS in :data:`LATE` − median USS in :data:`BASELINE`) per minute between them.

    The median ignores the baseline's dips (Chromium purges its caches now and then); the
    highest late sample catches a renderer that ever climbed, even if it dipped again.
    """
    base = sorted(m for t, m in samples if BASELINE[0] <= t < BASELINE[1])
    late = [m for t, m in samples if LATE[0] <= t < LATE[1]]
    assert len(base) >= 4 and len(late) >= 8, samples
    minutes = ((LATE[0] + LATE[1]) - (BASELINE[0] + BASELINE[1])) / 2 / 60
    return (max(late) - base[len(base) // 2]) / minutes


@pytest_asyncio.fixture(loop_scope="module")
async def peer() -> AsyncIterator[LinkPeer]:
    link = LinkPeer(str(uuid.uuid4()), TOKEN)
    await link.start()
    yield link
    await link.stop()


async def test_the_renderer_stays_flat_through_minutes_of_talk_with_the_camera_on(
    speech: Path, peer: LinkPeer, tmp_path: Path
) -> None:
    async with TestMeetingServer(speech_dir=speech) as server:
        room = await server.create_room(
            parse_scenario(
                f"platform: google_meet\nmeeting_id: 'lng-meet-ing'\n"
                f"{_talk(speech, MEETING_SECONDS)}"
            )
        )
        bot = linked_bot(
            peer,
            TOKEN,
            server,
            ("google_meet", "lng-meet-ing"),
            BotSettings(bot_name="Soak", transcribe_enabled=False),
            tmp_path,
            # The page alone: the guard's minutely tidy purges Chromium's caches, which would
            # hide a cache that grows without bound (the leak this test was written for).
            memory_tidy_interval_seconds=0,
        )
        task = asyncio.create_task(bot.run())
        try:
            await peer.wait_for(
                lambda: any(e.status.value == "active" for e in peer.events_of("status")),
                within=60,
            )
            assert room.find_by_name("Soak").camera_on  # the simulator grabs its frames
            started = time.monotonic()
            samples: list[tuple[float, float]] = []
            while (elapsed := time.monotonic() - started) < LATE[1]:
                samples.append((elapsed, _renderer_uss_mb()))
                await asyncio.sleep(SAMPLE_EVERY_SECONDS)
            assert bot.capture.stats.voiced_seconds > 60  # the talk really reached the bot
        finally:
            bot.request_stop()
            await asyncio.wait_for(task, 60)
    growth = _growth_per_minute(samples)
    assert growth < MAX_GROWTH_MB_PER_MIN, (growth, samples)
