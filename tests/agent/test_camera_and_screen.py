"""The bot's camera and screen share through the public API, on each of the three skins.

The control plane (SQLite) runs in-process with a real agent (``agent.meeting.bot.Bot``: Chromium,
the platform adapter, the agent link) that joins a testmeeting room; images and a page are served by
a local HTTP server (``media_allow_http``/``media_allow_private`` let the agent reach it, as
``webhook_allow_*`` do for webhooks). What the meeting received is the room's copy of the bot's
camera and screen streams (one PNG per second, ``Room.received_frames``). The image share runs on
every skin; the page share (Meet) and the video share (Teams) on one each: past the share control,
which the image share covers everywhere, they are the same code on every platform.

Frames are compared with the source image by mean absolute difference (MAD) of RGB values,
0-255. The streams are 1280x720 canvases and the test images are 1280x720, so only the capture
path can change pixels: in the testmeeting the page draws the canvas frame as it is (MAD 0.0
measured), and a path through I420 (4:2:0 chroma, what a WebRTC encoder takes) gives 1.4-1.7
on these images (ffmpeg round trip), a JPEG screencast frame of the page 0.3-0.8. The closest
two different images here (two test cards, logo included) are 47.5 apart. ``MATCH_MAD`` = 12
is well above the first and well below the second: a frame matches an image only if it shows
that image.
"""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from sqlalchemy import update

from agent.contracts.bot_config import BotSettings
from agent.contracts.status import BotStatus
from agent.meeting.bot import Bot
from agent.process.settings import AgentSettings
from agent.wiring import assemble
from control_plane.bots.config_builder import CONFIG_BUILDER
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.hooks import ZOOM_TOKENS
from control_plane.settings import Settings
from testmeeting import Room, TestMeetingServer, parse_scenario
from tests.plugins.agent_link import Client
from tests.plugins.api_app import KEY_PREFIX, Caller

pytestmark = pytest.mark.browser

BOT_NAME = "Presenter"
W, H = 1280, 720
MATCH_MAD = 12.0
IDS = {"google_meet": "cam-scrn-tst", "zoom": "8123450001", "teams": "4123450001"}
# Which skin starts with a default_avatar_url (the others show the logo at join).
WITH_DEFAULT_AVATAR = {"google_meet": True, "zoom": False, "teams": True}


@pytest.fixture
def database_url(sqlite_template: Path, tmp_path: Path) -> str:  # narrows the API's
    """SQLite only: the database is not what these tests are about, a browser per run is."""
    path = tmp_path / "meetbot.db"
    path.write_bytes(sqlite_template.read_bytes())
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:  # narrows the API's
    """The API app; commands get 30 s (a page share loads a page on a loaded machine)."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        extra_meeting_hosts=["127.0.0.1"],
        agent_command_timeout_seconds=30.0,
        scheduler_interval_seconds=0.05,
    )


# ---- images ----------------------------------------------------------------------------------


def encode_png(rgb: np.ndarray) -> bytes:
    """An RGB uint8 array (height, width, 3) as a PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    height, width, _ = rgb.shape
    rows = b"".join(b"\x00" + rgb[y].tobytes() for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 6))
        + chunk(b"IEND", b"")
    )


