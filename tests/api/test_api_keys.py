"""API keys: creation (edit key, bound caller, at most the caller's permission), listing
metadata only, deletion that takes effect at once, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from control_plane.enums import Permission
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


async def test_create_returns_secret_once_and_the_key_works(client: Client, owner: Caller) -> None:
    expires = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    response = await client.post(
        "/api/v1/api-keys",
        json={"name": "ci", "expires_at": expires.isoformat()},
        headers=owner.headers,
    )
    assert response.status == 201
    created = await response.json()
    assert created["key"].startswith("mbk_") and len(created["key"]) == 4 + 43
    assert created["prefix"] == created["key"][:12]
    assert created["workspace_id"] == str(owner.workspace_id)
    assert created["last_used_at"] is None
    assert created["expires_at"] == expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert created["permission"] == "edit"

    new_headers = {"X-API-Key": created["key"]}
    listed = await (await client.get("/api/v1/api-keys", headers=new_headers)).json()
    assert [item["id"] for item in listed] == [created["id"], owner.key_id]
    assert all("key" not in item for item in listed)
    assert listed[0]["last_used_at"] is not None


async def test_read_callers_and_unbound_callers_cannot_create(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    reader = await tenants.key(owner, permission=Permission.READ)
    response = await client.post("/api/v1/api-keys", json={"name": "x"}, headers=reader.headers)
    assert response.status == 403
    assert (await response.json())["code"] == "read_only_key"
    loose = await tenants.unbound()
    response = await client.post("/api/v1/api-keys", json={"name": "x"}, headers=loose.headers)
    assert response.status == 403
    assert (await response.json())["code"] == "key_not_bound"
    past = await client.post(
        "/api/v1/api-keys",
        json={"name": "x", "expires_at": "2020-01-01T00:00:00Z"},
        headers=owner.headers,
    )
    assert past.status == 422
    problem = await past.json()
    assert (problem["code"], problem["detail"]) == (
        "expires_at_in_past",
        "expires_at must be in the future",
    )
    assert problem["errors"] == [
        {"loc": ["body", "expires_at"], "msg": "in the past", "type": "past"}
    ]
    read_key = await client.post(
        "/api/v1/api-keys", json={"name": "r", "permission": "read"}, headers=owner.headers
    )
    created = await read_key.json()
    assert created["permission"] == "read"
    write = await client.post(
        "/api/v1/api-keys", json={"name": "x"}, headers={"X-API-Key": created["key"]}
    )
    assert write.status == 403


async def test_delete_stops_the_key_at_once(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    extra = await tenants.key(owner)
    assert (await client.get("/api/v1/api-keys", headers=extra.headers)).status == 200
    deleted = await client.delete(f"/api/v1/api-keys/{extra.key_id}", headers=extra.headers)
    assert deleted.status == 204
    after = await client.get("/api/v1/api-keys", headers=extra.headers)
    assert after.status == 401
    again = await client.delete(f"/api/v1/api-keys/{extra.key_id}", headers=owner.headers)
    assert again.status == 404


async def test_owner_deletes_any_workspace_key_member_only_own(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    member = await tenants.member(owner)
    refused = await client.delete(f"/api/v1/api-keys/{owner.key_id}", headers=member.headers)
    assert refused.status == 404
    assert (await refused.json())["code"] == "api_key_not_found"
    other = await tenants.workspace("Other")
    foreign = await client.delete(f"/api/v1/api-keys/{other.key_id}", headers=owner.headers)
    assert foreign.status == 404
    removed = await client.delete(f"/api/v1/api-keys/{member.key_id}", headers=owner.headers)
    assert removed.status == 204
    assert (await client.get("/api/v1/api-keys", headers=member.headers)).status == 401


async def test_expired_key_is_401_api_key_expired(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    stale = await tenants.key(owner, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    response = await client.get("/api/v1/api-keys", headers=stale.headers)
    assert response.status == 401
    assert (await response.json())["code"] == "api_key_expired"
