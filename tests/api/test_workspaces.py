"""Workspace details, settings and members: who may read, who may change, and what 403/404 mean."""

from __future__ import annotations

import uuid

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from control_plane.enums import Permission
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


async def test_details_show_defaults_and_member_count(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    await tenants.member(owner)
    response = await client.get(f"/api/v1/workspaces/{owner.workspace_id}", headers=owner.headers)
    assert response.status == 200
    body = await response.json()
    assert body["id"] == str(owner.workspace_id)
    assert body["name"] == "Acme"
    assert body["member_count"] == 2
    assert body["created_at"].endswith("Z")
    assert body["settings"] == {
        "recording_enabled": False,
        "transcribe_enabled": True,
        "default_prompt_version_id": None,
        "max_meeting_duration_seconds": 14400,
    }


async def test_other_workspace_is_403_and_unknown_is_404(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    other = await tenants.workspace("Other")
    for path in ("", "/members"):
        foreign = await client.get(
            f"/api/v1/workspaces/{other.workspace_id}{path}", headers=owner.headers
        )
        assert foreign.status == 403
        assert (await foreign.json())["code"] == "not_a_member"
        unknown = await client.get(
            f"/api/v1/workspaces/{uuid.uuid4()}{path}", headers=owner.headers
        )
        assert unknown.status == 404
        assert (await unknown.json())["code"] == "workspace_not_found"
        garbage = await client.get(f"/api/v1/workspaces/not-a-uuid{path}", headers=owner.headers)
        assert garbage.status == 404


async def test_unbound_key_is_not_a_member(client: Client, owner: Caller, tenants: Tenants) -> None:
    loose = await tenants.unbound()
    response = await client.get(f"/api/v1/workspaces/{owner.workspace_id}", headers=loose.headers)
    assert response.status == 403


async def test_owner_patches_name_and_settings_member_may_not(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    path = f"/api/v1/workspaces/{owner.workspace_id}"
    response = await client.patch(
        path,
        json={"name": "Renamed", "settings": {"recording_enabled": True}},
        headers=owner.headers,
    )
    assert response.status == 200
    body = await response.json()
    assert body["name"] == "Renamed"
    assert body["settings"]["recording_enabled"] is True
    assert body["settings"]["transcribe_enabled"] is True

    member = await tenants.member(owner)
    refused = await client.patch(path, json={"name": "Mine"}, headers=member.headers)
    assert refused.status == 403
    assert (await refused.json())["code"] == "owner_required"
    reader = await tenants.key(owner, permission=Permission.READ)
    read_only = await client.patch(path, json={"name": "Mine"}, headers=reader.headers)
    assert read_only.status == 403
    assert (await read_only.json())["code"] == "read_only_key"
    unknown_field = await client.patch(path, json={"nmae": "typo"}, headers=owner.headers)
    assert unknown_field.status == 422


async def test_default_prompt_version_must_be_one_of_the_workspace(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    other = await tenants.workspace("Other")
    foreign = await client.post(
        "/api/v1/action-prompts",
        json={"name": "x", "instructions": "find actions"},
        headers=other.headers,
    )
    own = await client.post(
        "/api/v1/action-prompts",
        json={"name": "x", "instructions": "find actions"},
        headers=owner.headers,
    )
    path = f"/api/v1/workspaces/{owner.workspace_id}"
    refused = await client.patch(
        path,
        json={"settings": {"default_prompt_version_id": (await foreign.json())["id"]}},
        headers=owner.headers,
    )
    assert refused.status == 422
    problem = await refused.json()
    assert problem["code"] == "unknown_prompt_version"
    assert problem["detail"] == "no action prompt version with this id in the workspace"
    assert problem["errors"] == [
        {
            "loc": ["body", "settings", "default_prompt_version_id"],
            "msg": "unknown prompt version",
            "type": "unknown_prompt_version",
        }
    ]
    own_id = (await own.json())["id"]
    accepted = await client.patch(
        path, json={"settings": {"default_prompt_version_id": own_id}}, headers=owner.headers
    )
    assert (await accepted.json())["settings"]["default_prompt_version_id"] == own_id
    # null clears it; omitting it leaves it alone
    kept = await client.patch(path, json={"settings": {}}, headers=owner.headers)
    assert (await kept.json())["settings"]["default_prompt_version_id"] == own_id
    cleared = await client.patch(
        path, json={"settings": {"default_prompt_version_id": None}}, headers=owner.headers
    )
    assert (await cleared.json())["settings"]["default_prompt_version_id"] is None


async def test_members_list_roles_newest_first(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    member = await tenants.member(owner)
    response = await client.get(
        f"/api/v1/workspaces/{owner.workspace_id}/members", headers=member.headers
    )
    assert response.status == 200
    members = await response.json()
    assert [(m["user_id"], m["role"]) for m in members] == [
        (member.user_id, "member"),
        (owner.user_id, "owner"),
    ]
    assert set(members[0]) == {"user_id", "email", "name", "role", "joined_at"}


async def test_max_meeting_duration_is_a_workspace_default_for_launches(
    client: Client, owner: Caller
) -> None:
    path = f"/api/v1/workspaces/{owner.workspace_id}"
    out_of_range = await client.patch(
        path, json={"settings": {"max_meeting_duration_seconds": 59}}, headers=owner.headers
    )
    assert out_of_range.status == 422
    set_ = await client.patch(
        path, json={"settings": {"max_meeting_duration_seconds": 1800}}, headers=owner.headers
    )
    assert (await set_.json())["settings"]["max_meeting_duration_seconds"] == 1800
    meet = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
    launched = await client.post("/api/v1/bots", json=meet, headers=owner.headers)
    assert (await launched.json())["settings"]["max_meeting_duration_seconds"] == 1800
    explicit = await client.post(
        "/api/v1/bots", json={**meet, "max_meeting_duration_seconds": 600}, headers=owner.headers
    )
    assert (await explicit.json())["settings"]["max_meeting_duration_seconds"] == 600
    reset = await client.patch(
        path, json={"settings": {"max_meeting_duration_seconds": None}}, headers=owner.headers
    )
    assert (await reset.json())["settings"]["max_meeting_duration_seconds"] == 14400
