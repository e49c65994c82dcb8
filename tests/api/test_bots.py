"""Bots: launch validation (every Errors-table row of bot launch), get, list, PATCH, DELETE."""

from __future__ import annotations

import asyncio
import io
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import select

from agent.contracts.status import BotStatus
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import DB
from control_plane.db.models.bot import BotStatusChange, Meeting
from control_plane.enums import Permission
from control_plane.launchers.memory import MemoryLauncher
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
MEET = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}


async def launch(client: Client, who: Caller, **body: Any) -> dict[str, Any]:
    response = await client.post("/api/v1/bots", json=body or MEET, headers=who.headers)
    assert response.status == 201, await response.text()
    result: dict[str, Any] = await response.json()
    return result


async def until_launched(launcher: MemoryLauncher, count: int) -> None:
    for _ in range(400):
        if len(launcher.launches) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(launcher.launches)} launches, wanted {count}")


async def force_status(client: Client, bot_id: str, *path: BotStatus) -> None:
    """Walk a bot through legal moves, as the agent link would."""
    async with client.app[DB].sessions.begin() as session:
        meeting = await lock_meeting(session, bot_id=uuid.UUID(bot_id))
        assert meeting is not None
        for status in path:
            await change_status(session, meeting, status, "test")


async def test_launch_answers_the_creation_record_and_the_scheduler_launches_it(
    client: Client, owner: Caller, launcher: MemoryLauncher
) -> None:
    bot = await launch(client, owner, **MEET, bot_name="Notes", language="en")
    assert bot["status"] == "requested"
    assert bot["platform"] == "google_meet"
    assert bot["native_meeting_id"] == "abc-defg-hij"
    assert bot["constructed_meeting_url"] == "https://meet.google.com/abc-defg-hij"
    for field in ("bot_container_id", "start_time", "end_time", "data", "recording_url"):
        assert bot[field] is None
    assert bot["ws_url"] is None and bot["ws_token"] is None
    assert bot["created_at"].endswith("Z") and "." not in bot["created_at"]
    assert bot["settings"]["bot_name"] == "Notes"
    assert bot["settings"]["left_alone_timeout_seconds"] == 10
    assert bot["settings"]["startup_alone_timeout_seconds"] == 1200
    assert bot["settings"]["admission_timeout_seconds"] == 300
    assert bot["settings"]["max_meeting_duration_seconds"] == 14400
    assert bot["settings"]["recording_enabled"] is False  # the workspace default
    uuid.UUID(bot["bot_id"])
    await until_launched(launcher, 1)
    config = launcher.launches[0]
    assert str(config.bot_id) == bot["bot_id"] and config.meeting_id == bot["id"]
    assert config.meeting_url == "https://meet.google.com/abc-defg-hij"
    for _ in range(100):
        got = await (
            await client.get(f"/api/v1/bots/{bot['bot_id']}", headers=owner.headers)
        ).json()
        if got["bot_container_id"]:
            break
        await asyncio.sleep(0.01)
    assert got["bot_container_id"] == "mem-1"
    assert got["data"] == {"name": None, "participants": []}
    async with client.app[DB].sessions() as session:
        audit = (await session.execute(select(BotStatusChange))).scalars().all()
    assert [(a.from_status, a.to_status, a.status_reason) for a in audit] == [
        (None, "requested", "launched")
    ]
    metrics = await (await client.get("/metrics")).text()
    assert 'meetbot_bot_status_changes_total{status="requested"} 1.0' in metrics
    assert 'meetbot_bots_launched_total{outcome="ok"} 1.0' in metrics


async def test_each_platform_accepts_its_ids_and_urls(client: Client, owner: Caller) -> None:
    cases = [
        (
            {"platform": "google_meet", "meeting_url": "https://meet.google.com/xyz-abcd-efg"},
            "xyz-abcd-efg",
            "https://meet.google.com/xyz-abcd-efg",
            None,
        ),
        (
            {"platform": "zoom", "native_meeting_id": "123456789", "zoom_obf_token": "obf"},
            "123456789",
            "https://zoom.us/j/123456789",
            None,
        ),
        (
            {
                "platform": "zoom",
                "meeting_url": "https://us02web.zoom.us/j/12345678901?pwd=pw",
                "zoom_obf_token": "obf",
            },
            "12345678901",
            "https://us02web.zoom.us/j/12345678901?pwd=pw",
            "pw",
        ),
        (
            {"platform": "teams", "native_meeting_id": "1234567890", "passcode": "pc"},
            "1234567890",
            "https://teams.live.com/meet/1234567890?p=pc",
            "pc",
        ),
        (
            {
                "platform": "teams",
                "meeting_url": "https://teams.microsoft.com/meet/123456789012345",
            },
            "123456789012345",
            "https://teams.microsoft.com/meet/123456789012345",
            None,
        ),
        (
            {"platform": "google_meet", "meeting_url": "http://testmeeting.local/abc-defg-hij"},
            "abc-defg-hij",
            "http://testmeeting.local/abc-defg-hij",
            None,
        ),
    ]
    for body, native_id, url, passcode in cases:
        bot = await launch(client, owner, **body)
        assert (bot["native_meeting_id"], bot["constructed_meeting_url"]) == (native_id, url)
        async with client.app[DB].sessions() as session:
            row = await session.get(Meeting, bot["id"])
            assert row is not None and row.passcode == passcode


