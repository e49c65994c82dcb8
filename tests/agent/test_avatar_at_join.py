"""A ``default_avatar_url`` that cannot be used at join is said on the stream, not swallowed.

The API checks the URL's rules at creation (tests/api/test_edge_validation.py); what it cannot
know is whether the image is there when the bot starts. The real bot fetches it from a real
local server: a 404 or a file that is no image gives the stream event ``avatar_unavailable``
with the reason, and the logo is shown (no image); a good one is used and nothing is said.
No browser is started.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agent.contracts.bot_config import BotConfig, BotSettings, Platform
from agent.meeting.bot import Bot
from agent.process.settings import AgentSettings
from agent.wiring import assemble

pytestmark = pytest.mark.unit

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNg+M8AAAMBAQAYBdinAAAAAElFTkSuQmCC"
)


def _bot(avatar: str, data_dir: Path, seen: list[tuple[str, dict[str, Any]]]) -> Bot:
    config = BotConfig(
        bot_id=uuid.uuid4(),
        meeting_id=1,
        platform=Platform.GOOGLE_MEET,
        meeting_url="https://meet.google.com/abc-defg-hij",
        native_meeting_id="abc-defg-hij",
        settings=BotSettings(default_avatar_url=avatar),
    )
    host = AgentSettings(data_dir=data_dir, media_allow_http=True, media_allow_private=True)
    return assemble(config, host, observer=lambda name, payload: seen.append((name, payload)))


async def _logo(request: web.Request) -> web.Response:
    return web.Response(body=PNG_1X1, content_type="image/png")


async def _page(request: web.Request) -> web.Response:
    return web.Response(text="<p>hi</p>", content_type="text/html")


async def test_an_avatar_that_cannot_be_used_at_join_is_reported(tmp_path: Path) -> None:
    app = web.Application()
    app.router.add_get("/logo.png", _logo)
    app.router.add_get("/page", _page)
    async with TestServer(app, host="127.0.0.1") as server:
        for path in ("/missing.png", "/page"):
            seen: list[tuple[str, dict[str, Any]]] = []
            bot = _bot(str(server.make_url(path)), tmp_path, seen)
            assert await bot._camera_image() is None  # the logo
            reports = [payload for name, payload in seen if name == "avatar_unavailable"]
            assert len(reports) == 1, (path, seen)
            assert reports[0]["detail"] and reports[0]["timestamp"], reports
        seen = []
        image = await _bot(str(server.make_url("/logo.png")), tmp_path, seen)._camera_image()
        assert image is not None and image.startswith("data:image/png;base64,")
        assert not [name for name, _ in seen if name == "avatar_unavailable"]
