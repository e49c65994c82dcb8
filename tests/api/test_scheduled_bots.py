"""Scheduled bots (docs/api.md Part 1 "Scheduled bots", 2.4): create, list, update, cancel."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from agent.contracts.status import BotStatus
from control_plane.enums import Permission
from tests.api.test_bots import force_status
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


async def schedule(client: Client, who: Caller, **extra: Any) -> dict[str, Any]:
    start = datetime.now(UTC) + timedelta(hours=1)
    body = {
        "platform": "teams",
        "meeting_url": "https://teams.live.com/meet/1234567890?p=pw",
        "scheduled_start_at": iso(start),
        **extra,
    }
    response = await client.post("/api/v1/bots/schedule", json=body, headers=who.headers)
    assert response.status == 201, await response.text()
    result: dict[str, Any] = await response.json()
    return result


async def test_create_and_list_scheduled_entries(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    start = (datetime.now(UTC) + timedelta(hours=3)).replace(microsecond=0)
    entry = await schedule(
        client, owner, scheduled_start_at=start.isoformat(), join_offset_seconds=-120
    )
    assert entry["status"] == "scheduled"
    assert entry["scheduled_start_at"] == iso(start)
    assert entry["join_offset_seconds"] == -120
    assert entry["launch_at"] == iso(start - timedelta(seconds=120))
    assert entry["meeting_url"] == "https://teams.live.com/meet/1234567890?p=pw"
    assert entry["native_meeting_id"] == "1234567890"
    assert entry["settings"]["admission_timeout_seconds"] == 300
    second = await schedule(client, owner)
    await schedule(client, await tenants.workspace("Other"))
    listed = await (await client.get("/api/v1/bots/schedule", headers=owner.headers)).json()
    assert [e["id"] for e in listed["scheduled_bots"]] == [second["id"], entry["id"]]
    bot = await (await client.get(f"/api/v1/bots/{entry['bot_id']}", headers=owner.headers)).json()
    assert (bot["id"], bot["status"]) == (entry["id"], "scheduled")


async def test_create_errors(client: Client, owner: Caller) -> None:
    past = iso(datetime.now(UTC) - timedelta(seconds=5))
    future = iso(datetime.now(UTC) + timedelta(hours=1))
    base = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({**base, "scheduled_start_at": past}, 400, "scheduled_start_in_past"),
        (base, 422, "validation_error"),
        (
            {**base, "scheduled_start_at": future, "join_offset_seconds": 3601},
            422,
            "validation_error",
        ),
        (
            {**base, "scheduled_start_at": future, "join_offset_seconds": -3601},
            422,
            "validation_error",
        ),
        ({**base, "scheduled_start_at": future, "scheduled_at": future}, 422, "validation_error"),
        (
            {"platform": "google_meet", "scheduled_start_at": future},
            400,
            "missing_meeting_reference",
        ),
        ({**base, "scheduled_start_at": "tomorrow"}, 422, "validation_error"),
    ]
    for body, status, code in cases:
        response = await client.post("/api/v1/bots/schedule", json=body, headers=owner.headers)
        assert (response.status, (await response.json())["code"]) == (status, code), body
    for offset in (-3600, 3600):
        response = await client.post(
            "/api/v1/bots/schedule",
            json={**base, "scheduled_start_at": future, "join_offset_seconds": offset},
            headers=owner.headers,
        )
        assert response.status == 201


async def test_update_changes_only_given_fields(client: Client, owner: Caller) -> None:
    entry = await schedule(client, owner, bot_name="Before", recording_enabled=True)
    url = f"/api/v1/bots/schedule/{entry['id']}"
    new_start = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    response = await client.patch(
        url,
        json={
            "scheduled_start_at": new_start.isoformat(),
            "join_offset_seconds": 300,
            "meeting_url": "https://teams.microsoft.com/meet/99999999999",
            "capture_modes": ["audio", "video"],
            "voice_agent_enabled": False,
        },
        headers=owner.headers,
    )
    assert response.status == 200, await response.text()
    updated = await response.json()
    assert updated["scheduled_start_at"] == iso(new_start)
    assert updated["launch_at"] == iso(new_start + timedelta(seconds=300))
    assert updated["native_meeting_id"] == "99999999999"
    assert updated["settings"]["capture_modes"] == ["audio", "video"]
    assert updated["settings"]["voice_agent_enabled"] is False
    assert updated["settings"]["bot_name"] == "Before"
    assert updated["settings"]["recording_enabled"] is True
    past = iso(datetime.now(UTC) - timedelta(minutes=1))
    response = await client.patch(url, json={"scheduled_start_at": past}, headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (400, "scheduled_start_in_past")
    response = await client.patch(
        url, json={"meeting_url": "https://meet.google.com/abc-defg-hij"}, headers=owner.headers
    )
    assert (response.status, (await response.json())["code"]) == (422, "malformed_meeting_url")
    response = await client.patch(url, json={"platform": "zoom"}, headers=owner.headers)
    assert response.status == 422


async def test_update_and_cancel_only_while_scheduled(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    entry = await schedule(client, owner)
    url = f"/api/v1/bots/schedule/{entry['id']}"
    reader = await tenants.key(owner, permission=Permission.READ)
    response = await client.delete(url, headers=reader.headers)
    assert (response.status, (await response.json())["code"]) == (403, "read_only_key")
    stranger = await tenants.workspace("Other")
    for method, body in (("PATCH", {"bot_name": "x"}), ("DELETE", None)):
        response = await client.request(method, url, json=body, headers=stranger.headers)
        assert response.status == 404
    response = await client.delete(url, headers=owner.headers)
    assert response.status == 200
    assert "message" in await response.json()
    bot = await (await client.get(f"/api/v1/bots/{entry['bot_id']}", headers=owner.headers)).json()
    assert (bot["status"], bot["status_reason"]) == ("cancelled", "cancelled_by_api")
    for method, body in (("PATCH", {"bot_name": "x"}), ("DELETE", None)):
        response = await client.request(method, url, json=body, headers=owner.headers)
        assert (response.status, (await response.json())["code"]) == (
            404,
            "scheduled_bot_not_found",
        )
    launched = await schedule(client, owner)
    await force_status(client, launched["bot_id"], BotStatus.REQUESTED)
    for method, body in (("PATCH", {"bot_name": "x"}), ("DELETE", None)):
        response = await client.request(
            method, f"/api/v1/bots/schedule/{launched['id']}", json=body, headers=owner.headers
        )
        assert response.status == 404
    for missing in ("999999", "abc"):
        response = await client.delete(f"/api/v1/bots/schedule/{missing}", headers=owner.headers)
        assert response.status == 404
