"""API keys at the door (docs/api.md 2.1–2.2): 401s, expiry, last use, rate limit, read keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient

from control_plane.app import create_app
from control_plane.auth.key_cache import KEY_CACHE
from control_plane.db.engine import DB
from control_plane.db.models.workspace import ApiKey
from control_plane.enums import Permission
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


async def test_missing_malformed_unknown_and_expired_keys(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    for headers in (
        {},
        {"X-API-Key": ""},
        {"X-API-Key": "mbk_short"},
        {"X-API-Key": "xyz_" + "A" * 43},
        {"X-API-Key": owner.key[:-1] + ("B" if owner.key[-1] != "B" else "C")},
    ):
        response = await client.get("/api/v1/meetings", headers=headers)
        assert response.status == 401
        assert response.content_type == "application/problem+json"
        assert (await response.json())["code"] == "invalid_api_key"
    expired = await tenants.key(owner, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    response = await client.get("/api/v1/meetings", headers=expired.headers)
    assert (response.status, (await response.json())["code"]) == (401, "api_key_expired")
    valid = await tenants.key(owner, expires_at=datetime.now(UTC) + timedelta(hours=1))
    response = await client.get("/api/v1/meetings", headers=valid.headers)
    assert response.status == 200
    response = await client.head("/api/v1/meetings")
    assert response.status == 401


async def test_last_used_at_is_written_at_most_once_a_minute(client: Client, owner: Caller) -> None:
    async def last_used() -> datetime | None:
        async with client.app[DB].sessions() as session:
            key = await session.get(ApiKey, owner.key_id)
            assert key is not None
            return key.last_used_at

    assert await last_used() is None
    await client.get("/api/v1/meetings", headers=owner.headers)
    first = await last_used()
    assert first is not None
    await client.get("/api/v1/meetings", headers=owner.headers)
    assert await last_used() == first
    async with client.app[DB].sessions.begin() as session:
        key = await session.get(ApiKey, owner.key_id)
        assert key is not None
        key.last_used_at = first - timedelta(seconds=61)
    # The row changed behind the app's back (as a minute passing would); drop cached lookups.
    client.app[KEY_CACHE].clear()
    await client.get("/api/v1/meetings", headers=owner.headers)
    latest = await last_used()
    assert latest is not None and latest >= first


async def test_token_bucket_per_key(settings: Settings, aiohttp_client: AiohttpClient) -> None:
    strict = settings.model_copy(update={"rate_limit_burst": 3, "rate_limit_per_second": 0.5})
    client = await aiohttp_client(create_app(strict, launcher=MemoryLauncher()))
    tenants = Tenants(client.app[DB])
    first, second = await tenants.workspace(), await tenants.workspace("B")
    statuses = [
        (await client.get("/api/v1/meetings", headers=first.headers)).status for _ in range(3)
    ]
    assert statuses == [200, 200, 200]
    response = await client.get("/api/v1/meetings", headers=first.headers)
    assert response.status == 429
    assert (await response.json())["code"] == "rate_limited"
    assert int(response.headers["Retry-After"]) >= 1
    response = await client.get("/api/v1/meetings", headers=second.headers)
    assert response.status == 200
    response = await client.get("/healthz")  # no key, no bucket
    assert response.status == 200


async def test_read_keys_may_read_but_not_write(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    reader = await tenants.key(owner, permission=Permission.READ)
    for path in ("/api/v1/bots", "/api/v1/meetings", "/api/v1/bots/schedule"):
        response = await client.get(path, headers=reader.headers)
        assert response.status == 200, path
    writes = [
        ("POST", "/api/v1/bots"),
        ("POST", "/api/v1/bots/schedule"),
        ("PATCH", "/api/v1/bots/schedule/1"),
        ("DELETE", "/api/v1/bots/schedule/1"),
        ("DELETE", "/api/v1/meetings/1"),
    ]
    for method, path in writes:
        response = await client.request(method, path, json={}, headers=reader.headers)
        assert (response.status, (await response.json())["code"]) == (403, "read_only_key")
