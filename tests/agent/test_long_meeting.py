"""A bot in a meeting with hundreds of camera frames drawn: its page's renderer must not grow.

The agent (``agent.meeting.bot.Bot``, its own Chromium with the flags it ships) sits in a
testmeeting room where two people talk without pause, with its camera on: the simulator grabs a
frame of the bot's camera into a canvas every :data:`FRAME_INTERVAL_MS` (the scenario's
``frame_interval_ms``), as a platform's self-view or video pipeline draws them. What grows in issue
19's leak is the number of frames drawn, not the minutes: the test draws four a second, so that 190
frames, as many as three minutes of the simulator's default 1 Hz grab, take 48 s. The renderer's USS
is sampled every :data:`SAMPLE_EVERY_SECONDS` from admission. Its growth is the highest sample of
:data:`LATE` (frames 120–190) minus the median of :data:`BASELINE` (frames 20–60: the page loaded,
the capture running), per frame drawn between the two windows' middles; it must stay under
:data:`MAX_GROWTH_MB_PER_FRAME`. A least-squares slope does not work here: the renderer's caches
fill in steps of 40–60 MB and Chromium purges them now and then, so a short window's slope swings
widely on the fixed build, and the leak fills its cache and then lies flat.

Why 0.67 MB per frame (issue 19; this test's own figures on this 2-core machine):

- Without ``--enable-low-end-device-mode`` (the leak: every camera frame the page drew stayed
  in a software cache until it held ~450–550 MB, ~3.5 MB a frame): at 1 Hz, 99 → 600 MB in
  150 s at load 7–16, 205 MB/min (3.4 MB/frame) by this measure at load 15; at 4 Hz,
  66 → 540 MB in 32 s at load 17, **3.0 MB/frame** by this measure (the test fails).
- With it: 124–208 MB throughout at 1 Hz (+2 MB/min at load 1–3, −12 MB/min at load 5–15:
  0.03 and −0.2 MB/frame); at 4 Hz 117–138 MB throughout at load 17, **0.09 MB/frame**. The
  worst fixed case seen is a single cache step of 55 MB inside the window (session 10, at load
  10), 0.48 MB/frame here.

So 0.67 MB/frame (the 40 MB/min this test held at 1 Hz) sits above every fixed figure and
below every leaking one. The soak benchmark (``bench/soak.py``) measures the real goal
(≤ 50 MB per hour of new audio) over a long meeting at the default grab.
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

FRAME_INTERVAL_MS = 250  # four camera frames drawn a second
FRAMES_PER_SECOND = 1000 / FRAME_INTERVAL_MS
BASELINE = (5.0, 15.0)  # frames 20-60: the page has loaded, the capture runs; median = base
LATE = (30.0, 47.5)  # frames 120-190: their highest sample is compared with the base
MEETING_SECONDS = LATE[1] + 10.0
SAMPLE_EVERY_SECONDS = 0.5
MAX_GROWTH_MB_PER_FRAME = 40.0 / 60  # 40 MB/min at the default 1 Hz grab
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


def _growth_per_frame(samples: list[tuple[float, float]]) -> float:
    """(highest USS in :data:`LATE` − median USS in :data:`BASELINE`) per frame between them.

    The median ignores the baseline's dips (Chromium purges its caches now and then); the
    highest late sample catches a renderer that ever climbed, even if it dipped again.
    """
    base = sorted(m for t, m in samples if BASELINE[0] <= t < BASELINE[1])
    late = [m for t, m in samples if LATE[0] <= t < LATE[1]]
    assert len(base) >= 4 and len(late) >= 8, samples
    frames = ((LATE[0] + LATE[1]) - (BASELINE[0] + BASELINE[1])) / 2 * FRAMES_PER_SECOND
    return (max(late) - base[len(base) // 2]) / frames


@pytest_asyncio.fixture(loop_scope="module")
async def peer() -> AsyncIterator[LinkPeer]:
    link = LinkPeer(str(uuid.uuid4()), TOKEN)
    await link.start()
    yield link
    await link.stop()


async def test_the_renderer_stays_flat_through_hundreds_of_camera_frames_and_talk(
    speech: Path, peer: LinkPeer, tmp_path: Path
) -> None:
    async with TestMeetingServer(speech_dir=speech) as server:
        room = await server.create_room(
            parse_scenario(
                f"platform: google_meet\nmeeting_id: 'lng-meet-ing'\n"
                f"frame_interval_ms: {FRAME_INTERVAL_MS}\n"
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
            # The talk really reached the bot (a third of the time, as 60 s of 185 s did).
            assert bot.capture.stats.voiced_seconds > LATE[1] / 3
            # And the page really drew its camera densely: the newest 60 frames it grabbed
            # came at least 3 a second (fewer frames would hide the leak).
            grabbed = [t for t, _ in room.received_frames(room.find_by_name("Soak").id, "camera")]
            assert len(grabbed) == 60 and grabbed[-1] - grabbed[0] <= 60 / 3, grabbed
        finally:
            bot.request_stop()
            await asyncio.wait_for(task, 60)
    growth = _growth_per_frame(samples)
    assert growth < MAX_GROWTH_MB_PER_FRAME, (growth, samples)
