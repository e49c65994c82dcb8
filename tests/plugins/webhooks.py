"""A webhook receiver on loopback for tests: records every request, answers from a script."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer


@dataclass
class Received:
    """One request the receiver got: path, headers (lower-case names) and raw body."""

    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass
class Receiver:
    """A webhook receiver on loopback: records every request, answers from a script.

    ``script[path]`` is a list of statuses answered in order; when it runs out, 200. A 3xx
    answer redirects to ``/redirected``.
    """

    server: TestServer
    received: list[Received] = field(default_factory=list)
    script: dict[str, list[int]] = field(default_factory=dict)
    arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    def url(self, path: str) -> str:
        """Absolute URL of ``path`` on the receiver (``http://127.0.0.1:<port><path>``)."""
        return f"http://127.0.0.1:{self.server.port}{path}"

    def at(self, path: str) -> list[Received]:
        """Requests received on ``path``."""
        return [item for item in self.received if item.path == path]

    async def wait_for(self, path: str, count: int, within: float = 10.0) -> list[Received]:
        """Wait until ``path`` got at least ``count`` requests; returns them."""
        async with asyncio.timeout(within), self.arrived:
            await self.arrived.wait_for(lambda: len(self.at(path)) >= count)
        return self.at(path)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    """A started receiver answering POSTs on any path."""
    holder: list[Receiver] = []

    async def handle(request: web.Request) -> web.Response:
        target = holder[0]
        body = await request.read()
        answers = target.script.get(request.path, [])
        status = answers.pop(0) if answers else 200
        async with target.arrived:
            target.received.append(
                Received(request.path, {k.lower(): v for k, v in request.headers.items()}, body)
            )
            target.arrived.notify_all()
        if 300 <= status < 400:
            # A redirect to another path of the same receiver: following it would show there.
            return web.Response(status=status, headers={"Location": "/redirected"})
        return web.Response(status=status, text="ok")

    application = web.Application()
    application.router.add_post("/{tail:.*}", handle)
    server = TestServer(application, host="127.0.0.1")
    await server.start_server()
    holder.append(Receiver(server))
    yield holder[0]
    await server.close()
