"""Workspace invitations: create, list pending, revoke, accept (docs/api.md Part 1, 2.2).

The invitation token (``mbi_`` + 43 URL-safe characters, 256 bits) is shown once, in the
creation response; the database stores its SHA-256 digest. Accepting needs no API key: the
token is the credential. An invitation expires 7 days after creation; an expired one is no
longer listed and cannot be accepted (400 ``invitation_not_pending``).
"""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, EmailStr, Field, RootModel
from sqlalchemy import CursorResult, select, update

from control_plane.api.http import json_response, path_uuid, read_body
from control_plane.api.routes import ApiRoutes
from control_plane.api_keys.routes import ApiKeyCreated, created_view
from control_plane.auth import api_keys
from control_plane.auth.context import auth_of
from control_plane.auth.key_cache import KEY_CACHE
from control_plane.auth.provisioning import get_or_create_user, issue_key
from control_plane.db.engine import DB
from control_plane.db.models.invitation import Invitation
from control_plane.db.models.workspace import Membership, User
from control_plane.enums import InvitationStatus, Role
from control_plane.errors import BadRequest, Conflict, NotFound
from control_plane.quotas import enforce_quota
from control_plane.settings import SETTINGS
from control_plane.timestamps import UtcDateTime
from control_plane.workspaces.access import workspace_of_path
from control_plane.workspaces.routes import Member, member_view

routes = ApiRoutes("invitations")

INVITATION_LIFETIME = timedelta(days=7)
TOKEN_PREFIX = "mbi"  # noqa: S105 - a public marker of invitation tokens, not a secret
_BASE = "/api/v1/workspaces/{workspace_id}/invitations"
_WS = {"workspace_id": uuid.UUID}


class InvitationCreate(BaseModel):
    """``POST …/invitations`` body: who is invited, and as what (default ``member``)."""

    model_config = ConfigDict(extra="forbid")

    email: EmailStr = Field(
        description=(
            "An address whose domain is not of special use or reserved (IANA's list: .test, "
            ".local, .invalid, localhost, …), else 422 validation_error."
        )
    )
    role: Literal[Role.MEMBER, Role.OWNER] = Role.MEMBER


class InvitationOut(BaseModel):
    """An invitation (docs/api.md Part 1 "Invitation")."""

    id: uuid.UUID
    workspace_id: uuid.UUID
    email: str
    role: str
    status: Literal[InvitationStatus.PENDING, InvitationStatus.ACCEPTED, InvitationStatus.REVOKED]
    created_at: UtcDateTime
    expires_at: UtcDateTime


class InvitationCreated(InvitationOut):
    """The creation response: the invitation plus its ``token``, shown only this once."""

    token: str


class InvitationList(RootModel[list[InvitationOut]]):
    """Pending, unexpired invitations, newest first."""


class InvitationAccept(BaseModel):
    """``POST /api/v1/invitations/accept`` body: the token and the invitee's display name."""

    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)


class InvitationAccepted(BaseModel):
    """The invitee's membership and first API key (``key`` shown only this once)."""

    member: Member
    api_key: ApiKeyCreated


def _view(invitation: Invitation) -> InvitationOut:
    return InvitationOut(
        id=invitation.id,
        workspace_id=invitation.workspace_id,
        email=invitation.email,
        role=invitation.role,
        status=invitation.status,
        created_at=invitation.created_at,
        expires_at=invitation.expires_at,
    )


@routes.post(
    _BASE,
    summary="Invite someone to the workspace",
    body=InvitationCreate,
    response=InvitationCreated,
    status=201,
    errors=(403, 404, 409),
    path_types=_WS,
)
async def create_invitation(request: web.Request) -> web.Response:
    """Invite someone to the workspace (owner only).

    The ``token`` in the answer is shown once; the invitation expires after 7 days. 409
    ``already_member`` when the address already belongs to a member; 409 ``quota_exceeded`` at
    ``max_pending_invitations`` pending ones.
    """
    workspace_id = await workspace_of_path(request, owner_only=True)
    body = await read_body(request, InvitationCreate)
    email = str(body.email).strip().lower()
    token = f"{TOKEN_PREFIX}_{secrets.token_urlsafe(32)}"
    now = datetime.now(UTC)
    async with request.app[DB].sessions.begin() as session:
        existing = await session.scalar(
            select(Membership.id)
            .join(User, User.id == Membership.user_id)
            .where(Membership.workspace_id == workspace_id, User.email == email)
        )
        if existing is not None:
            raise Conflict("this address already belongs to a member", code="already_member")
        await enforce_quota(
            session,
            select(Invitation.id).where(
                Invitation.workspace_id == workspace_id,
                Invitation.status == InvitationStatus.PENDING.value,
                Invitation.expires_at > now,
            ),
            request.app[SETTINGS].max_pending_invitations,
            "pending invitations",
        )
        invitation = Invitation(
            id=uuid.uuid4(),
            workspace_id=workspace_id,
            email=email,
            role=body.role.value,
            status=InvitationStatus.PENDING.value,
            token_digest=api_keys.digest_of(token),
            invited_by_user_id=auth_of(request).user_id,
            created_at=now,
            expires_at=now + INVITATION_LIFETIME,
        )
        session.add(invitation)
        await session.flush()
        view = InvitationCreated(**_view(invitation).model_dump(), token=token)
    return json_response(view, status=201)