async def decode_png(png: bytes) -> np.ndarray:
    """A PNG as an RGB array scaled to 1280x720, decoded by ffmpeg (no imaging library here)."""
    process = await asyncio.create_subprocess_exec(
        *("ffmpeg", "-loglevel", "error", "-f", "png_pipe", "-i", "-"),
        *("-vf", f"scale={W}:{H}", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    raw, _ = await process.communicate(png)
    return np.frombuffer(raw, np.uint8).reshape(H, W, 3)


def mad(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two RGB arrays (0-255)."""
    return float(np.mean(np.abs(a.astype(np.int16) - b.astype(np.int16))))


def pattern(seed: int) -> np.ndarray:
    """A 1280x720 test card: colour blocks over a gradient, different for each seed."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, W)[None, :, None]
    y = np.linspace(0, 1, H)[:, None, None]
    base = rng.uniform(0, 255, 3)[None, None, :]
    img = (base * (0.4 + 0.6 * x) + 80 * y) % 256
    for _ in range(6):
        x0, y0 = int(rng.integers(0, W - 320)), int(rng.integers(0, H - 180))
        img[y0 : y0 + 180, x0 : x0 + 320] = rng.uniform(0, 255, 3)
    return img.astype(np.uint8)


def logo_png() -> bytes:
    """The service logo the agent ships."""
    return resources.files("agent.browser").joinpath("logo.png").read_bytes()


# ---- the media server --------------------------------------------------------------------------


@dataclass
class MediaServer:
    """Serves the test images and a page over plain HTTP on loopback."""

    files: dict[str, tuple[bytes, str]]
    runner: web.AppRunner | None = None
    base: str = ""

    async def start(self) -> None:
        async def serve(request: web.Request) -> web.Response:
            body, kind = self.files.get(request.match_info["name"], (b"", ""))
            if not kind:
                raise web.HTTPNotFound
            return web.Response(body=body, content_type=kind)

        app = web.Application()
        app.router.add_get("/{name}", serve)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.base = f"http://127.0.0.1:{port}"

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"


VIDEO_RGB = (60, 140, 200)


async def make_clip() -> bytes:
    """A 3 s 320x180 WebM (VP8, Opus): one colour (``VIDEO_RGB``) and a 440 Hz tone.

    Small and encoded at libvpx's realtime speed: the page scales it to the 1280x720 stream.
    """
    colour = "0x{:02x}{:02x}{:02x}".format(*VIDEO_RGB)
    process = await asyncio.create_subprocess_exec(
        *("ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i"),
        f"color=c={colour}:s=320x180:r=10:d=3",
        *("-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:v", "libvpx"),
        *("-deadline", "realtime", "-cpu-used", "8", "-b:v", "100k", "-c:a", "libopus"),
        *("-shortest", "-f", "webm", "-"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
    )
    clip, _ = await process.communicate()
    return clip


@pytest.fixture
async def media() -> AsyncIterator[MediaServer]:
    avatar, screen = pattern(1), pattern(2)
    server = MediaServer(
        {
            "avatar.png": (encode_png(avatar), "image/png"),
            "other.png": (encode_png(pattern(3)), "image/png"),
            "screen.png": (encode_png(screen), "image/png"),
            "broken.png": (b"\x89PNG\r\n\x1a\nthis is not a png", "image/png"),
            "page.html": (b"<html><body>not an image</body></html>", "text/html"),
            "clip.webm": (await make_clip(), "video/webm"),
            "slide.html": (
                b"<html><body style='margin:0;background:rgb(200,40,90)'></body></html>",
                "text/html",
            ),
        }
    )
    await server.start()
    yield server
    assert server.runner is not None
    await server.runner.cleanup()


@pytest.fixture
async def meeting_server() -> AsyncIterator[TestMeetingServer]:
    async with TestMeetingServer() as running:
        yield running


# ---- a bot through the API ---------------------------------------------------------------------


@dataclass
class LiveBot:
    """A bot row, its in-process agent, and its room."""

    bot_id: uuid.UUID
    bot: Bot
    task: asyncio.Task[BotStatus]
    room: Room
    client: Client
    owner: Caller
    # The MAD of the last frame compared (reported when a wait times out).
    last_mad: float | None = None

    @property
    def base(self) -> str:
        return f"/api/v1/bots/{self.bot_id}"

    async def call(self, method: str, suffix: str, body: Any = None) -> tuple[int, Any]:
        response = await self.client.request(
            method, self.base + suffix, json=body, headers=self.owner.headers
        )
        return response.status, await response.json()

    def frames(self, kind: str, after: float = 0.0) -> list[bytes]:
        me = self.room.find_by_name(BOT_NAME).id
        return [png for t, png in self.room.received_frames(me, kind) if t > after]


async def _until(check: Callable[[], Awaitable[bool]], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


async def _start_bot(
    platform: str,
    client: Client,
    owner: Caller,
    meeting_server: TestMeetingServer,
    tmp_path: Path,
    default_avatar_url: str | None,
) -> LiveBot:
    room_id = IDS[platform]
    room = await meeting_server.create_room(
        parse_scenario(
            f"platform: {platform}\nmeeting_id: '{room_id}'\nlobby: false\n"
            "participants: [{name: Alice}]\n"
        )
    )
    bot_settings = BotSettings(bot_name=BOT_NAME, default_avatar_url=default_avatar_url)
    async with client.app[DB].sessions.begin() as session:
        meeting = Meeting(
            workspace_id=owner.workspace_id,
            user_id=owner.user_id,
            platform=platform,
            native_meeting_id=room_id,
            constructed_meeting_url=meeting_server.meeting_url(platform, room_id),
            status=BotStatus.JOINING.value,
            settings=bot_settings.model_dump(mode="json"),
            bot_container_id="in-process",
            # As a caller gives it (the API requires one for Zoom; the agent does not use it):
            # stored sealed, opened again when the config is built.
            zoom_obf_token_sealed=(
                client.app[ZOOM_TOKENS].seal("obf-token-for-tests") if platform == "zoom" else None
            ),
        )
        session.add(meeting)
    config = await client.app[CONFIG_BUILDER].build(meeting)
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(Meeting).where(Meeting.id == meeting.id).values(bot_container_id="in-process")
        )
    config = config.model_copy(update={"control_plane_url": str(client.make_url("")).rstrip("/")})
    agent_settings = AgentSettings(
        extra_browser_args=meeting_server.browser_args(),
        ignore_https_errors=True,
        data_dir=tmp_path / "agent",
        heartbeat_interval_seconds=1.0,
        drain_timeout_seconds=5.0,
        join_timeout_seconds=30.0,
        media_allow_http=True,
        media_allow_private=True,
    )
    bot = assemble(config, agent_settings)
    live = LiveBot(meeting.bot_id, bot, asyncio.create_task(bot.run()), room, client, owner)

    async def active() -> bool:
        if live.task.done():
            raise AssertionError(f"the bot ended: {live.task.result()}")
        _, body = await live.call("GET", "")
        return bool(body["status"] == "active")

    await _until(active, "the bot to be active", within=60)
    return live


@pytest.fixture
async def bots() -> AsyncIterator[list[LiveBot]]:
    started: list[LiveBot] = []
    yield started
    for live in started:
        if not live.task.done():
            live.bot.request_stop()
        await asyncio.wait_for(live.task, 30)


async def _shows(live: LiveBot, kind: str, expected: np.ndarray, after: float) -> bool:
    frames = live.frames(kind, after)
    if not frames:
        live.last_mad = None
        return False
    frame = await decode_png(frames[-1])
    live.last_mad = mad(frame, expected)
    return live.last_mad < MATCH_MAD


@pytest.mark.parametrize("platform", ["google_meet", "zoom", "teams"])
async def test_camera_avatar_and_screen_share_as_the_meeting_receives_them(
    platform: str,
    client: Client,
    owner: Caller,
    meeting_server: TestMeetingServer,
    media: MediaServer,
    bots: list[LiveBot],
    tmp_path: Path,
) -> None:
    with_default = WITH_DEFAULT_AVATAR[platform]
    live = await _start_bot(
        platform,
        client,
        owner,
        meeting_server,
        tmp_path,
        media.url("avatar.png") if with_default else None,
    )
    bots.append(live)
    at_join = pattern(1) if with_default else await decode_png(logo_png())

    # At join the camera is on and shows default_avatar_url, or the logo without one.
    await _until(lambda: _shows(live, "camera", at_join, 0.0), "the avatar at join")
    first = await decode_png(live.frames("camera")[0])
    assert mad(first, at_join) < MATCH_MAD

    # An image that cannot be fetched, is not an image, or does not decode: 422, camera unchanged.
    for name in ("missing.png", "page.html", "broken.png"):
        status, body = await live.call("PUT", "/avatar", {"image_url": media.url(name)})
        assert status == 422, (name, body)
        assert body["code"] == "avatar_unavailable"
        assert body["errors"][0]["loc"] == ["body", "image_url"]
    sent = time.time()
    await _until(lambda: _shows(live, "camera", at_join, sent), "the camera after refusals")

    # PUT changes the picture, DELETE resets it.
    status, _ = await live.call("PUT", "/avatar", {"image_url": media.url("other.png")})
    assert status == 202
    sent = time.time()
    await _until(lambda: _shows(live, "camera", pattern(3), sent), "the new avatar")
    status, _ = await live.call("DELETE", "/avatar")
    assert status == 202
    sent = time.time()
    await _until(lambda: _shows(live, "camera", at_join, sent), "the reset avatar")

    # Screen share of an image through the platform's share control; the camera shows it too.
    status, body = await live.call("POST", "/screen", {"image_url": media.url("screen.png")})
    assert status == 202, body
    assert body == {"bot_id": str(live.bot_id), "command": "screen_share"}
    sent = time.time()
    await _until(lambda: _shows(live, "screen", pattern(2), sent), "the shared image")
    me = live.room.find_by_name(BOT_NAME).id
    assert live.room.participants[me].screen_on
    shared = [await decode_png(png) for png in live.frames("screen", sent)]
    assert max(mad(frame, pattern(2)) for frame in shared) < MATCH_MAD

    # Stop: the share ends in the meeting and the camera shows the avatar again.
    status, _ = await live.call("DELETE", "/screen")
    assert status == 202
    sent = time.time()

    async def share_ended() -> bool:
        return not live.room.participants[me].screen_on

    await _until(share_ended, "the share to end in the meeting")
    await _until(lambda: _shows(live, "camera", at_join, sent), "the camera restored")

    # A web page the bot renders, its frames drawn into the shared stream.
    if platform == "google_meet":
        status, body = await live.call("POST", "/screen", {"url": media.url("slide.html")})
        assert status == 202, body
        sent = time.time()
        slide = np.empty((H, W, 3), np.uint8)
        slide[:] = (200, 40, 90)
        await _until(lambda: _shows(live, "screen", slide, sent), "the shared page")
        status, _ = await live.call("DELETE", "/screen")
        assert status == 202
        sent = time.time()
        await _until(lambda: _shows(live, "camera", at_join, sent), "the camera after the page")

    # A video file, played into the shared stream (its sound goes to the microphone graph).
    if platform == "teams":
        status, body = await live.call("POST", "/screen", {"video_url": media.url("clip.webm")})
        assert status == 202, body
        sent = time.time()
        colour = np.empty((H, W, 3), np.uint8)
        colour[:] = VIDEO_RGB
        await _until(lambda: _shows(live, "screen", colour, sent), "the shared video")
        status, _ = await live.call("DELETE", "/screen")
        assert status == 202
        sent = time.time()
        await _until(lambda: _shows(live, "camera", at_join, sent), "the camera after the video")

    # A screen image that does not decode, a page the SSRF rules refuse, and a "video" that is
    # not one are refused clearly.
    status, body = await live.call("POST", "/screen", {"image_url": media.url("broken.png")})
    assert (status, body["code"]) == (422, "screen_source_unavailable")
    status, body = await live.call("POST", "/screen", {"url": "file:///etc/passwd"})
    assert (status, body["code"]) == (422, "screen_source_unavailable")
    assert body["errors"][0]["loc"] == ["body", "url"]
    status, body = await live.call("POST", "/screen", {"video_url": media.url("page.html")})
    assert (status, body["code"]) == (422, "screen_source_unavailable")
    assert body["errors"][0]["loc"] == ["body", "video_url"]
