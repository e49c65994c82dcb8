"""Issue 18 finding 5, second part: writers ahead of lists, on both databases.

A bot creation is a few database round trips, each waiting for a turn of the event loop behind
whatever list pages the loop is building (:mod:`control_plane.api.list_gate`). Shown here:

* a creation's write transaction sends four statements (the workspace and its live count in
  one, then the meeting, its audit row and its webhook message), not five;
* list requests beyond ``list_concurrency`` wait for a slot while creations go through;
* the gate admits ``list_concurrency_idle`` lists once no creation has been in flight for a
  short pause and ``list_concurrency`` while one is (lists alone run as before the gate);
* under 8 creating and 8 listing clients, creations get at least as many requests done as the
  lists (before the gate, PostgreSQL served three lists per creation).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from control_plane.api.list_gate import LIST_GATE, list_gate
from control_plane.db.engine import DB
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller
from tests.plugins.statements import creation_tables

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
CREATES = 80


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """One list at a time, writers or not; no per-key rate limit (the load is the point)."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        scheduler_interval_seconds=0.05,
        rate_limit_per_second=1e6,
        rate_limit_burst=10**6,
        list_concurrency=1,
        list_concurrency_idle=1,
    )


def _body(i: int) -> dict[str, str]:
    letters = "".join("abcdefghijklmnopqrstuvwxyz"[int(c, 16)] for c in f"{i:06x}")
    return {"platform": "google_meet", "native_meeting_id": f"abc-{letters[:4]}-xyz"}


def test_the_gate_needs_a_slot() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        list_gate(0)
    with pytest.raises(ValueError, match="at least 1"):
        list_gate(1, 0)


async def test_lists_take_the_idle_slots_only_while_no_write_is_in_flight() -> None:
    gate = list_gate(1, 3, idle_after=0)
    admitted: list[int] = []
    leave = [asyncio.Event() for _ in range(5)]

    async def list_request(n: int) -> None:
        async with gate:
            admitted.append(n)
            await leave[n].wait()

    async def settle() -> None:
        for _ in range(5):
            await asyncio.sleep(0)

    with gate.writing():  # a creation in flight: one list at a time
        lists = [asyncio.create_task(list_request(n)) for n in range(5)]
        await settle()
        assert admitted == [0]
    await settle()  # the write is done: the idle bound admits two more, in arrival order
    assert admitted == [0, 1, 2]
    with gate.writing():  # beside a write, a list leaving lets none in while one is still in
        leave[0].set()
        leave[1].set()
        await settle()
        assert admitted == [0, 1, 2] and gate.active == 1
        leave[2].set()
        await settle()
        assert admitted == [0, 1, 2, 3] and gate.active == 1
    await settle()
    assert admitted == [0, 1, 2, 3, 4] and gate.active == 2
    for each in leave:
        each.set()
    await asyncio.gather(*lists)
    assert gate.active == 0


async def test_the_idle_bound_waits_for_a_pause_after_the_last_write() -> None:
    gate = list_gate(1, 2, idle_after=0.05)
    first_in = asyncio.Event()
    second_in = asyncio.Event()
    leave = asyncio.Event()

    async def list_request(entered: asyncio.Event) -> None:
        async with gate:
            entered.set()
            await leave.wait()

    with gate.writing():
        first = asyncio.create_task(list_request(first_in))
        second = asyncio.create_task(list_request(second_in))
        await first_in.wait()
    for _ in range(5):
        await asyncio.sleep(0)
    # Just after the write: a client's next creation may be on its way, so still one list.
    assert not second_in.is_set() and gate.limit == 1
    await asyncio.wait_for(second_in.wait(), timeout=30)  # the pause is over
    assert gate.active == 2
    leave.set()
    await asyncio.gather(first, second)


async def test_a_list_cancelled_while_waiting_gives_up_its_place() -> None:
    gate = list_gate(1, 1)
    async with gate:
        waiting = asyncio.create_task(gate.__aenter__())
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    assert gate.active == 0
    async with gate:  # the slot is free again
        assert gate.active == 1


async def test_a_creation_sends_four_statements(client: Client, owner: Caller) -> None:
    async with creation_tables(client.app[DB].engine.sync_engine) as creations:
        response = await client.post("/api/v1/bots", json=_body(1), headers=owner.headers)
        assert response.status == 201, await response.text()
    assert len(creations) == 1
    assert creations[0] == ["SELECT", "meetings", "bot_status_changes", "webhook_messages"]


async def test_lists_wait_for_a_slot_while_creations_go_through(
    client: Client, owner: Caller
) -> None:
    gate = client.app[LIST_GATE]
    async with gate:  # the one slot is taken: every list now waits
        listing = asyncio.create_task(client.get("/api/v1/meetings", headers=owner.headers))
        response = await client.post("/api/v1/bots", json=_body(2), headers=owner.headers)
        assert response.status == 201, await response.text()
        assert not listing.done()
    listed = await listing
    assert listed.status == 200
    assert len((await listed.json())["meetings"]) == 1


async def test_creations_keep_pace_with_lists(client: Client, owner: Caller) -> None:
    created = 0
    listed = 0
    done = asyncio.Event()

    async def creator(start: int) -> None:
        nonlocal created
        for i in range(start, CREATES, 8):
            response = await client.post("/api/v1/bots", json=_body(i), headers=owner.headers)
            assert response.status == 201, await response.text()
            created += 1

    async def lister() -> None:
        nonlocal listed
        while not done.is_set():
            response = await client.get("/api/v1/meetings?limit=50", headers=owner.headers)
            assert response.status == 200
            await response.read()
            listed += 1

    listers = [asyncio.create_task(lister()) for _ in range(8)]
    try:
        await asyncio.gather(*(creator(n) for n in range(8)))
    finally:
        done.set()
        await asyncio.gather(*listers)
    assert created == CREATES
    assert created >= listed, (created, listed)
