"""The demo's client of the public API: REST calls with ``X-API-Key`` and the bot's SSE stream.

Only public, documented operations are used (docs/api.md): ``GET /api/v1/api-keys`` (to learn the
workspace), webhook endpoints and their secret, ``POST /api/v1/bots``, ``GET /api/v1/bots/{id}``,
``POST /api/v1/bots/{id}/subscribe`` and the stream it returns (``Authorization: Bearer``,
``Last-Event-ID`` to resume), and ``GET /api/v1/meetings/{id}/transcript``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import aiohttp

from meetbot.demo.errors import ApiError, DemoError

SUBSCRIBE_RETRY_S = 1.0
"""Pause before asking ``subscribe`` again after a 404 (the bot has not registered yet)."""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One SSE event.

    Attributes:
        id: The event id (per bot, increasing).
        event: Event name (``bot_status``, ``transcript_segment``, …).
        data: The JSON payload.
        received_at: UNIX epoch seconds when the demo read it.
    """

    id: int
    event: str
    data: dict[str, Any]
    received_at: float


class ApiClient:
    """REST client of one control plane with one API key.

    Args:
        session: The HTTP session (owned by the caller).
        base_url: Control plane base URL.
        api_key: The ``mbk_…`` key.
    """

    def __init__(self, session: aiohttp.ClientSession, base_url: str, api_key: str) -> None:
        self._session = session
        self.base_url = base_url.rstrip("/")
        self._headers = {"X-API-Key": api_key}

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send a JSON request; returns the decoded JSON answer (``None`` for 204).

        Raises:
            ApiError: A status of 400 or more (message from the problem+json body).
        """
        async with self._session.request(
            method, self.base_url + path, json=body, headers=self._headers
        ) as response:
            text = await response.text()
            if response.status >= 400:
                code, detail = "", text[:300]
                try:
                    problem = json.loads(text)
                    code, detail = str(problem.get("code", "")), str(problem.get("detail", ""))
                except (ValueError, AttributeError):
                    pass
                raise ApiError(method, path, response.status, code, detail)
            return json.loads(text) if text else None

    async def text(self, path: str) -> str:
        """GET a text resource (e.g. a transcript as ``txt``).

        Raises:
            ApiError: A status of 400 or more.
        """
        async with self._session.get(self.base_url + path, headers=self._headers) as response:
            text = await response.text()
            if response.status >= 400:
                raise ApiError("GET", path, response.status, "", text[:300])
            return text

    async def subscribe(self, bot_id: str, deadline: float) -> dict[str, Any]:
        """``POST /bots/{id}/subscribe`` until it answers ``{url, token}`` or ``deadline``.

        Raises:
            DemoError: The bot never registered its stream before ``deadline`` (monotonic).
        """
        while True:
            try:
                answer: dict[str, Any] = await self.request(
                    "POST", f"/api/v1/bots/{bot_id}/subscribe"
                )
                return answer
            except ApiError as exc:
                if exc.status != 404 or time.monotonic() >= deadline:
                    raise DemoError(f"could not subscribe to the bot's stream: {exc}") from exc
            await asyncio.sleep(SUBSCRIBE_RETRY_S)


async def read_stream(
    session: aiohttp.ClientSession, url: str, token: str, last_event_id: int
) -> AsyncGenerator[StreamEvent, None]:
    """Yield the events of one SSE connection (after ``last_event_id``) until it closes.

    Raises:
        aiohttp.ClientError: The connection failed or the stream answered an error status.
    """
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    if last_event_id:
        headers["Last-Event-ID"] = str(last_event_id)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=60)
    async with session.get(url, headers=headers, timeout=timeout) as response:
        response.raise_for_status()
        fields: dict[str, str] = {}
        data_lines: list[str] = []
        async for raw in response.content:
            line = raw.decode("utf-8").rstrip("\r\n")
            if line:
                if line.startswith(":"):
                    continue  # a ": ping" comment
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "data":
                    data_lines.append(value)
                else:
                    fields[name] = value
                continue
            if data_lines:
                event_id = fields.get("id", "")
                yield StreamEvent(
                    id=int(event_id) if event_id.isdigit() else 0,
                    event=fields.get("event", "message"),
                    data=json.loads("\n".join(data_lines)),
                    received_at=time.time(),
                )
            fields, data_lines = {}, []
