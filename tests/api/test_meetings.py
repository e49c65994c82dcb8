"""Meetings (docs/api.md 2.6): filters, paging, full record, transcript, purge."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import func, select, update

from agent.contracts.status import BotStatus
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment
from tests.api.test_bots import MEET, force_status, launch
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
T0 = datetime(2026, 11, 20, 9, 0, 0, tzinfo=UTC)


async def seed(client: Client, who: Caller, name: str, created: datetime) -> dict[str, Any]:
    """A bot whose meeting has a name, participants and a fixed creation time."""
    bot = await launch(client, who, **MEET)
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(Meeting)
            .where(Meeting.id == bot["id"])
            .values(name=name, participants=["Ada", "Grace"], created_at=created)
        )
    return bot


async def add_segments(client: Client, meeting_id: int) -> None:
    async with client.app[DB].sessions.begin() as session:
        for index, (text, speaker, language) in enumerate(
            [("Hello everyone.", "Ada", "en"), ("Hallo <alle> & co.", None, "de")]
        ):
            session.add(
                Segment(
                    meeting_id=meeting_id,
                    segment_id=f"seg-{index}",
                    start=index * 2.5,
                    end=index * 2.5 + 2.0,
                    absolute_start_time=T0 + timedelta(seconds=index * 2.5),
                    absolute_end_time=T0 + timedelta(seconds=index * 2.5 + 2.0),
                    text=text,
                    speaker=speaker,
                    language=language,
                    completed=True,
                    tier="realtime",
                )
            )


async def ids(client: Client, who: Caller, query: str) -> list[int]:
    response = await client.get(f"/api/v1/meetings{query}", headers=who.headers)
    assert response.status == 200, await response.text()
    return [m["id"] for m in (await response.json())["meetings"]]


async def test_list_filters_and_paging(client: Client, owner: Caller, tenants: Tenants) -> None:
    a = await seed(client, owner, "Weekly Sync", T0)
    b = await seed(client, owner, "Design review", T0 + timedelta(hours=1))
    c = await seed(client, owner, "weekly retro_1%", T0 + timedelta(hours=2))
    await seed(client, await tenants.workspace("Other"), "Weekly Sync", T0)
    await force_status(client, c["bot_id"], BotStatus.FAILED)
    assert await ids(client, owner, "") == [c["id"], b["id"], a["id"]]
    listed = await (await client.get("/api/v1/meetings", headers=owner.headers)).json()
    item = listed["meetings"][-1]
    assert set(item) == {"id", "bot_id", "platform", "status", "data", "created_at", "updated_at"}
    assert item["data"] == {"name": "Weekly Sync", "participants": ["Ada", "Grace"]}
    assert item["created_at"] == "2026-11-20T09:00:00Z"
    assert await ids(client, owner, "?name=WEEKLY") == [c["id"], a["id"]]
    assert await ids(client, owner, "?name=retro_1%25") == [c["id"]]
    assert await ids(client, owner, "?name=De_ign") == []  # "_" is no wildcard
    assert await ids(client, owner, "?status=failed") == [c["id"]]
    assert await ids(client, owner, f"?meeting_id={b['id']}") == [b["id"]]
    assert await ids(client, owner, f"?bot_id={a['bot_id']}") == [a["id"]]
    assert await ids(client, owner, "?date_from=2026-11-20T10:00:00Z") == [c["id"], b["id"]]
    assert await ids(client, owner, "?date_to=2026-11-20T11:00:00%2B01:00") == [b["id"], a["id"]]
    assert await ids(
        client, owner, "?date_from=2026-11-20T10:00:00&date_to=2026-11-20T10:00:00"
    ) == [b["id"]]
    assert await ids(client, owner, "?limit=1") == [c["id"]]
    assert await ids(client, owner, "?limit=2&offset=1") == [b["id"], a["id"]]
    assert await ids(client, owner, "?limit=200&offset=3") == []
    for query in ("?date_from=yesterday", "?date_to=2026-13-01", "?date_from=2026-11-20T25:00"):
        response = await client.get(f"/api/v1/meetings{query}", headers=owner.headers)
        assert (response.status, (await response.json())["code"]) == (400, "invalid_date")
    for query in (
        "?limit=0",
        "?limit=201",
        "?offset=-1",
        "?limit=x",
        "?status=asleep",
        "?meeting_id=2147483648",
        "?bot_id=not-a-uuid",
    ):
        response = await client.get(f"/api/v1/meetings{query}", headers=owner.headers)
        assert (response.status, (await response.json())["code"]) == (422, "validation_error")
    response = await client.get("/api/v1/meetings")
    assert response.status == 401
    unbound = await tenants.unbound()
    assert await ids(client, unbound, "") == []


async def test_full_record_and_transcripts(client: Client, owner: Caller, tenants: Tenants) -> None:
    bot = await seed(client, owner, "Standup", T0)
    await add_segments(client, bot["id"])
    response = await client.get(f"/api/v1/meetings/{bot['id']}", headers=owner.headers)
    assert response.status == 200
    record = await response.json()
    assert record["bot_id"] == bot["bot_id"]
    assert record["recordings"] == [] and record["screenshots"] == []
    assert record["transcript"] == {
        "segment_count": 2,
        "languages": ["de", "en"],
        "tier": "realtime",
        "ready": False,
    }
    assert record["redacted"] is False
    assert record["data"] == {"name": "Standup", "participants": ["Ada", "Grace"]}
    base = f"/api/v1/meetings/{bot['id']}/transcript"
    segments = (await (await client.get(base, headers=owner.headers)).json())["segments"]
    assert segments[0] == {
        "id": "seg-0",
        "start": 0.0,
        "end": 2.0,
        "absolute_start_time": "2026-11-20T09:00:00Z",
        "absolute_end_time": "2026-11-20T09:00:02Z",
        "text": "Hello everyone.",
        "speaker": "Ada",
        "language": "en",
        "completed": True,
        "tier": "realtime",
    }
    txt = await client.get(f"{base}?format=txt", headers=owner.headers)
    assert txt.content_type == "text/plain"
    assert await txt.text() == "[00:00:00] Ada: Hello everyone.\n[00:00:02] Hallo <alle> & co.\n"
    srt = await client.get(f"{base}?format=srt", headers=owner.headers)
    assert await srt.text() == (
        "1\n00:00:00,000 --> 00:00:02,000\nAda: Hello everyone.\n\n"
        "2\n00:00:02,500 --> 00:00:04,500\nHallo <alle> & co.\n"
    )
    vtt = await client.get(f"{base}?format=vtt", headers=owner.headers)
    assert vtt.content_type == "text/vtt"
    assert await vtt.text() == (
        "WEBVTT\n\nseg-0\n00:00:00.000 --> 00:00:02.000\n<v Ada>Hello everyone.\n\n"
        "seg-1\n00:00:02.500 --> 00:00:04.500\nHallo &lt;alle&gt; &amp; co.\n"
    )
    response = await client.get(f"{base}?format=pdf", headers=owner.headers)
    assert response.status == 422
    stranger = await tenants.workspace("Other")
    for path in (f"/api/v1/meetings/{bot['id']}", base):
        response = await client.get(path, headers=stranger.headers)
        assert (response.status, (await response.json())["code"]) == (404, "meeting_not_found")
    for missing in ("99999999", "2147483648", "99999999999999999999", "abc", str(uuid.uuid4())):
        response = await client.get(f"/api/v1/meetings/{missing}", headers=owner.headers)
        assert response.status == 404


async def test_purge_refuses_live_meetings_and_anonymizes_finished_ones(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    bot = await seed(client, owner, "Board", T0)
    await add_segments(client, bot["id"])
    url = f"/api/v1/meetings/{bot['id']}"
    stranger = await tenants.workspace("Other")
    response = await client.delete(url, headers=stranger.headers)
    assert response.status == 404
    for status in (BotStatus.JOINING, BotStatus.ACTIVE, BotStatus.STOPPING):
        await force_status(client, bot["bot_id"], status)
        response = await client.delete(url, headers=owner.headers)
        assert (response.status, (await response.json())["code"]) == (409, "meeting_active")
    await force_status(client, bot["bot_id"], BotStatus.COMPLETED)
    for _ in range(2):  # purging twice answers 200 again
        response = await client.delete(url, headers=owner.headers)
        assert response.status == 200
        assert "message" in await response.json()
    record = await (await client.get(url, headers=owner.headers)).json()
    assert record["redacted"] is True
    assert record["data"] == {"name": None, "participants": []}
    assert record["transcript"]["segment_count"] == 0
    async with client.app[DB].sessions() as session:
        left = await session.scalar(select(func.count()).select_from(Segment))
    assert left == 0
