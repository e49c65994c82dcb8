"""A row written once by its key (control_plane/db/inserts.insert_once), racing or not.

The agent link stores artifacts, chat messages, actions and frame receipts with it; these
tests pin what they rely on, on both databases: the second insert of a key inserts nothing,
answers False and leaves the first row as it was, and on PostgreSQL a concurrent insert of
the same key waits for the first transaction and then does the same instead of raising.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.engine import DB
from control_plane.db.inserts import insert_once
from control_plane.db.models.agent_link import ChatMessage
from control_plane.db.models.bot import Meeting
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


async def _meeting(client: Client, owner: Caller) -> int:
    body = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
    response = await client.post("/api/v1/bots", json=body, headers=owner.headers)
    assert response.status == 201
    bot_id = uuid.UUID((await response.json())["bot_id"])
    async with client.app[DB].sessions() as session:
        meeting_id = await session.scalar(select(Meeting.id).where(Meeting.bot_id == bot_id))
    assert meeting_id is not None
    return meeting_id


async def _say(session: AsyncSession, meeting_id: int, text: str) -> bool:
    values = {
        "meeting_id": meeting_id,
        "message_id": "m-1",
        "sender": "Ada",
        "text": text,
        "timestamp": datetime.now(UTC),
        "from_bot": False,
    }
    return await insert_once(session, ChatMessage, values, key=("meeting_id", "message_id"))


async def _texts(client: Client, meeting_id: int) -> list[str]:
    async with client.app[DB].sessions() as session:
        rows = await session.scalars(
            select(ChatMessage.text).where(ChatMessage.meeting_id == meeting_id)
        )
        return list(rows)


async def test_a_key_stored_before_inserts_nothing(client: Client, owner: Caller) -> None:
    meeting_id = await _meeting(client, owner)
    async with client.app[DB].sessions.begin() as session:
        assert await _say(session, meeting_id, "first") is True
    async with client.app[DB].sessions.begin() as session:
        assert await _say(session, meeting_id, "second") is False
    assert await _texts(client, meeting_id) == ["first"]


async def test_a_concurrent_insert_of_the_same_key_waits_and_inserts_nothing(
    client: Client, owner: Caller
) -> None:
    database = client.app[DB]
    if database.dialect != "postgresql":
        pytest.skip("SQLite runs one writer at a time: there is no concurrent insert")
    meeting_id = await _meeting(client, owner)

    async def second() -> bool:
        async with database.sessions.begin() as session:
            return await _say(session, meeting_id, "second")

    async with database.sessions.begin() as session:
        assert await _say(session, meeting_id, "first") is True
        racing = asyncio.ensure_future(second())
        await asyncio.sleep(0.3)
        assert not racing.done()  # waits on the first transaction's uncommitted key
    assert await asyncio.wait_for(racing, 10) is False
    assert await _texts(client, meeting_id) == ["first"]
