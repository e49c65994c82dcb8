"""Two loopback hosts for the share-egress tests: one stands for the internet, one for inside.

The site is reached under :data:`PUBLIC`, a global address that :func:`dial_public_to` routes
to the site's loopback port; the inside is reached under loopback names and literals, which
the SSRF rules refuse.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web
from aiohttp.test_utils import TestServer

from agent.media_out.egress import Dial

PUBLIC = "93.184.215.14"
"""A global address; connections to it reach the site server."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def two_hosts(site: Handler, inside: Handler) -> AsyncIterator[tuple[int, int]]:
    """Serve ``site`` and ``inside`` (every GET path) on loopback: ``(site port, inside port)``."""
    servers = []
    for handler in (site, inside):
        app = web.Application()
        app.router.add_get("/{tail:.*}", handler)
        servers.append(TestServer(app))
    try:
        for server in servers:
            await server.start_server()
        ports = [server.port for server in servers]
        assert ports[0] is not None and ports[1] is not None
        yield ports[0], ports[1]
    finally:
        for server in servers:
            await server.close()


def dial_public_to(site_port: int) -> Dial:
    """A dial that connects :data:`PUBLIC` to the site's port and other addresses as asked."""

    async def dial(address: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if address == PUBLIC:
            return await asyncio.open_connection("127.0.0.1", site_port)
        return await asyncio.open_connection(address, port)

    return dial
