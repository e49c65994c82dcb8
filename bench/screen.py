"""Screen-share benchmark: the frame rate the meeting receives from the bot's shared screen.

Prints one JSON line per skin and source (docs/architecture.md §9); nothing is asserted. For each
skin the real agent (``agent.meeting.bot.Bot``, in-process, no control plane: commands go straight
to its command handler) joins a testmeeting room without lobby, then shares, for ``--seconds`` each:

- ``image``: a 1280x720 PNG (the stream redraws it at 30 fps);
- ``page``: a page the bot renders whose content changes every frame (a CSS animation), fed
  into the stream from a CDP screencast;
- ``video``: a 1280x720 30 fps WebM (ffmpeg's ``testsrc2``, VP8) the page plays into the stream.

First, without a share (``source`` ``none``): the camera's rate and Chromium's CPU. Figures
per share (JSON fields):

- ``fps_p50`` / ``fps_min`` / ``fps_mean``: frames per second the meeting page presented from
  the bot's screen stream (``requestVideoFrameCallback``, reported by the testmeeting page once
  a second; the first report after the share starts is skipped);
- ``camera_fps_p50``: the same for the camera stream over the same seconds;
- ``screencast_fps``: page frames the screencast delivered to the agent per second (``page``);
- ``chromium_cpu_percent``: CPU of the bot's Chromium processes while sharing, percent of one
  core; ``load_1m``: the machine's 1-minute load average at the end.

:func:`measure_received_rate` is the part another bench (``bench/voice.py``) can call on its
own room and bot participant.

Usage: ``python -m bench.screen [--platforms google_meet,zoom,teams] [--seconds 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import tempfile
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from aiohttp import web

from agent.contracts.bot_config import BotConfig, BotSettings
from agent.contracts.link import Command, ScreenShareCommand, StopScreenShareCommand
from agent.contracts.status import BotStatus
from agent.meeting.bot import Bot
from agent.process.settings import AgentSettings
from agent.wiring import assemble
from bench.stats import percentile
from testmeeting import Room, TestMeetingServer, parse_scenario

BOT_NAME = "Presenter"
IDS = {"google_meet": "scr-bnch-mrk", "zoom": "81234500077", "teams": "9312345000077"}
ANIMATED_PAGE = b"""<!doctype html><html><body style="margin:0;background:#111">
<div id="box" style="width:320px;height:180px;background:#e11d48;position:absolute;
animation:slide 2s linear infinite"></div>
<style>@keyframes slide{from{left:0;top:0}to{left:960px;top:540px}}</style></body></html>"""


@dataclass(frozen=True)
class ReceivedRate:
    """Frame rates (frames per second) the meeting page presented, one sample a second."""

    samples: list[float]

    def summary(self, prefix: str = "fps") -> dict[str, float | int]:
        """``{<prefix>_p50, <prefix>_min, <prefix>_mean, <prefix>_samples}`` (zeros if empty)."""
        values = self.samples or [0.0]
        return {
            f"{prefix}_p50": round(percentile(values, 0.5), 1),
            f"{prefix}_min": round(min(values), 1),
            f"{prefix}_mean": round(sum(values) / len(values), 1),
            f"{prefix}_samples": len(self.samples),
        }


async def measure_received_rate(
    room: Room, participant_id: str, seconds: float, kind: str = "screen"
) -> ReceivedRate:
    """Wait ``seconds`` and return the ``kind`` stream's frame rates reported meanwhile.

    Args:
        room: The testmeeting room the bot is in.
        participant_id: The bot's participant id in that room.
        seconds: How long to measure.
        kind: ``screen`` or ``camera``.

    Returns:
        The rates the page reported after the first full second of the window.
    """
    start = time.time() + 1.0
    await asyncio.sleep(seconds)
    rates = room.received_video_rate(participant_id, kind)
    return ReceivedRate([fps for t, fps in rates if t > start])


def emit(**fields: Any) -> None:
    """Print one JSON line."""
    print(json.dumps({"bench": "screen", **fields}), flush=True)


def _png(width: int = 1280, height: int = 720) -> bytes:
    """A 1280x720 PNG: four colour bands."""
    colours = [(30, 58, 138), (220, 38, 38), (22, 163, 74), (234, 179, 8)]
    rows = b"".join(b"\x00" + bytes(colours[4 * y // height]) * width for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))


async def _clip(seconds: float) -> bytes:
    """A 1280x720 30 fps VP8 WebM of ffmpeg's moving test pattern, ``seconds`` long."""
    process = await asyncio.create_subprocess_exec(
        *("ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i"),
        f"testsrc2=s=1280x720:r=30:d={seconds}",
        *("-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "1M"),
        *("-f", "webm", "-"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
    )
    clip, _ = await process.communicate()
    return clip


@asynccontextmanager
async def media_server(clip_seconds: float) -> AsyncIterator[str]:
    """Serve ``/slide.png``, ``/animated.html`` and ``/clip.webm``; yields the base URL."""
    files = {
        "slide.png": (_png(), "image/png"),
        "animated.html": (ANIMATED_PAGE, "text/html"),
        "clip.webm": (await _clip(clip_seconds), "video/webm"),
    }

    async def serve(request: web.Request) -> web.Response:
        body, kind = files[request.match_info["name"]]
        return web.Response(body=body, content_type=kind)

    app = web.Application()
    app.router.add_get("/{name}", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def _chromium_cpu_seconds() -> float:
    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        try:
            if "chrom" in proc.name().lower():
                times = proc.cpu_times()
                total += times.user + times.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


async def _until_active(bot: Bot, task: asyncio.Task[BotStatus], within: float = 60) -> None:
    deadline = time.monotonic() + within
    while bot.machine.status is not BotStatus.ACTIVE:
        if task.done() or time.monotonic() > deadline:
            raise RuntimeError(f"the bot did not get in ({bot.machine.status.value})")
        await asyncio.sleep(0.25)


async def bench_platform(
    server: TestMeetingServer, platform: str, base: str, seconds: float, data_dir: Path
) -> None:
    """Share an image, then a page, on one skin; one JSON line each."""
    room = await server.create_room(
        parse_scenario(
            f"platform: {platform}\nmeeting_id: '{IDS[platform]}'\nlobby: false\n"
            "participants: [{name: Alice}]\n"
        )
    )
    config = BotConfig(
        bot_id=uuid.uuid4(),
        meeting_id=1,
        platform=platform,
        meeting_url=server.meeting_url(platform, IDS[platform]),
        native_meeting_id=IDS[platform],
        settings=BotSettings(bot_name=BOT_NAME),
    )
    settings = AgentSettings(
        extra_browser_args=server.browser_args(),
        ignore_https_errors=True,
        data_dir=data_dir,
        media_allow_http=True,
        media_allow_private=True,
    )
    bot = assemble(config, settings)
    task = asyncio.create_task(bot.run())
    try:
        await _until_active(bot, task)
        me = room.find_by_name(BOT_NAME).id
        sources = {
            "image": ScreenShareCommand(image_url=f"{base}/slide.png"),
            "page": ScreenShareCommand(url=f"{base}/animated.html"),
            "video": ScreenShareCommand(video_url=f"{base}/clip.webm"),
        }
        cpu_before, wall_before = _chromium_cpu_seconds(), time.monotonic()
        idle = await measure_received_rate(room, me, seconds, "camera")
        emit(
            platform=platform,
            source="none",
            seconds=seconds,
            camera_fps_p50=idle.summary("camera")["camera_p50"],
            chromium_cpu_percent=round(
                100 * (_chromium_cpu_seconds() - cpu_before) / (time.monotonic() - wall_before), 1
            ),
            load_1m=round(os.getloadavg()[0], 2),
        )
        for source, command in sources.items():
            result = await bot.commands.handle(Command(command=command))
            if not result.ok:
                emit(platform=platform, source=source, error=result.error, detail=result.detail)
                continue
            cpu_before, wall_before = _chromium_cpu_seconds(), time.monotonic()
            casts_before = _screencast_frames(bot)
            screen, camera = await asyncio.gather(
                measure_received_rate(room, me, seconds, "screen"),
                measure_received_rate(room, me, seconds, "camera"),
            )
            wall = time.monotonic() - wall_before
            cpu = _chromium_cpu_seconds() - cpu_before
            casts = _screencast_frames(bot) - casts_before
            await bot.commands.handle(Command(command=StopScreenShareCommand()))
            emit(
                platform=platform,
                source=source,
                seconds=seconds,
                **screen.summary("fps"),
                camera_fps_p50=camera.summary("camera")["camera_p50"],
                screencast_fps=round(casts / wall, 1) if source == "page" else None,
                chromium_cpu_percent=round(100 * cpu / wall, 1),
                load_1m=round(os.getloadavg()[0], 2),
            )
    finally:
        bot.request_stop()
        await asyncio.wait_for(task, 60)


def _screencast_frames(bot: Bot) -> int:
    """Page frames the current page share's screencast delivered so far (0 without one)."""
    shared = bot.commands.screen.shared_page
    return shared.frames if shared is not None else 0


async def run(platforms: Sequence[str], seconds: float) -> None:
    """Every platform in turn, against one testmeeting server."""
    async with TestMeetingServer() as server, media_server(seconds + 5) as base:
        with tempfile.TemporaryDirectory(prefix="bench-screen-") as tmp:
            for platform in platforms:
                await bench_platform(server, platform, base, seconds, Path(tmp))


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platforms", default="google_meet,zoom,teams")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    asyncio.run(run(args.platforms.split(","), args.seconds))


if __name__ == "__main__":
    main()
