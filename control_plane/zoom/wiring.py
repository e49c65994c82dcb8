"""Plugging the Zoom integration into the app: its app key and its cleanup context.

``create_app`` appends :func:`zoom_ctx` after the database context. The context owns the HTTP
session to Zoom, builds the token cipher (which may create its key file, so off the event loop)
and publishes :class:`~control_plane.zoom.service.ZoomConnections` both as
:data:`ZOOM_CONNECTIONS` (the connection routes) and as the shared
:data:`control_plane.hooks.ZOOM_TOKENS` (bot creation's ``zoom_token_required`` and sealed
token, the launch's OBF minting).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from control_plane.db.engine import DB
from control_plane.hooks import ZOOM_TOKENS
from control_plane.settings import SETTINGS
from control_plane.token_cipher import TokenCipher
from control_plane.zoom.client import ZoomClient
from control_plane.zoom.service import ZoomConnections

ZOOM_CONNECTIONS = web.AppKey("zoom_connections", ZoomConnections)


async def zoom_ctx(app: web.Application) -> AsyncIterator[None]:
    """Create the Zoom client session and connection service; close the session at exit."""
    settings = app[SETTINGS]
    cipher = await asyncio.to_thread(TokenCipher.from_settings, settings)
    async with aiohttp.ClientSession() as session:
        client = ZoomClient(
            session,
            oauth_url=settings.zoom_oauth_url,
            api_base_url=settings.zoom_api_base_url,
            client_id=settings.zoom_client_id,
            client_secret=settings.zoom_client_secret,
        )
        connections = ZoomConnections(app[DB], client, cipher)
        app[ZOOM_CONNECTIONS] = connections
        app[ZOOM_TOKENS] = connections
        yield
