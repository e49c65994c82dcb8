"""The agent's SSE stream: token checks, event order, replay after ``Last-Event-ID``, pings."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agent.sse.log import EventLog
from agent.sse.server import SseServer, StreamAuth, create_sse_app

pytestmark = pytest.mark.api


@dataclass
class Stream:
    url: str
    log: EventLog
    bot_id: str
    key: Ed25519PrivateKey

    def token(self, sub: str | None = None, ttl: float = 60.0, aud: str = "bot-stream") -> str:
        claims = {"sub": sub or self.bot_id, "aud": aud, "exp": int(time.time() + ttl)}
        return jwt.encode(claims, self.key, algorithm="EdDSA")


@pytest.fixture
async def stream() -> AsyncIterator[Stream]:
    key = Ed25519PrivateKey.generate()
    pem = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    bot_id = str(uuid.uuid4())
    log = EventLog()
    app = create_sse_app(log, StreamAuth(bot_id, pem), ping_seconds=0.2)
    server = SseServer(app, "127.0.0.1", 0)
    await server.start()
    try:
        yield Stream(server.url, log, bot_id, key)
    finally:
        await log.close()
        await server.stop()


async def read_events(resp: aiohttp.ClientResponse, count: int) -> tuple[list[dict[str, str]], int]:
    """Parse ``count`` SSE events from ``resp``; also count ``: ping`` comments seen."""
    events: list[dict[str, str]] = []
    current: dict[str, str] = {}
    pings = 0
    async with asyncio.timeout(10):
        while len(events) < count:
            raw = await resp.content.readline()
            line = raw.decode().rstrip("\r\n")
            if line.startswith(":"):
                pings += 1
            elif not line:
                if current:
                    events.append(current)
                    current = {}
            else:
                field, _, value = line.partition(": ")
                current[field] = value
    return events, pings


async def test_tokens_are_required_and_checked(stream: Stream) -> None:
    async with aiohttp.ClientSession() as http:
        cases = {
            "none": {},
            "garbage": {"Authorization": "Bearer not-a-jwt"},
            "other bot": {"Authorization": f"Bearer {stream.token(sub=str(uuid.uuid4()))}"},
            "expired": {"Authorization": f"Bearer {stream.token(ttl=-5)}"},
            "wrong audience": {"Authorization": f"Bearer {stream.token(aud='other')}"},
        }
        other_key = Ed25519PrivateKey.generate()
        forged = jwt.encode(
            {"sub": stream.bot_id, "aud": "bot-stream", "exp": int(time.time() + 60)},
            other_key,
            algorithm="EdDSA",
        )
        cases["other signer"] = {"Authorization": f"Bearer {forged}"}
        for label, headers in cases.items():
            async with http.get(stream.url, headers=headers) as resp:
                assert resp.status == 401, label


async def test_events_arrive_in_order_with_ids_and_pings(stream: Stream) -> None:
    await stream.log.append("bot_status", {"status": "joining", "status_reason": "join_started"})
    headers = {"Authorization": f"Bearer {stream.token()}"}
    async with aiohttp.ClientSession() as http, http.get(stream.url, headers=headers) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        first, _ = await read_events(resp, 1)
        await stream.log.append("bot_status", {"status": "active", "status_reason": "joined"})
        await stream.log.append("participant_update", {"participants": ["Alice"]})
        rest, _ = await read_events(resp, 2)
        await asyncio.sleep(0.5)
        await stream.log.append("bot_status", {"status": "stopping"})
        last, pings = await read_events(resp, 1)
    events = first + rest + last
    assert [e["id"] for e in events] == ["1", "2", "3", "4"]
    assert [e["event"] for e in events] == [
        "bot_status",
        "bot_status",
        "participant_update",
        "bot_status",
    ]
    assert '"active"' in events[1]["data"]
    assert pings >= 1


async def test_reconnecting_with_last_event_id_replays_what_was_missed(stream: Stream) -> None:
    for n in range(5):
        await stream.log.append("transcript_segment", {"id": f"s{n}", "text": f"segment {n}"})
    headers = {"Authorization": f"Bearer {stream.token()}", "Last-Event-ID": "3"}
    async with aiohttp.ClientSession() as http, http.get(stream.url, headers=headers) as resp:
        events, _ = await read_events(resp, 2)
    assert [e["id"] for e in events] == ["4", "5"]
    assert '"s3"' in events[0]["data"]


async def test_streams_end_when_the_log_closes(stream: Stream) -> None:
    headers = {"Authorization": f"Bearer {stream.token()}"}
    async with aiohttp.ClientSession() as http, http.get(stream.url, headers=headers) as resp:
        await stream.log.append("bot_status", {"status": "completed"})
        await stream.log.close()
        async with asyncio.timeout(5):
            body = await resp.text()
    assert "event: bot_status" in body
