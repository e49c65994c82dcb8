"""The launch batch reads its bots' agent links in one statement (issue 18).

A per-bot ``session.get`` cost two round trips per launched bot (the look-up, and the flush of
the previous bot's new row it set off). Shown on both databases: a batch of fresh bots sends
one look-up and one insert whatever its size, and a batch built again (a relaunch after a
lapsed claim) updates each bot's link row instead of adding a second, with the new token time.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import event, select

from control_plane.bots.config_builder import CONFIG_BUILDER
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
BOTS = 5


async def _meetings(client: Client, owner: Caller) -> list[Meeting]:
    later = "2099-01-01T00:00:00Z"  # scheduled far ahead: the app's scheduler leaves them be
    for i in range(BOTS):
        body = {"platform": "google_meet", "native_meeting_id": f"abc-defg-hi{'jklmn'[i]}"}
        response = await client.post(
            "/api/v1/bots", json={**body, "scheduled_at": later}, headers=owner.headers
        )
        assert response.status == 201, await response.text()
    async with client.app[DB].sessions() as session:
        return list((await session.scalars(select(Meeting).order_by(Meeting.id))).all())


async def _links(client: Client) -> dict[int, AgentLink]:
    async with client.app[DB].sessions() as session:
        return {link.meeting_id: link for link in (await session.scalars(select(AgentLink)))}


async def test_a_batch_reads_and_writes_its_links_once(client: Client, owner: Caller) -> None:
    meetings = await _meetings(client, owner)
    builder = client.app[CONFIG_BUILDER]
    engine = client.app[DB].engine.sync_engine
    statements: list[str] = []

    def on_statement(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "agent_links" in statement:
            statements.append(statement.lstrip().split()[0])

    event.listen(engine, "before_cursor_execute", on_statement)
    try:
        configs = await builder.build_batch(meetings)
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)
    assert statements == ["SELECT", "INSERT"]
    assert all(configs[m.id] is not None for m in meetings)
    first = await _links(client)
    assert sorted(first) == [m.id for m in meetings]

    again = await builder.build_batch(meetings)  # relaunched: the same rows, updated
    second = await _links(client)
    assert sorted(second) == sorted(first)
    for meeting in meetings:
        before, after = configs[meeting.id], again[meeting.id]
        assert before is not None and after is not None
        assert after.agent_token == before.agent_token  # derived from the bot id
        assert second[meeting.id].launched_at > first[meeting.id].launched_at