@routes.get(
    _BASE,
    summary="Pending invitations",
    response=InvitationList,
    errors=(403, 404),
    path_types=_WS,
)
async def list_invitations(request: web.Request) -> web.Response:
    """Invitations with status ``pending`` that have not expired, newest first."""
    workspace_id = await workspace_of_path(request)
    async with request.app[DB].reads() as session:
        rows = (
            await session.scalars(
                select(Invitation)
                .where(
                    Invitation.workspace_id == workspace_id,
                    Invitation.status == InvitationStatus.PENDING,
                    Invitation.expires_at > datetime.now(UTC),
                )
                .order_by(Invitation.created_at.desc(), Invitation.id.desc())
            )
        ).all()
    return json_response(InvitationList([_view(row) for row in rows]))


@routes.delete(
    _BASE + "/{invitation_id}",
    summary="Revoke an invitation",
    status=204,
    errors=(400, 403, 404),
    path_types={**_WS, "invitation_id": uuid.UUID},
)
async def revoke_invitation(request: web.Request) -> web.Response:
    """Revoke an invitation: its status becomes ``revoked``.

    403 for role ``member``; 404 ``invitation_not_found``; 400 ``invitation_not_pending`` when
    already accepted or revoked.
    """
    workspace_id = await workspace_of_path(request, owner_only=True)
    invitation_id = path_uuid(request, "invitation_id", code="invitation_not_found")
    async with request.app[DB].sessions.begin() as session:
        invitation = await session.get(Invitation, invitation_id, with_for_update=True)
        if invitation is None or invitation.workspace_id != workspace_id:
            raise NotFound("no such invitation", code="invitation_not_found")
        if invitation.status != InvitationStatus.PENDING:
            raise BadRequest(
                f"the invitation is {invitation.status}, not pending",
                code="invitation_not_pending",
            )
        invitation.status = InvitationStatus.REVOKED.value
    return web.Response(status=204)


@routes.post(
    "/api/v1/invitations/accept",
    summary="Accept an invitation",
    body=InvitationAccept,
    response=InvitationAccepted,
    status=201,
    errors=(400, 404),
    auth=False,
)
async def accept_invitation(request: web.Request) -> web.Response:
    """Accept an invitation; no API key: the token is the credential.

    The invitee becomes a member (an existing member keeps the role they have) and gets a first
    ``edit`` key bound to the workspace. 400 ``invitation_not_pending`` for an expired, revoked or
    accepted token; 404 ``invitation_not_found`` for a token never issued.
    """
    body = await read_body(request, InvitationAccept)
    digest = api_keys.digest_of(body.token)
    now = datetime.now(UTC)
    async with request.app[DB].sessions.begin() as session:
        invitation = await session.scalar(
            select(Invitation).where(Invitation.token_digest == digest)
        )
        if invitation is None:
            raise NotFound("no invitation has this token", code="invitation_not_found")
        # Claim with a conditional UPDATE so two concurrent accepts cannot both succeed.
        claimed = await session.execute(
            update(Invitation)
            .where(
                Invitation.id == invitation.id,
                Invitation.status == InvitationStatus.PENDING,
                Invitation.expires_at > now,
            )
            .values(status=InvitationStatus.ACCEPTED.value, accepted_at=now)
            .execution_options(synchronize_session=False)
        )
        if not isinstance(claimed, CursorResult) or claimed.rowcount != 1:
            raise BadRequest(
                "the invitation is expired, revoked or already accepted",
                code="invitation_not_pending",
            )
        user = await get_or_create_user(session, invitation.email, body.name)
        membership = await session.scalar(
            select(Membership).where(
                Membership.workspace_id == invitation.workspace_id, Membership.user_id == user.id
            )
        )
        if membership is None:
            membership = Membership(
                workspace_id=invitation.workspace_id,
                user_id=user.id,
                role=Role(invitation.role).value,
                joined_at=now,
            )
            session.add(membership)
            await session.flush()
        issued = await issue_key(
            session,
            user=user,
            workspace_id=invitation.workspace_id,
            name="invitation",
            key_prefix=request.app[SETTINGS].key_prefix,
        )
        accepted = InvitationAccepted(
            member=member_view(membership, user),
            api_key=created_view(issued.key, issued.secret),
        )
    # The invitee's existing keys of this workspace may be cached without a role.
    request.app[KEY_CACHE].clear()
    return json_response(accepted, status=201)
