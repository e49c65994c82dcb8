"""Bot join time and agent footprint on the testmeeting simulator.

Starts an in-process control plane (SQLite, ``local`` launcher running the real agent with
``python -m agent``) and the simulator, then prints one JSON line per figure:

- ``join_s``: ``POST /api/v1/bots`` → the API reports ``active``, per run and skin (open
  meeting, no lobby; polled every 50 ms). Goal ≤ 5 s.
- ``agent_peak_rss_mb`` / ``agent_peak_pss_mb`` and ``agent_mean_cpu_cores`` over one meeting
  of ``--meeting-seconds`` (default 120) with two participants speaking real recorded speech,
  for the agent's whole process tree (Python + Chromium), sampled every second. RSS double
  counts pages Chromium's processes share; PSS does not. Goal ≤ 700 MB and ≤ 0.6 core with
  transcription on.

Usage: ``python -m bench.join [--platforms google_meet,zoom,teams] [--joins 3]
[--meeting-seconds 120 (0 skips the meeting)] [--meeting-platform google_meet]
[--no-transcribe] [--browser-args '["--flag", ...]']``.
Plays ``MEETBOT_SPEECH_DIR`` (or ../shared/data/speech), else the speech packaged with
testmeeting, as the meeting's speech.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from aiohttp import web

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
from testmeeting import TestMeetingServer, parse_scenario
from testmeeting.packaged_speech import corpus_or_packaged

REPO = Path(__file__).resolve().parent.parent

IDS = {"google_meet": "jbe-join-{n}", "zoom": "8765000{n:04d}", "teams": "555000{n:04d}"}
SPEECH = [
    "LJ001-0001.wav",
    "LJ001-0003.wav",
    "LJ001-0005.wav",
    "LJ001-0007.wav",
    "LJ001-0009.wav",
    "LJ001-0010.wav",
    "LJ001-0012.wav",
    "LJ001-0004.wav",
    "LJ001-0006.wav",
    "jfk.wav",
]
DURATIONS = {
    "LJ001-0001.wav": 9.655,
    "LJ001-0003.wav": 9.667,
    "LJ001-0005.wav": 8.111,
    "LJ001-0007.wav": 8.390,
    "LJ001-0009.wav": 7.554,
    "LJ001-0010.wav": 8.819,
    "LJ001-0012.wav": 8.239,
    "LJ001-0004.wav": 5.139,
    "LJ001-0006.wav": 5.684,
    "jfk.wav": 11.0,
}


def emit(**fields: Any) -> None:
    """Print one JSON line with the load average attached."""
    fields.setdefault("load1", round(os.getloadavg()[0], 2))
    print(json.dumps({"bench": "join", **fields}), flush=True)


def meeting_id(platform: str, n: int) -> str:
    if platform == "google_meet":
        letters = "".join(chr(ord("a") + (n // 26**k) % 26) for k in range(4))
        return f"jbe-{letters}-jbe"
    return IDS[platform].format(n=n)


def meeting_url(platform: str, mid: str) -> str:
    if platform == "zoom":
        return f"https://us02web.zoom.us/j/{mid}"
    if platform == "teams":
        return f"https://teams.live.com/meet/{mid}?p=pass"
    return f"https://meet.google.com/{mid}"


def speech_scenario(platform: str, mid: str, seconds: float) -> str:
    """Alice and Bob take turns reading LJ Speech clips until ``seconds``, then it ends."""
    turns: dict[str, list[str]] = {"Alice": [], "Bob": []}
    at, i = 1.0, 0
    while at < seconds - 12:
        clip = SPEECH[i % len(SPEECH)]
        turns["Alice" if i % 2 == 0 else "Bob"].append(f"{{at: {at:.1f}, file: {clip}}}")
        at += DURATIONS[clip] + 1.5
        i += 1
    people = "\n".join(
        f"  - name: {name}\n    utterances: [{', '.join(items)}]" for name, items in turns.items()
    )
    return (
        f"platform: {platform}\nmeeting_id: '{mid}'\nlobby: false\n"
        f"participants:\n{people}\nend_at: {seconds}\n"
    )


class AgentTree:
    """CPU and memory of an agent process and its children (Chromium)."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.cpu: dict[int, float] = {}
        self.part_of: dict[int, str] = {}
        self.peak_rss = 0
        self.peak_pss = 0
        # Peak PSS per part of the tree: the agent's Python, Playwright's node driver, Chromium.
        self.peak_parts: dict[str, int] = {"python": 0, "driver": 0, "chromium": 0}

    def sample(self) -> None:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        rss = pss = 0
        parts = dict.fromkeys(self.peak_parts, 0)
        for proc in procs:
            try:
                times = proc.cpu_times()
                self.cpu[proc.pid] = times.user + times.system
                full = proc.memory_full_info()
                part = (
                    "python"
                    if proc.pid == self.root.pid
                    else "driver"
                    if proc.name().startswith("node")
                    else "chromium"
                )
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            self.part_of[proc.pid] = part
            rss += full.rss
            pss += getattr(full, "pss", full.rss)
            parts[part] += getattr(full, "pss", full.rss)
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_pss = max(self.peak_pss, pss)
        for part, value in parts.items():
            self.peak_parts[part] = max(self.peak_parts[part], value)

    def cpu_seconds(self, part: str | None = None) -> float:
        """CPU seconds of the tree so far, or of one part of it."""
        return sum(v for pid, v in self.cpu.items() if part in (None, self.part_of.get(pid)))


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="meetbot-bench-join-"))
    corpus = Path(os.environ.get("MEETBOT_SPEECH_DIR", REPO.parent / "shared/data/speech"))
    speech = await asyncio.to_thread(corpus_or_packaged, corpus)  # packaged clips if no corpus
    database_url = f"sqlite+aiosqlite:///{work / 'meetbot.db'}"
    await upgrade(database_url)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(
        database_url=database_url,
        data_dir=work / "data",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        scheduler_interval_seconds=0.05,
    )
    launcher = LocalLauncher(settings.data_dir)
    app = create_app(settings, launcher=launcher)
    async with TestMeetingServer(speech_dir=speech) as meeting, serve(app, port):
        os.environ["MEETBOT_AGENT_EXTRA_BROWSER_ARGS"] = json.dumps(
            [*meeting.browser_args(), *args.browser_args]
        )
        os.environ["MEETBOT_AGENT_IGNORE_HTTPS_ERRORS"] = "true"
        os.environ["MEETBOT_AGENT_DATA_DIR"] = str(work / "agent")
        os.environ["MEETBOT_AGENT_MODELS_DIR"] = str(work / "models")
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
            n = 0
            for platform in args.platforms:
                for _ in range(args.joins):
                    n += 1
                    mid = meeting_id(platform, n)
                    await meeting.create_room(
                        parse_scenario(
                            f"platform: {platform}\nmeeting_id: '{mid}'\nlobby: false\n"
                            "participants: [{name: Alice}]\n"
                        )
                    )
                    bot_id, joined = await launch_and_wait(http, api, platform, mid, False)
                    emit(metric="join_s", platform=platform, value=round(joined, 3), goal=5.0)
                    await stop(http, api, bot_id)
            if args.meeting_seconds <= 0:
                await launcher.aclose()
                return
            n += 1
            platform = args.meeting_platform
            mid = meeting_id(platform, n)
            await meeting.create_room(
                parse_scenario(speech_scenario(platform, mid, args.meeting_seconds))
            )
            bot_id, joined = await launch_and_wait(http, api, platform, mid, args.transcribe)
            emit(
                metric="join_s",
                platform=platform,
                value=round(joined, 3),
                goal=5.0,
                transcribe=args.transcribe,
            )
            record = await get(http, f"{api}/bots/{bot_id}")
            tree = AgentTree(int(record["bot_container_id"].removeprefix("local-")))
            tree.sample()
            cpu0, t0 = tree.cpu_seconds(), time.monotonic()
            parts0 = {part: tree.cpu_seconds(part) for part in tree.peak_parts}
            while record["status"] not in {"completed", "failed"}:
                await asyncio.sleep(1.0)
                tree.sample()
                record = await get(http, f"{api}/bots/{bot_id}")
            wall = time.monotonic() - t0
            common = {
                "platform": platform,
                "transcribe": args.transcribe,
                "meeting_s": round(wall, 1),
                "final_status": record["status"],
                "status_reason": record.get("status_reason"),
            }
            emit(
                metric="agent_peak_rss_mb",
                value=round(tree.peak_rss / 2**20, 1),
                goal=700,
                **common,
            )
            emit(
                metric="agent_peak_pss_mb",
                value=round(tree.peak_pss / 2**20, 1),
                goal=700,
                **common,
            )
            for part, peak in tree.peak_parts.items():
                emit(metric=f"agent_{part}_peak_pss_mb", value=round(peak / 2**20, 1), **common)
            emit(metric="agent_cpu_s", value=round(tree.cpu_seconds() - cpu0, 1), **common)
            for part, before in parts0.items():
                emit(
                    metric=f"agent_{part}_cpu_s",
                    value=round(tree.cpu_seconds(part) - before, 1),
                    **common,
                )
            emit(
                metric="agent_mean_cpu_cores",
                value=round((tree.cpu_seconds() - cpu0) / wall, 3),
                goal=0.6,
                **common,
            )
        await launcher.aclose()


