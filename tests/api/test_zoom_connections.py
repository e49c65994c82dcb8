"""Zoom connections against a local server speaking Zoom's OAuth/REST API: connect from a code,
sealed storage, list/delete rules, OBF minting with refresh, and Zoom's failures; a zoom bot
needs an OBF token or a usable connection (docs/api.md Part 1): a given token reaches its config,
without one a token is minted at launch from the connection (a failure: failed/launch_failed);
a copy of the database file shows no OAuth token and no OBF token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient
from sqlalchemy import select, update

from control_plane.app import create_app
from control_plane.db.base import Base
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.db.models.zoom_connection import ZoomConnection
from control_plane.errors import ProviderError
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from control_plane.zoom.wiring import ZOOM_CONNECTIONS
from tests.plugins.api_app import KEY_PREFIX, Caller, Tenants, database_file_bytes

from .fake_zoom import FakeZoom

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
BASE = "/api/v1/workspace/integrations/zoom/connections"
OBF_MARKER = "obf-plaintext-never-at-rest-7f3a9c"


@pytest.fixture
async def zoom() -> AsyncIterator[FakeZoom]:
    fake = FakeZoom()
    await fake.start()
    yield fake
    await fake.close()


@pytest.fixture
def settings(database_url: str, tmp_path: Path, zoom: FakeZoom) -> Settings:
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        zoom_oauth_url=zoom.oauth_url,
        zoom_api_base_url=zoom.api_base_url,
        zoom_client_id=zoom.client_id,
        zoom_client_secret=zoom.client_secret,
    )


async def _connect(
    client: Client, caller: Caller, zoom: FakeZoom, user: str = "zu_1"
) -> dict[str, object]:
    code = zoom.authorize(user, f"{user}@example.org")
    response = await client.post(
        BASE,
        json={"authorization_code": code, "redirect_uri": "https://app.example/cb"},
        headers=caller.headers,
    )
    assert response.status == 201, await response.text()
    body: dict[str, object] = await response.json()
    return body


async def test_connect_lists_and_stores_tokens_sealed(
    client: Client, owner: Caller, zoom: FakeZoom
) -> None:
    created = await _connect(client, owner, zoom)
    assert created["zoom_user_id"] == "zu_1"
    assert created["email"] == "zu_1@example.org"
    assert set(created) == {"id", "zoom_user_id", "email", "created_at", "expires_at"}
    listed = await (await client.get(BASE, headers=owner.headers)).json()
    assert [item["id"] for item in listed] == [created["id"]]

    async with client.app[DB].sessions() as session:
        row = (await session.scalars(select(ZoomConnection))).one()
    issued = set(zoom._access) | set(zoom._refresh)
    assert issued
    for token in issued:
        assert token not in row.access_token_sealed and token not in row.refresh_token_sealed

    again = await _connect(client, owner, zoom)
    assert again["id"] == created["id"]


async def test_mint_uses_and_refreshes_the_stored_connection(
    client: Client, owner: Caller, tenants: Tenants, zoom: FakeZoom
) -> None:
    created = await _connect(client, owner, zoom)
    source = client.app[ZOOM_CONNECTIONS]
    assert owner.workspace_id is not None
    connection_id = await source.usable_connection(owner.workspace_id, owner.user_id, None)
    assert connection_id is not None and connection_id == created["id"]

    token = await source.mint(connection_id, "85746352410")
    assert token.startswith("obf-85746352410-")
    assert zoom.obf_mints == [("zu_1", "85746352410")] and zoom.refreshes == 0

    # Zoom no longer accepts the access token although our clock says it is valid.
    zoom.expire_access_tokens()
    await source.mint(connection_id, "85746352410")
    assert zoom.refreshes == 1

    # Our clock says it expired: refresh before asking Zoom.
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(ZoomConnection).values(expires_at=datetime.now(UTC) - timedelta(seconds=5))
        )
    await source.mint(connection_id, "85746352410")
    assert zoom.refreshes == 2 and len(zoom.obf_mints) == 3

    other = await tenants.workspace("Other")
    assert other.workspace_id is not None
    assert await source.usable_connection(other.workspace_id, other.user_id, None) is None
    assert await source.usable_connection(other.workspace_id, None, connection_id) is None
    member = await tenants.member(owner)
    assert await source.usable_connection(owner.workspace_id, member.user_id, None) is None
    assert (
        await source.usable_connection(owner.workspace_id, member.user_id, connection_id)
        == connection_id
    )


async def test_zoom_refusals_and_outages(client: Client, owner: Caller, zoom: FakeZoom) -> None:
    refused = await client.post(
        BASE,
        json={"authorization_code": "never-issued", "redirect_uri": "https://app.example/cb"},
        headers=owner.headers,
    )
    assert refused.status == 400
    assert (await refused.json())["code"] == "zoom_authorization_failed"

    created = await _connect(client, owner, zoom)
    zoom.fail_status = 503
    code = zoom.authorize("zu_2", "zu_2@example.org")
    outage = await client.post(
        BASE,
        json={"authorization_code": code, "redirect_uri": "https://app.example/cb"},
        headers=owner.headers,
    )
    assert outage.status == 502
    assert (await outage.json())["code"] == "zoom_provider_error"
    with pytest.raises(ProviderError):
        await client.app[ZOOM_CONNECTIONS].mint(int(str(created["id"])), "85746352410")

    zoom.fail_status = None
    zoom.expire_access_tokens()
    zoom._refresh.clear()  # the user revoked the app in Zoom
    with pytest.raises(ProviderError):
        await client.app[ZOOM_CONNECTIONS].mint(int(str(created["id"])), "85746352410")


async def test_not_configured_is_503(
    settings: Settings, launcher: MemoryLauncher, aiohttp_client: AiohttpClient
) -> None:
    bare = settings.model_copy(update={"zoom_client_id": "", "zoom_client_secret": ""})
    client = await aiohttp_client(create_app(bare, launcher=launcher))
    owner = await Tenants(client.app[DB]).workspace()
    response = await client.post(
        BASE,
        json={"authorization_code": "c", "redirect_uri": "https://app.example/cb"},
        headers=owner.headers,
    )
    assert response.status == 503
    assert response.headers["Retry-After"]
    assert (await response.json())["code"] == "zoom_not_configured"


async def test_delete_rules(
    client: Client, owner: Caller, tenants: Tenants, zoom: FakeZoom
) -> None:
    mine = await _connect(client, owner, zoom)
    member = await tenants.member(owner)
    theirs = await _connect(client, member, zoom, user="zu_member")
    other = await tenants.workspace("Other")

    assert (await client.delete(f"{BASE}/{mine['id']}", headers=member.headers)).status == 404
    assert (await client.delete(f"{BASE}/{mine['id']}", headers=other.headers)).status == 404
    assert (await client.delete(f"{BASE}/{theirs['id']}", headers=owner.headers)).status == 204
    assert (await client.delete(f"{BASE}/{mine['id']}", headers=owner.headers)).status == 204
    gone = await client.delete(f"{BASE}/{mine['id']}", headers=owner.headers)
    assert gone.status == 404
    assert (await gone.json())["code"] == "zoom_connection_not_found"
    assert await (await client.get(BASE, headers=owner.headers)).json() == []


async def _launches(launcher: MemoryLauncher, count: int) -> None:
    for _ in range(400):
        if len(launcher.launches) >= count:
            return
        await asyncio.sleep(0.01)
    assert len(launcher.launches) == count


async def test_a_zoom_bot_needs_a_token_or_a_connection_and_gets_a_minted_one(
    client: Client, owner: Caller, tenants: Tenants, zoom: FakeZoom, launcher: MemoryLauncher
) -> None:
    """Part 1: 400 zoom_token_required without either; a given token reaches the bot's config,
    else one is minted at launch from the connection; no token is stored in plain text."""
    body: dict[str, object] = {"platform": "zoom", "native_meeting_id": "85746352410"}
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    schedule = {**body, "scheduled_start_at": future}
    other = await tenants.workspace("Other")
    member = await tenants.member(owner)

    async def refused(caller: Caller, extra: dict[str, object], path: str = "/api/v1/bots") -> None:
        response = await client.post(path, json=extra, headers=caller.headers)
        assert response.status == 400, await response.text()
        assert response.content_type == "application/problem+json"
        problem = await response.json()
        assert problem["code"] == "zoom_token_required"
        assert problem["type"] == "/errors/zoom_token_required"
        assert [item["loc"] for item in problem["errors"]] == [["body", "zoom_obf_token"]]

    await refused(owner, body)  # no connection stored anywhere yet
    await refused(owner, schedule, "/api/v1/bots/schedule")
    await refused(owner, {**body, "scheduled_at": future})
    created = await _connect(client, owner, zoom)
    await refused(other, body)  # a workspace without any connection
    await refused(other, {**body, "zoom_connection_id": created["id"]})  # another workspace's
    await refused(owner, {**body, "zoom_connection_id": int(str(created["id"])) + 1000})
    await refused(member, body)  # the member has none of their own
    async with client.app[DB].sessions() as session:
        assert (await session.scalars(select(Meeting))).all() == []

    accepted = [
        (owner, body, "/api/v1/bots"),  # the caller's newest connection
        (owner, {**body, "zoom_connection_id": created["id"]}, "/api/v1/bots"),
        (member, {**body, "zoom_connection_id": created["id"]}, "/api/v1/bots"),  # a colleague's
        (owner, schedule, "/api/v1/bots/schedule"),
        (other, {**body, "zoom_obf_token": OBF_MARKER}, "/api/v1/bots"),  # no connection needed
        (other, {**schedule, "zoom_obf_token": OBF_MARKER}, "/api/v1/bots/schedule"),
    ]
    for caller, extra, path in accepted:
        response = await client.post(path, json=extra, headers=caller.headers)
        assert response.status == 201, await response.text()
        assert OBF_MARKER not in await response.text()
    await _launches(launcher, 4)  # the scheduled ones are not launched yet
    tokens = sorted(str(config.zoom_obf_token) for config in launcher.launches)
    assert tokens[-1] == OBF_MARKER  # the given one, passed through unchanged
    minted = tokens[:-1]
    assert all(token.startswith("obf-85746352410-") for token in minted)  # minted at launch
    assert len(set(minted)) == 3
    assert zoom.obf_mints == [("zu_1", "85746352410")] * 3
    async with client.app[DB].sessions() as session:
        for table in Base.metadata.sorted_tables:
            for row in (await session.execute(select(table))).all():
                for token in (OBF_MARKER, *minted):
                    assert token not in repr(tuple(row)), table.name  # not in plain text


async def test_a_failed_mint_fails_the_launch(
    client: Client, owner: Caller, zoom: FakeZoom, launcher: MemoryLauncher
) -> None:
    await _connect(client, owner, zoom)
    zoom.fail_status = 503
    response = await client.post(
        "/api/v1/bots",
        json={"platform": "zoom", "native_meeting_id": "85746352410"},
        headers=owner.headers,
    )
    assert response.status == 201, await response.text()
    bot_id = (await response.json())["bot_id"]
    record: dict[str, object] = {}
    for _ in range(400):
        record = await (await client.get(f"/api/v1/bots/{bot_id}", headers=owner.headers)).json()
        if record["status"] == "failed":
            break
        await asyncio.sleep(0.01)
    assert (record["status"], record["status_reason"]) == ("failed", "launch_failed")
    assert launcher.launches == [] and zoom.obf_mints == []


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_zoom_connection_tokens_and_obf_tokens_are_not_readable_in_the_file(
    client: Client, owner: Caller, zoom: FakeZoom, launcher: MemoryLauncher, database_url: str
) -> None:
    code = zoom.authorize("zu_1", "zu_1@example.org")
    connected = await client.post(
        "/api/v1/workspace/integrations/zoom/connections",
        json={"authorization_code": code, "redirect_uri": "https://app.example/cb"},
        headers=owner.headers,
    )
    assert connected.status == 201, await connected.text()
    created = await client.post(
        "/api/v1/bots",
        json={"platform": "zoom", "native_meeting_id": "85746352410", "zoom_obf_token": OBF_MARKER},
        headers=owner.headers,
    )
    assert created.status == 201, await created.text()
    for _ in range(400):
        if launcher.launches:
            break
        await asyncio.sleep(0.01)
    assert launcher.launches[-1].zoom_obf_token == OBF_MARKER  # delivered to the bot

    async with client.app[DB].sessions() as session:
        row = (await session.scalars(select(ZoomConnection))).one()
    raw = database_file_bytes(database_url)
    assert row.refresh_token_sealed.encode() in raw  # the search reads where the rows are
    issued = set(zoom._access) | set(zoom._refresh)
    assert issued
    for secret in (*issued, OBF_MARKER):
        assert secret.encode() not in raw