async def test_launch_errors_of_the_errors_table(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"platform": "google_meet"}, 400, "missing_meeting_reference"),
        (
            {"platform": "google_meet", "native_meeting_id": "abc-defg-hi"},
            400,
            "invalid_meeting_id",
        ),
        (
            {"platform": "zoom", "native_meeting_id": "12345678", "zoom_obf_token": "t"},
            400,
            "invalid_meeting_id",
        ),
        (
            {"platform": "zoom", "native_meeting_id": "123456789012", "zoom_obf_token": "t"},
            400,
            "invalid_meeting_id",
        ),
        ({"platform": "teams", "native_meeting_id": "123456789"}, 400, "invalid_meeting_id"),
        ({"platform": "teams", "native_meeting_id": "1234567890123456"}, 400, "invalid_meeting_id"),
        (
            {"platform": "teams", "meeting_url": "https://teams.live.com/meet/12"},
            400,
            "invalid_meeting_id",
        ),
        ({"platform": "zoom", "native_meeting_id": "123456789"}, 400, "zoom_token_required"),
        ({"platform": "webex", "native_meeting_id": "abc-defg-hij"}, 422, "validation_error"),
        (
            {"platform": "google_meet", "meeting_url": "https://meet.evil.example/abc-defg-hij"},
            422,
            "malformed_meeting_url",
        ),
        (
            {"platform": "zoom", "meeting_url": "zoom.us/j/123456789", "zoom_obf_token": "t"},
            422,
            "malformed_meeting_url",
        ),
        (
            {"platform": "teams", "meeting_url": "https://meet.google.com/abc-defg-hij"},
            422,
            "malformed_meeting_url",
        ),
        ({**MEET, "bot_nmae": "typo"}, 422, "validation_error"),
    ]
    edges = [
        ("left_alone_timeout_seconds", 9, 10, 3600, 3601),
        ("startup_alone_timeout_seconds", 59, 60, 7200, 7201),
        ("admission_timeout_seconds", 29, 30, 600, 601),
        ("max_meeting_duration_seconds", 59, 60, 86400, 86401),
    ]
    for field, below, low, high, above in edges:
        cases += [({**MEET, field: below}, 422, "validation_error")]
        cases += [({**MEET, field: above}, 422, "validation_error")]
        for ok in (low, high):
            bot = await launch(client, owner, **MEET, **{field: ok})
            assert bot["settings"][field] == ok
    for body, status, code in cases:
        response = await client.post("/api/v1/bots", json=body, headers=owner.headers)
        assert response.status == status, (body, await response.text())
        assert response.content_type == "application/problem+json"
        problem = await response.json()
        assert problem["code"] == code, (body, problem)
        assert problem["type"] == f"/errors/{code}"
        assert problem["status"] == status
        assert isinstance(problem["errors"], list)
    unbound = await tenants.unbound()
    response = await client.post("/api/v1/bots", json=MEET, headers=unbound.headers)
    assert (response.status, (await response.json())["code"]) == (403, "key_not_bound")
    reader = await tenants.key(owner, permission=Permission.READ)
    response = await client.post("/api/v1/bots", json=MEET, headers=reader.headers)
    assert (response.status, (await response.json())["code"]) == (403, "read_only_key")
    response = await client.post("/api/v1/bots", json=MEET)
    assert (response.status, (await response.json())["code"]) == (401, "invalid_api_key")
    response = await client.post(
        "/api/v1/bots", json=MEET, headers={"X-API-Key": "mbk_" + "A" * 43}
    )
    assert (response.status, (await response.json())["code"]) == (401, "invalid_api_key")


