"""Issue 18 finding 5: bot creation is not starved by concurrent reads (SQLite).

Creations queue on SQLite's one write connection; when each statement of a write transaction
was a trip through the event loop, every trip waited behind whatever reads the loop served,
and 8 listing clients cut creations to a few per second. The structural check: a bot
creation's write transaction, from ``BEGIN`` to ``COMMIT``, lets no other task of the loop run
(no hand-off to the loop while the write lock is held), measured with a task that counts loop
turns while 8 listers run. And under that load, creations keep a fair share of the requests.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import event

from control_plane.db.engine import DB
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
CREATES = 80


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """The API test settings without the per-key rate limit (the load is the point)."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        scheduler_interval_seconds=0.05,
        rate_limit_per_second=1e6,
        rate_limit_burst=10**6,
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_write_transactions_do_not_wait_for_loop_turns_beside_readers(
    client: Client, owner: Caller
) -> None:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            await asyncio.sleep(0)
            ticks += 1

    spans: list[int] = []
    opened: dict[int, int] = {}
    engine = client.app[DB].engine.sync_engine

    def on_begin(conn: Any) -> None:
        opened[id(conn)] = ticks

    def on_commit(conn: Any) -> None:
        if id(conn) in opened:
            spans.append(ticks - opened.pop(id(conn)))

    event.listen(engine, "begin", on_begin)
    event.listen(engine, "commit", on_commit)
    created: list[float] = []
    listed: list[float] = []
    done = asyncio.Event()

    async def creator(start: int) -> None:
        for i in range(start, CREATES, 8):
            letters = "".join("abcdefghijklmnopqrstuvwxyz"[int(c, 16)] for c in f"{i:06x}")
            body = {"platform": "google_meet", "native_meeting_id": f"abc-{letters[:4]}-xyz"}
            began = time.perf_counter()
            response = await client.post("/api/v1/bots", json=body, headers=owner.headers)
            assert response.status == 201, await response.text()
            created.append(time.perf_counter() - began)

    async def lister() -> None:
        while not done.is_set():
            began = time.perf_counter()
            response = await client.get("/api/v1/meetings?limit=50", headers=owner.headers)
            assert response.status == 200
            await response.read()
            listed.append(time.perf_counter() - began)

    tick_task = asyncio.create_task(ticker())
    listers = [asyncio.create_task(lister()) for _ in range(8)]
    try:
        await asyncio.gather(*(creator(n) for n in range(8)))
    finally:
        done.set()
        await asyncio.gather(*listers)
        stop.set()
        await tick_task
        event.remove(engine, "begin", on_begin)
        event.remove(engine, "commit", on_commit)
    assert len(created) == CREATES
    # Every write transaction (creations, the scheduler's claims and records) ran through
    # handing the loop to the listers at most twice (pool checkout), not once per statement.
    assert spans and max(spans) <= 2, sorted(spans)[-10:]
    # Creations are not starved: they are at least a fifth of what the listers got done.
    assert len(created) * 5 >= len(listed), (len(created), len(listed))
