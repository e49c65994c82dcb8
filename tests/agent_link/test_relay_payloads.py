"""Relay messages of any size (issue 35, item 6): a message over PostgreSQL's ``NOTIFY`` payload
limit is stored in ``relay_messages`` and only its key is notified; the other replica reads it
back whole, a retried publish is handled once, and stored rows are pruned after their retention.
The route-level case (a 20 kB speech through a replica without the link) is in test_replicas.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type information
import pytest

from control_plane.agent_hub.relay import MAX_PAYLOAD_BYTES, CommandRelay, asyncpg_dsn

pytestmark = [
    pytest.mark.api,
    pytest.mark.parametrize("database_url", ["postgresql"], indirect=True),
]


@pytest.fixture
def dsn(database_url: str) -> str:
    found = asyncpg_dsn(database_url)
    assert found is not None
    return found


async def _rows(dsn: str) -> int:
    connection = await asyncpg.connect(dsn)
    try:
        count: int = await connection.fetchval("SELECT count(*) FROM relay_messages")
        return count
    finally:
        await connection.close()


async def test_a_message_over_the_notify_limit_arrives_whole_and_once(dsn: str) -> None:
    received: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def handle(message: dict[str, Any]) -> None:
        await received.put(message)

    async def ignore(_message: dict[str, Any]) -> None:
        return None

    sender = CommandRelay(dsn, ignore)
    listener = CommandRelay(dsn, handle)
    await sender.start()
    await listener.start()
    try:
        # 4,096 characters of speech in scripts whose every character escapes to 6 bytes
        text = ("Grüße。你好世界。Привет，мир。مرحبا。" * 200)[:4096]
        message = {"kind": "command", "origin": sender.replica_id, "bot_id": "b", "text": text}
        size = len(json.dumps(message, separators=(",", ":")).encode())
        assert size > 20_000 > MAX_PAYLOAD_BYTES
        assert await sender.publish(message)
        assert await asyncio.wait_for(received.get(), 5) == message
        assert await _rows(dsn) == 1

        assert await sender.publish(message)  # a retried publish: the same key, handled once
        await asyncio.sleep(0.3)
        assert received.empty()
        assert await _rows(dsn) == 1

        small = {"kind": "command", "origin": sender.replica_id, "bot_id": "b", "text": "hi"}
        assert await sender.publish(small)  # inline, as before: nothing stored
        assert await asyncio.wait_for(received.get(), 5) == small
        assert await _rows(dsn) == 1
    finally:
        await sender.aclose()
        await listener.aclose()

    async def nothing(_message: dict[str, Any]) -> None:
        return None

    pruner = CommandRelay(dsn, nothing, stored_retention_s=0.0)
    await pruner.start()  # a replica's start prunes rows past their retention
    await pruner.aclose()
    assert await _rows(dsn) == 0


async def test_a_stored_message_for_another_replica_is_not_read(dsn: str) -> None:
    got: list[dict[str, Any]] = []

    async def handle(message: dict[str, Any]) -> None:
        got.append(message)

    sender, bystander = CommandRelay(dsn, handle), CommandRelay(dsn, handle)
    await sender.start()
    await bystander.start()
    try:
        big = {"kind": "result", "target": "someone-else", "frame": "x" * (MAX_PAYLOAD_BYTES + 1)}
        assert await sender.publish(big)
        await asyncio.sleep(0.3)
        assert got == []
    finally:
        await sender.aclose()
        await bystander.aclose()