async def test_body_transport_errors(client: Client, owner: Caller) -> None:
    headers = {**owner.headers, "Content-Type": "application/json"}
    response = await client.post("/api/v1/bots", data=b"{not json", headers=headers)
    assert (response.status, (await response.json())["code"]) == (400, "malformed_json")
    response = await client.post("/api/v1/bots", data=b"[1, 2]", headers=headers)
    assert (response.status, (await response.json())["code"]) == (400, "malformed_json")
    response = await client.post(
        "/api/v1/bots",
        data=b"platform=zoom",
        headers={**owner.headers, "Content-Type": "text/plain"},
    )
    assert (response.status, (await response.json())["code"]) == (415, "unsupported_media_type")
    big = b'{"bot_name": "' + b"x" * (1024 * 1024 + 10) + b'"}'
    # A stream: aiohttp warns (ResourceWarning) that raw bytes this large block the loop.
    response = await client.post("/api/v1/bots", data=io.BytesIO(big), headers=headers)
    assert response.status == 413
    assert (await response.json())["code"] == "payload_too_large"


async def test_future_scheduled_at_schedules_and_past_launches(
    client: Client, owner: Caller
) -> None:
    later = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    bot = await launch(client, owner, **MEET, scheduled_at=later.isoformat())
    assert bot["status"] == "scheduled"
    assert bot["scheduled_at"] == later.strftime("%Y-%m-%dT%H:%M:%SZ")
    naive_past = (datetime.now(UTC) - timedelta(minutes=5)).replace(tzinfo=None).isoformat()
    bot = await launch(client, owner, **MEET, scheduled_at=naive_past)
    assert bot["status"] == "requested" and bot["scheduled_at"] is None


async def test_idempotency_key_replays_or_refuses(client: Client, owner: Caller) -> None:
    headers = {**owner.headers, "Idempotency-Key": "order-42"}
    first = await client.post("/api/v1/bots", json=MEET, headers=headers)
    again = await client.post("/api/v1/bots", json=dict(reversed(MEET.items())), headers=headers)
    assert (first.status, again.status) == (201, 201)
    assert await first.json() == await again.json()
    other = await client.post("/api/v1/bots", json={**MEET, "bot_name": "other"}, headers=headers)
    assert (other.status, (await other.json())["code"]) == (422, "idempotency_key_reused")
    listed = await (await client.get("/api/v1/bots", headers=owner.headers)).json()
    assert len(listed["bots"]) == 1
    race = {**owner.headers, "Idempotency-Key": "race"}
    body = {**MEET, "bot_name": "racer"}
    answers = await asyncio.gather(
        *(client.post("/api/v1/bots", json=body, headers=race) for _ in range(4))
    )
    assert [a.status for a in answers] == [201] * 4
    assert len({(await a.json())["bot_id"] for a in answers}) == 1
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    entry = {**MEET, "scheduled_start_at": later}
    first = await client.post("/api/v1/bots/schedule", json=entry, headers=headers)
    again = await client.post("/api/v1/bots/schedule", json=entry, headers=headers)
    assert (first.status, again.status) == (201, 201)
    assert (await first.json())["id"] == (await again.json())["id"]
    too_long = {**owner.headers, "Idempotency-Key": "k" * 256}
    response = await client.post("/api/v1/bots", json=MEET, headers=too_long)
    assert response.status == 422
    listed = await (await client.get("/api/v1/bots", headers=owner.headers)).json()
    assert len(listed["bots"]) == 3  # order-42, race, and the scheduled entry