@asynccontextmanager
async def serve(app: web.Application, port: int) -> AsyncIterator[None]:
    """Serve ``app`` on 127.0.0.1:``port`` for the duration of the block."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        yield
    finally:
        await runner.cleanup()


async def get(http: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with http.get(url) as response:
        body: dict[str, Any] = await response.json()
        return body


async def launch_and_wait(
    http: aiohttp.ClientSession, api: str, platform: str, mid: str, transcribe: bool
) -> tuple[str, float]:
    body: dict[str, Any] = {
        "platform": platform,
        "meeting_url": meeting_url(platform, mid),
        "bot_name": "Notetaker",
        "transcribe_enabled": transcribe,
    }
    if platform == "zoom":
        body["zoom_obf_token"] = "obf-bench"  # noqa: S105 - the simulator checks no token
    began = time.monotonic()
    async with http.post(f"{api}/bots", json=body) as created:
        assert created.status == 201, await created.text()
        bot_id: str = (await created.json())["bot_id"]
    while True:
        record = await get(http, f"{api}/bots/{bot_id}")
        if record["status"] == "active":
            return bot_id, time.monotonic() - began
        if record["status"] in {"failed", "completed"}:
            raise RuntimeError(f"bot ended before active: {record.get('status_reason')}")
        await asyncio.sleep(0.05)


async def stop(http: aiohttp.ClientSession, api: str, bot_id: str) -> None:
    async with http.delete(f"{api}/bots/{bot_id}"):
        pass
    # The API is polled as a client would; it has no push of its own.
    while (await get(http, f"{api}/bots/{bot_id}"))["status"] not in {"completed", "failed"}:  # noqa: ASYNC110 - see above
        await asyncio.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--platforms",
        default="google_meet,zoom,teams",
        type=lambda v: [p for p in v.split(",") if p],
    )
    parser.add_argument("--joins", type=int, default=3)
    parser.add_argument("--meeting-seconds", type=float, default=120.0)
    parser.add_argument("--meeting-platform", default="google_meet")
    parser.add_argument("--no-transcribe", dest="transcribe", action="store_false")
    parser.add_argument(
        "--browser-args",
        default=[],
        type=json.loads,
        help="JSON list of extra Chromium flags, to compare flag sets",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
