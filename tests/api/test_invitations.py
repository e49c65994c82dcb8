"""Invitations: create (owner only, token once), list pending, revoke (204/400/403/404), accept."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import update

from control_plane.db.engine import DB
from control_plane.db.models.invitation import Invitation
from tests.plugins.api_app import Caller, Tenants

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


def _base(caller: Caller) -> str:
    return f"/api/v1/workspaces/{caller.workspace_id}/invitations"


async def _invite(
    client: Client, owner: Caller, email: str, role: str = "member"
) -> dict[str, str]:
    response = await client.post(
        _base(owner), json={"email": email, "role": role}, headers=owner.headers
    )
    assert response.status == 201, await response.text()
    body: dict[str, str] = await response.json()
    return body


async def test_create_shows_token_once_and_lists_pending(client: Client, owner: Caller) -> None:
    created = await _invite(client, owner, "Ann@Example.org")
    assert created["token"].startswith("mbi_")
    assert created["email"] == "ann@example.org"
    assert created["status"] == "pending"
    assert created["workspace_id"] == str(owner.workspace_id)
    created_at = datetime.fromisoformat(created["created_at"])
    expires_at = datetime.fromisoformat(created["expires_at"])
    assert expires_at - created_at == timedelta(days=7)

    listed = await (await client.get(_base(owner), headers=owner.headers)).json()
    assert [item["id"] for item in listed] == [created["id"]]
    assert "token" not in listed[0]


async def test_only_owners_invite_and_members_are_not_reinvited(
    client: Client, owner: Caller, tenants: Tenants
) -> None:
    member = await tenants.member(owner)
    refused = await client.post(
        _base(owner), json={"email": "x@example.org"}, headers=member.headers
    )
    assert refused.status == 403
    assert (await refused.json())["code"] == "owner_required"
    members = await (
        await client.get(f"/api/v1/workspaces/{owner.workspace_id}/members", headers=owner.headers)
    ).json()
    member_email = next(m["email"] for m in members if m["user_id"] == member.user_id)
    again = await client.post(_base(owner), json={"email": member_email}, headers=owner.headers)
    assert again.status == 409
    assert (await again.json())["code"] == "already_member"
    bad_role = await client.post(
        _base(owner), json={"email": "y@example.org", "role": "admin"}, headers=owner.headers
    )
    assert bad_role.status == 422


async def test_revoke_rules(client: Client, owner: Caller, tenants: Tenants) -> None:
    invitation = await _invite(client, owner, "bob@example.org")
    path = f"{_base(owner)}/{invitation['id']}"
    member = await tenants.member(owner)
    as_member = await client.delete(path, headers=member.headers)
    assert as_member.status == 403

    assert (await client.delete(path, headers=owner.headers)).status == 204
    again = await client.delete(path, headers=owner.headers)
    assert again.status == 400
    assert (await again.json())["code"] == "invitation_not_pending"
    assert await (await client.get(_base(owner), headers=owner.headers)).json() == []

    unknown = await client.delete(f"{_base(owner)}/{uuid.uuid4()}", headers=owner.headers)
    assert unknown.status == 404
    assert (await unknown.json())["code"] == "invitation_not_found"
    other = await tenants.workspace("Other")
    theirs = await _invite(client, other, "carol@example.org")
    foreign = await client.delete(f"{_base(owner)}/{theirs['id']}", headers=owner.headers)
    assert foreign.status == 404

    accepted = await _invite(client, owner, "dan@example.org")
    await client.post(
        "/api/v1/invitations/accept", json={"token": accepted["token"], "name": "Dan"}
    )
    revoke_accepted = await client.delete(f"{_base(owner)}/{accepted['id']}", headers=owner.headers)
    assert revoke_accepted.status == 400


async def test_accept_makes_a_member_with_a_working_key(client: Client, owner: Caller) -> None:
    invitation = await _invite(client, owner, "erin@example.org", role="owner")
    response = await client.post(
        "/api/v1/invitations/accept", json={"token": invitation["token"], "name": "Erin"}
    )
    assert response.status == 201, await response.text()
    body = await response.json()
    assert body["member"]["email"] == "erin@example.org"
    assert body["member"]["name"] == "Erin"
    assert body["member"]["role"] == "owner"
    key = body["api_key"]["key"]
    assert key.startswith("mbk_") and body["api_key"]["workspace_id"] == str(owner.workspace_id)

    details = await client.get(
        f"/api/v1/workspaces/{owner.workspace_id}", headers={"X-API-Key": key}
    )
    assert details.status == 200
    assert (await details.json())["member_count"] == 2

    twice = await client.post(
        "/api/v1/invitations/accept", json={"token": invitation["token"], "name": "Erin"}
    )
    assert twice.status == 400
    assert (await twice.json())["code"] == "invitation_not_pending"
    unknown = await client.post(
        "/api/v1/invitations/accept", json={"token": "mbi_nope", "name": "Erin"}
    )
    assert unknown.status == 404


async def test_revoked_and_expired_tokens_cannot_be_accepted(client: Client, owner: Caller) -> None:
    revoked = await _invite(client, owner, "fay@example.org")
    await client.delete(f"{_base(owner)}/{revoked['id']}", headers=owner.headers)
    expired = await _invite(client, owner, "gus@example.org")
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(Invitation)
            .where(Invitation.id == uuid.UUID(expired["id"]))
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    assert await (await client.get(_base(owner), headers=owner.headers)).json() == []
    for token in (revoked["token"], expired["token"]):
        response = await client.post(
            "/api/v1/invitations/accept", json={"token": token, "name": "Late"}
        )
        assert response.status == 400
        assert (await response.json())["code"] == "invitation_not_pending"