async def test_get_and_list_stay_inside_the_workspace(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    mine = [await launch(client, owner) for _ in range(3)]
    stranger = await tenants.workspace("Other")
    theirs = await launch(client, stranger)
    listed = await (await client.get("/api/v1/bots", headers=owner.headers)).json()
    assert [b["bot_id"] for b in listed["bots"]] == [b["bot_id"] for b in reversed(mine)]
    page = await (await client.get("/api/v1/bots?limit=1&offset=1", headers=owner.headers)).json()
    assert [b["bot_id"] for b in page["bots"]] == [mine[1]["bot_id"]]
    for method, body in (("GET", None), ("PATCH", {"bot_name": "x"}), ("DELETE", None)):
        response = await client.request(
            method, f"/api/v1/bots/{theirs['bot_id']}", json=body, headers=owner.headers
        )
        assert (response.status, (await response.json())["code"]) == (404, "bot_not_found")
    response = await client.get("/api/v1/bots/not-a-uuid", headers=owner.headers)
    assert response.status == 404
    reader = await tenants.key(owner, permission=Permission.READ)
    response = await client.get(f"/api/v1/bots/{mine[0]['bot_id']}", headers=reader.headers)
    assert response.status == 200
    for method in ("PATCH", "DELETE"):
        response = await client.request(
            method, f"/api/v1/bots/{mine[0]['bot_id']}", json={}, headers=reader.headers
        )
        assert (response.status, (await response.json())["code"]) == (403, "read_only_key")


async def test_patch_only_while_requested_or_scheduled(client: Client, owner: Caller) -> None:
    # A bot not launched yet has the change stored (used at launch); a launched one gets it
    # live through its agent (tests/agent_link/test_live_settings.py).
    bot = await launch(client, owner)
    url = f"/api/v1/bots/{bot['bot_id']}"
    later = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    scheduled = await launch(client, owner, **MEET, scheduled_at=later)
    scheduled_url = f"/api/v1/bots/{scheduled['bot_id']}"
    response = await client.patch(
        scheduled_url,
        json={
            "bot_name": "Renamed",
            "recording_enabled": True,
            "capture_modes": ["audio", "video"],
            "recording_format": "webm",
        },
        headers=owner.headers,
    )
    assert response.status == 200, await response.text()
    updated = await response.json()
    assert updated["settings"]["bot_name"] == "Renamed"
    assert updated["settings"]["capture_modes"] == ["audio", "video"]
    assert updated["settings"]["recording_format"] == "webm"
    assert updated["settings"]["language"] is None  # untouched
    response = await client.patch(
        scheduled_url, json={"recording_format": "wav"}, headers=owner.headers
    )
    assert response.status == 422
    response = await client.patch(scheduled_url, json={"platform": "zoom"}, headers=owner.headers)
    assert response.status == 422
    response = await client.patch(scheduled_url, json={"language": "en"}, headers=owner.headers)
    assert response.status == 200
    assert (await response.json())["settings"]["language"] == "en"
    assert (await response.json())["settings"]["bot_name"] == "Renamed"  # kept
    walk = [BotStatus.JOINING, BotStatus.ACTIVE, BotStatus.STOPPING, BotStatus.COMPLETED]
    for status in walk:
        await force_status(client, bot["bot_id"], status)
        response = await client.patch(url, json={"bot_name": "x"}, headers=owner.headers)
        assert response.status == 409, status
        assert (await response.json())["code"] == "bot_not_updatable"
    failed = await launch(client, owner)
    await force_status(client, failed["bot_id"], BotStatus.FAILED)
    response = await client.patch(
        f"/api/v1/bots/{failed['bot_id']}", json={"bot_name": "x"}, headers=owner.headers
    )
    assert response.status == 409


async def test_delete_stops_cancels_or_refuses(
    client: Client, owner: Caller, launcher: MemoryLauncher
) -> None:
    bot = await launch(client, owner)
    await until_launched(launcher, 1)
    for _ in range(100):
        got = await (
            await client.get(f"/api/v1/bots/{bot['bot_id']}", headers=owner.headers)
        ).json()
        if got["bot_container_id"]:
            break
        await asyncio.sleep(0.01)
    await force_status(client, bot["bot_id"], BotStatus.JOINING, BotStatus.ACTIVE)
    url = f"/api/v1/bots/{bot['bot_id']}"
    response = await client.delete(url, headers=owner.headers)
    assert response.status == 202
    assert (await response.json())["status"] == "stopping"
    # No agent is connected, so the control plane tore the VM down and finished the bot.
    assert [h.id for h in launcher.terminated] == ["mem-1"]
    final = await (await client.get(url, headers=owner.headers)).json()
    assert (final["status"], final["status_reason"]) == ("completed", "stopped_by_api")
    assert final["end_time"] is not None and final["start_time"] is not None
    response = await client.delete(url, headers=owner.headers)
    assert (response.status, (await response.json())["code"]) == (409, "bot_finished")

    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    scheduled = await launch(client, owner, **MEET, scheduled_at=later)
    response = await client.delete(f"/api/v1/bots/{scheduled['bot_id']}", headers=owner.headers)
    assert response.status == 202
    assert (await response.json())["status"] == "cancelled"

    stopping = await launch(client, owner)
    await force_status(client, stopping["bot_id"], BotStatus.JOINING, BotStatus.STOPPING)
    response = await client.delete(f"/api/v1/bots/{stopping['bot_id']}", headers=owner.headers)
    assert response.status == 200
    assert (await response.json())["status"] == "stopping"
