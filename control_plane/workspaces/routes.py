"""Workspace details, settings and members (docs/api.md Part 1 "Workspace", 2.2).

Access rules are :mod:`control_plane.workspaces.access`'s: members read, owners change.
"""

from __future__ import annotations

import uuid

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, RootModel
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import MAX_MEETING_DURATION_S
from control_plane.api.http import json_response, read_body
from control_plane.api.routes import ApiRoutes
from control_plane.db.engine import DB
from control_plane.db.models.action_prompt import ActionPrompt
from control_plane.db.models.workspace import Membership, User, Workspace
from control_plane.errors import Validation
from control_plane.timestamps import UtcDateTime
from control_plane.workspaces.access import workspace_not_found, workspace_of_path

routes = ApiRoutes("workspaces")

_WS = {"workspace_id": uuid.UUID}


class WorkspaceSettings(BaseModel):
    """Bot launch defaults of the workspace and its default action prompt version."""

    recording_enabled: bool
    transcribe_enabled: bool
    default_prompt_version_id: str | None
    max_meeting_duration_seconds: int = Field(
        description="Default cap on a bot's time in a meeting, in seconds (`max_duration`)."
    )


class WorkspaceDetails(BaseModel):
    """``GET /api/v1/workspaces/{workspace_id}`` (docs/api.md 2.2)."""

    id: uuid.UUID
    name: str
    created_at: UtcDateTime
    member_count: int
    settings: WorkspaceSettings


class WorkspaceSettingsPatch(BaseModel):
    """Settings to change; absent (or null booleans) leave a value as it is.

    ``default_prompt_version_id``: a prompt version id of this workspace, or null to fall back
    to the built-in system prompt. ``max_meeting_duration_seconds``: the bots' default cap, or
    null for the built-in default.
    """

    model_config = ConfigDict(extra="forbid")

    recording_enabled: bool | None = None
    transcribe_enabled: bool | None = None
    default_prompt_version_id: str | None = Field(default=None, max_length=64)
    max_meeting_duration_seconds: int | None = Field(
        default=None, ge=MAX_MEETING_DURATION_S[0], le=MAX_MEETING_DURATION_S[1]
    )


class WorkspacePatch(BaseModel):
    """``PATCH /api/v1/workspaces/{workspace_id}`` body: any of ``name`` and ``settings.*``."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=200)
    settings: WorkspaceSettingsPatch | None = None


class Member(BaseModel):
    """A workspace member (docs/api.md Part 1 "Workspace member")."""

    user_id: int
    email: str
    name: str
    role: str
    joined_at: UtcDateTime


class MemberList(RootModel[list[Member]]):
    """An array of members."""


def member_view(membership: Membership, user: User) -> Member:
    """The member ``user`` is by ``membership``: who (the user), as what and since when."""
    return Member(
        user_id=user.id,
        email=user.email,
        name=user.name,
        role=membership.role,
        joined_at=membership.joined_at,
    )


async def _workspace(
    session: AsyncSession, workspace_id: uuid.UUID, *, for_update: bool = False
) -> Workspace:
    """The workspace's row (locked ``FOR UPDATE`` when ``for_update``).

    Raises:
        NotFound: 404 ``workspace_not_found``.
    """
    workspace = await session.get(Workspace, workspace_id, with_for_update=for_update)
    if workspace is None:
        raise workspace_not_found()
    return workspace


async def _details(session: AsyncSession, workspace_id: uuid.UUID) -> WorkspaceDetails:
    workspace = await _workspace(session, workspace_id)
    count = await session.scalar(
        select(func.count()).select_from(Membership).where(Membership.workspace_id == workspace_id)
    )
    return WorkspaceDetails(
        id=workspace.id,
        name=workspace.name,
        created_at=workspace.created_at,
        member_count=int(count or 0),
        settings=WorkspaceSettings(
            recording_enabled=workspace.recording_enabled,
            transcribe_enabled=workspace.transcribe_enabled,
            default_prompt_version_id=workspace.default_prompt_version_id,
            max_meeting_duration_seconds=workspace.max_meeting_duration_seconds
            or MAX_MEETING_DURATION_S[2],
        ),
    )


@routes.get(
    "/api/v1/workspaces/{workspace_id}",
    summary="Workspace details",
    response=WorkspaceDetails,
    errors=(403, 404),
    path_types=_WS,
)
async def get_workspace(request: web.Request) -> web.Response:
    """Details and settings of the caller's workspace; 403 ``not_a_member``, 404 unknown."""
    workspace_id = await workspace_of_path(request)
    async with request.app[DB].reads() as session:
        return json_response(await _details(session, workspace_id))


@routes.patch(
    "/api/v1/workspaces/{workspace_id}",
    summary="Update workspace name and settings",
    body=WorkspacePatch,
    response=WorkspaceDetails,
    errors=(403, 404),
    path_types=_WS,
)
async def update_workspace(request: web.Request) -> web.Response:
    """Update the workspace's name and settings (owner only).

    ``settings.default_prompt_version_id`` must name a prompt version of this workspace (422
    ``unknown_prompt_version``) or be null.
    """
    workspace_id = await workspace_of_path(request, owner_only=True)
    patch = await read_body(request, WorkspacePatch)
    async with request.app[DB].sessions.begin() as session:
        workspace = await _workspace(session, workspace_id, for_update=True)
        if patch.name is not None:
            workspace.name = patch.name
        if patch.settings is not None:
            await _apply_settings(session, workspace, patch.settings)
        await session.flush()
        details = await _details(session, workspace_id)
    return json_response(details)


async def _apply_settings(
    session: AsyncSession, workspace: Workspace, settings: WorkspaceSettingsPatch
) -> None:
    if settings.recording_enabled is not None:
        workspace.recording_enabled = settings.recording_enabled
    if settings.transcribe_enabled is not None:
        workspace.transcribe_enabled = settings.transcribe_enabled
    if "max_meeting_duration_seconds" in settings.model_fields_set:
        workspace.max_meeting_duration_seconds = settings.max_meeting_duration_seconds
    if "default_prompt_version_id" in settings.model_fields_set:
        version_id = settings.default_prompt_version_id
        if version_id is not None:
            found = await session.scalar(
                select(ActionPrompt.id).where(
                    ActionPrompt.id == version_id, ActionPrompt.workspace_id == workspace.id
                )
            )
            if found is None:
                raise Validation.of_field(
                    ("settings", "default_prompt_version_id"),
                    "no action prompt version with this id in the workspace",
                    code="unknown_prompt_version",
                    msg="unknown prompt version",
                )
        workspace.default_prompt_version_id = version_id


@routes.get(
    "/api/v1/workspaces/{workspace_id}/members",
    summary="Workspace members",
    response=MemberList,
    errors=(403, 404),
    path_types=_WS,
)
async def list_members(request: web.Request) -> web.Response:
    """Every member with role and join time, newest first; 403 ``not_a_member``, 404."""
    workspace_id = await workspace_of_path(request)
    async with request.app[DB].reads() as session:
        rows = (
            await session.execute(
                select(Membership, User)
                .join(User, User.id == Membership.user_id)
                .where(Membership.workspace_id == workspace_id)
                .order_by(Membership.joined_at.desc(), Membership.id.desc())
            )
        ).all()
    return json_response(MemberList([member_view(membership, user) for membership, user in rows]))
