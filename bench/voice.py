"""The bot's voice: ``POST …/speak`` → first audible sample in the meeting, synthesis speed, CPU.

Starts an in-process control plane (SQLite, ``local`` launcher running the real agent) and the
testmeeting simulator, launches one bot per platform skin into an open meeting, and prints one
JSON line per figure:

- ``first_audio_s``: the ``POST …/speak`` request sent → the first loud sample (|x| > 500 of
  32767) of the bot's microphone as the meeting page captured it (testmeeting records every
  browser participant's microphone on the epoch clock), per speech; then p50/p95 over
  ``--speeches`` short sentences spoken one after another with the bot idle in between
  (goal ≤ 0.4 s p50). It includes the API → agent link → command, unmuting with the platform's
  button, synthesising the first sentence, and the page's audio scheduling. The first speech
  after joining is reported apart (``first_audio_cold_s``: it may wait for the voice to load).
- ``synthesis_rtf`` / ``synthesis_first_sentence_s``: Piper with the packaged voice on one
  thread in this process (the agent's setting), over the same sentences, while the bot idles.
- ``agent_cpu_cores_speaking``: CPU seconds of the agent's process tree (Python with Piper,
  Playwright's driver, Chromium) per wall second while the bot spoke, and per part.

- then, unless ``--screen-seconds 0``, the screen-share figures of :mod:`bench.screen` (frame
  rate the meeting receives from the bot's camera and from a shared image, page and video, with
  Chromium's CPU), since issue 14 asks for them beside the voice's.

Usage: ``python -m bench.voice [--platforms google_meet,zoom,teams] [--speeches 10]
[--screen-seconds 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from agent.voice.piper_tts import PiperSynthesizer
from bench import screen
from bench.join import AgentTree, get, launch_and_wait, serve, stop
from bench.stats import free_port, percentile
from control_plane.app import create_app
from control_plane.auth.provisioning import (
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.db.engine import DB
from control_plane.db.migrate import upgrade
from control_plane.enums import Role
from control_plane.launchers.local import LocalLauncher
from control_plane.settings import Settings
from testmeeting import Room, TestMeetingServer, parse_scenario
from testmeeting.errors import TestMeetingError

IDS = {"google_meet": "vbe-test-abc", "zoom": "87650001234", "teams": "5550009876"}
SENTENCES = [
    "Good morning, everyone.",
    "Let us start with the budget.",
    "The numbers look good this quarter.",
    "Does anyone have a question?",
    "I will send the notes after the call.",
    "The next meeting is on Thursday.",
    "Please review the draft by Friday.",
    "Thanks for joining today.",
    "We are running a little late.",
    "That is all from me.",
]
LOUD = 500
RATE = 16_000
BOT_NAME = "Notetaker"


def emit(**fields: Any) -> None:
    """Print one JSON line with the load average attached."""
    fields.setdefault("load1", round(os.getloadavg()[0], 2))
    print(json.dumps({"bench": "voice", **fields}), flush=True)


def first_loud_after(room: Room, after: float) -> float | None:
    """Epoch of the bot's first loud microphone sample at or after ``after``, if any yet."""
    try:
        start, pcm = room.received_audio(room.find_by_name(BOT_NAME).id)
    except TestMeetingError:  # the bot's page has not sent audio yet
        return None
    samples = np.frombuffer(pcm, dtype=np.int16)
    begin = max(0, int((after - start) * RATE))
    loud = np.flatnonzero(np.abs(samples[begin:].astype(np.int32)) > LOUD)
    return None if loud.size == 0 else start + (begin + int(loud[0])) / RATE


