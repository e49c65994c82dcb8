"""Detected actions from the agent link to the API: stored once by id, listed (paginated) and
in the full meeting record, the ``action.detected`` webhook with owner and due, gone on purge
(real app, SQLite and PostgreSQL; a scripted agent on a real WebSocket)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from agent.contracts.link import ActionEvent, ActionType, StatusEvent
from agent.contracts.status import BotStatus
from control_plane.db.engine import DB
from control_plane.db.models.webhook import WebhookMessage
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api


async def _get(client: Client, owner: Caller, path: str) -> Any:
    response = await client.get(path, headers=owner.headers)
    assert response.status == 200, await response.text()
    return await response.json()


async def test_actions_are_stored_once_listed_in_pages_and_purged(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    frames = [
        ActionEvent(action_type=ActionType.DECISION, text="Ship on Friday", segment_ids=["s1"]),
        ActionEvent(
            action_type=ActionType.ACTION_ITEM,
            text="Send the release notes",
            owner="Eli",
            due="Thursday",
            segment_ids=["s2", "s3"],
        ),
        ActionEvent(action_type=ActionType.QUESTION, text="Who tells support?", segment_ids=["s4"]),
    ]
    for frame in frames:
        await agent.send(frame)
    await agent.send(frames[1])  # resent after a reconnect: stored and announced once

    path = f"/api/v1/meetings/{bot.meeting_id}/actions"
    listed = (await _get(client, owner, path))["actions"]
    assert [(a["id"], a["type"], a["text"]) for a in listed] == [
        (f.id, f.action_type.value, f.text) for f in frames
    ]
    assert listed[1] == {
        "id": frames[1].id,
        "type": "action_item",
        "text": "Send the release notes",
        "owner": "Eli",
        "due": "Thursday",
        "segment_ids": ["s2", "s3"],
        "timestamp": listed[1]["timestamp"],
    }
    assert listed[1]["timestamp"].endswith("Z") and listed[0]["owner"] is None
    page = (await _get(client, owner, f"{path}?limit=2&offset=1"))["actions"]
    assert [a["id"] for a in page] == [frames[1].id, frames[2].id]
    bad = await client.get(f"{path}?limit=0", headers=owner.headers)
    assert bad.status == 422
    record = await _get(client, owner, f"/api/v1/meetings/{bot.meeting_id}")
    assert record["actions"] == listed

    async with client.app[DB].sessions() as session:
        messages = list(
            await session.scalars(
                select(WebhookMessage).where(WebhookMessage.event_type == "action.detected")
            )
        )
    assert len(messages) == 3
    data = [json.loads(m.body)["data"] for m in messages]
    assert {(d["id"], d["owner"], d["due"]) for d in data} == {
        (f.id, f.owner, f.due) for f in frames
    }
    assert all(d["meeting_id"] == bot.meeting_id for d in data)

    # Purge (once the bot is final) removes them with the rest of the meeting's content.
    await agent.send(StatusEvent(status=BotStatus.STOPPING, status_reason="meeting_ended"))
    await agent.send(StatusEvent(status=BotStatus.COMPLETED, status_reason="meeting_ended"))
    purged = await client.delete(f"/api/v1/meetings/{bot.meeting_id}", headers=owner.headers)
    assert purged.status == 200, await purged.text()
    assert (await _get(client, owner, path))["actions"] == []
    assert (await _get(client, owner, f"/api/v1/meetings/{bot.meeting_id}"))["actions"] == []


async def test_another_workspaces_meeting_has_no_actions_to_show(
    client: Client, launch_bot: LaunchBot, tenants: Any
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    stranger = await tenants.workspace("Other")
    response = await client.get(
        f"/api/v1/meetings/{bot.meeting_id}/actions", headers=stranger.headers
    )
    assert response.status == 404
    assert (await response.json())["code"] == "meeting_not_found"
