"""``Idempotency-Key`` on bot creation (docs/api.md 2.1), with the answer stored with the bot.

The key's record is read in the creation's first statement and written, answer included, by
one ``INSERT … ON CONFLICT DO NOTHING`` after the bot (issue 18: three round trips fewer).
Shown here, on both databases:

* 20 concurrent retries with one key create one bot and queue one ``bot.created`` message
  (the losers' work and their outbox rows roll back), and all 20 answer the same bot;
* a keyed creation's write transaction sends one statement more than an unkeyed one;
* a record older than the 24 h window is replaced: the key creates a new bot.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import func, select, update

from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.db.models.idempotency import IdempotencyRecord
from control_plane.db.models.webhook import WebhookMessage
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller
from tests.plugins.statements import creation_tables

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
MEET = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
RETRIES = 20


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """No per-key rate limit: the retries arrive at once."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        rate_limit_per_second=1e6,
        rate_limit_burst=10**6,
    )


async def _count(client: Client, model: Any) -> int:
    async with client.app[DB].sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def test_concurrent_retries_create_one_bot(client: Client, owner: Caller) -> None:
    headers = {**owner.headers, "Idempotency-Key": "retry-me"}
    messages_before = await _count(client, WebhookMessage)
    answers = await asyncio.gather(
        *(client.post("/api/v1/bots", json=MEET, headers=headers) for _ in range(RETRIES))
    )
    assert [a.status for a in answers] == [201] * RETRIES
    bodies = [await a.json() for a in answers]
    assert all(body == bodies[0] for body in bodies)
    replayed = [a.headers.get("Idempotent-Replayed") for a in answers]
    assert replayed.count(None) == 1  # the one that created it; the rest replay its answer
    assert await _count(client, Meeting) == 1
    assert await _count(client, IdempotencyRecord) == 1
    assert await _count(client, WebhookMessage) == messages_before + 1


async def test_a_keyed_creation_sends_one_statement_more(client: Client, owner: Caller) -> None:
    async with creation_tables(client.app[DB].engine.sync_engine) as creations:
        headers = {**owner.headers, "Idempotency-Key": "counted"}
        response = await client.post("/api/v1/bots", json=MEET, headers=headers)
        assert response.status == 201, await response.text()
    assert len(creations) == 1
    assert creations[0] == [
        "SELECT",
        "meetings",
        "bot_status_changes",
        "webhook_messages",
        "idempotency_records",
    ], creations


async def test_an_expired_key_creates_a_new_bot(client: Client, owner: Caller) -> None:
    headers = {**owner.headers, "Idempotency-Key": "old"}
    first = await client.post("/api/v1/bots", json=MEET, headers=headers)
    assert first.status == 201
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(IdempotencyRecord).values(created_at=datetime.now(UTC) - timedelta(hours=25))
        )
    other_body = {**MEET, "bot_name": "a different body is fine once the key expired"}
    again = await client.post("/api/v1/bots", json=other_body, headers=headers)
    assert again.status == 201, await again.text()
    assert again.headers.get("Idempotent-Replayed") is None
    assert (await again.json())["bot_id"] != (await first.json())["bot_id"]
    replay = await client.post("/api/v1/bots", json=other_body, headers=headers)
    assert replay.headers.get("Idempotent-Replayed") == "true"
    assert (await replay.json())["bot_id"] == (await again.json())["bot_id"]
    assert await _count(client, IdempotencyRecord) == 1