class Events:
    """The bot's SSE stream, read in the background: ``speak_finished`` speech ids."""

    def __init__(self) -> None:
        self.finished: set[str] = set()
        self.task: asyncio.Task[None] | None = None

    async def open(self, http: aiohttp.ClientSession, api: str, bot_id: str) -> None:
        async with http.post(f"{api}/bots/{bot_id}/subscribe") as response:
            grant = await response.json()
        self.task = asyncio.create_task(self._read(grant["url"], grant["token"]))

    async def _read(self, url: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with aiohttp.ClientSession() as plain, plain.get(url, headers=headers) as r:
            event = ""
            async for raw in r.content:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: ") and event == "speak_finished":
                    self.finished.add(json.loads(line.removeprefix("data: "))["speech_id"])

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
                await self.task


async def speak_once(
    http: aiohttp.ClientSession, api: str, bot_id: str, room: Room, events: Events, text: str
) -> float:
    """Say ``text``; return the seconds from the request to the first audible sample."""
    sent = time.time()
    async with http.post(f"{api}/bots/{bot_id}/speak", json={"text": text}) as response:
        assert response.status == 202, await response.text()
        speech_id = (await response.json())["speech_id"]
    heard: float | None = None
    deadline = time.monotonic() + 60
    while speech_id not in events.finished or heard is None:
        if time.monotonic() > deadline:
            raise RuntimeError("the speech was not heard within 60 s")
        heard = heard or first_loud_after(room, sent)
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the microphone is muted again before the next speech
    return heard - sent


async def synthesis_figures() -> None:
    """Piper's real-time factor and first-sentence time on this machine, one thread."""
    synth = PiperSynthesizer(cpu_threads=1)
    began = time.monotonic()
    await synth.warm_up()
    emit(metric="voice_load_s", value=round(time.monotonic() - began, 3))
    spent = audio = 0.0
    firsts: list[float] = []
    for text in SENTENCES:
        began = time.monotonic()
        first: float | None = None
        async for pcm in synth.stream(text, None):
            first = first or time.monotonic() - began
            audio += pcm.seconds
        spent += time.monotonic() - began
        firsts.append(first or 0.0)
    emit(metric="synthesis_rtf", value=round(spent / audio, 3), audio_s=round(audio, 1))
    emit(metric="synthesis_first_sentence_s", p50=round(percentile(firsts, 0.5), 3))


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="meetbot-bench-voice-"))
    database_url = f"sqlite+aiosqlite:///{work / 'meetbot.db'}"
    await upgrade(database_url)
    port = free_port()
    settings = Settings(
        database_url=database_url,
        data_dir=work / "data",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        scheduler_interval_seconds=0.05,
    )
    launcher = LocalLauncher(settings.data_dir)
    app = create_app(settings, launcher=launcher)
    async with TestMeetingServer() as meeting, serve(app, port):
        os.environ["MEETBOT_AGENT_EXTRA_BROWSER_ARGS"] = json.dumps(meeting.browser_args())
        os.environ["MEETBOT_AGENT_IGNORE_HTTPS_ERRORS"] = "true"
        os.environ["MEETBOT_AGENT_DATA_DIR"] = str(work / "agent")
        async with app[DB].sessions.begin() as session:
            user = await get_or_create_user(session, "bench@example.org")
            workspace = await create_workspace(session, "Bench")
            await add_member(session, workspace, user, Role.OWNER)
            key = (
                await issue_key(
                    session, user=user, workspace_id=workspace.id, name="b", key_prefix="mbk"
                )
            ).secret
        api = f"http://127.0.0.1:{port}/api/v1"
        async with aiohttp.ClientSession(headers={"X-API-Key": key}) as http:
            for platform in args.platforms:
                mid = IDS[platform]
                room = await meeting.create_room(
                    parse_scenario(
                        f"platform: {platform}\nmeeting_id: '{mid}'\nlobby: false\n"
                        "participants: [{name: Alice}]\n"
                    )
                )
                bot_id, _ = await launch_and_wait(http, api, platform, mid, False)
                record = await get(http, f"{api}/bots/{bot_id}")
                tree = AgentTree(int(record["bot_container_id"].removeprefix("local-")))
                events = Events()
                await events.open(http, api, bot_id)
                cold = await speak_once(http, api, bot_id, room, events, SENTENCES[0])
                emit(metric="first_audio_cold_s", platform=platform, value=round(cold, 3))
                latencies: list[float] = []
                cpu = wall = 0.0
                parts = dict.fromkeys(tree.peak_parts, 0.0)
                for i in range(args.speeches):
                    tree.sample()
                    cpu0, t0 = tree.cpu_seconds(), time.monotonic()
                    before = {part: tree.cpu_seconds(part) for part in parts}
                    text = SENTENCES[(i + 1) % len(SENTENCES)]
                    latencies.append(await speak_once(http, api, bot_id, room, events, text))
                    tree.sample()
                    cpu += tree.cpu_seconds() - cpu0
                    wall += time.monotonic() - t0
                    for part in parts:
                        parts[part] += tree.cpu_seconds(part) - before[part]
                emit(
                    metric="first_audio_s",
                    platform=platform,
                    p50=round(percentile(latencies, 0.5), 3),
                    p95=round(percentile(latencies, 0.95), 3),
                    n=len(latencies),
                    goal_p50=0.4,
                )
                emit(
                    metric="agent_cpu_cores_speaking",
                    platform=platform,
                    value=round(cpu / wall, 3),
                    **{f"{part}_cores": round(v / wall, 3) for part, v in parts.items()},
                )
                await events.close()
                await stop(http, api, bot_id)
            await synthesis_figures()
    await launcher.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--platforms",
        default="google_meet,zoom,teams",
        type=lambda v: [p for p in v.split(",") if p],
    )
    parser.add_argument("--speeches", type=int, default=10)
    parser.add_argument("--screen-seconds", type=float, default=10.0)
    args = parser.parse_args()
    asyncio.run(run(args))
    if args.screen_seconds > 0:
        asyncio.run(screen.run(args.platforms, args.screen_seconds))


if __name__ == "__main__":
    main()
