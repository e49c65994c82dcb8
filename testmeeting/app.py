"""The simulator's aiohttp application: host API, skin pages and their room sockets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from testmeeting import api, pages
from testmeeting.app_keys import ROOMS, SETTINGS, SKINS, STATIC
from testmeeting.room import Rooms
from testmeeting.settings import TestMeetingSettings


def create_app(
    settings: TestMeetingSettings, audio_search: list[Path] | None = None
) -> web.Application:
    """Build the simulator application.

    Args:
        settings: Process settings.
        audio_search: Extra folders searched for scenario audio before ``settings.speech_dir``.

    Returns:
        The application; ``app[ROOMS]`` holds the rooms once it has started.
    """
    app = web.Application(middlewares=[api.error_middleware], client_max_size=64 * 1024 * 1024)
    app[SETTINGS] = settings
    search = list(audio_search or [])
    if settings.speech_dir is not None:
        search.append(settings.speech_dir)

    async def rooms_ctx(app: web.Application) -> AsyncIterator[None]:
        app[SKINS] = await asyncio.to_thread(pages.load_skins)
        app[STATIC] = await asyncio.to_thread(pages.load_static)
        rooms = Rooms(search)
        app[ROOMS] = rooms
        yield
        await rooms.close()

    app.cleanup_ctx.append(rooms_ctx)
    app.add_routes(api.routes)
    app.add_routes(pages.routes)  # last: its catch-all must not shadow the API
    return app
