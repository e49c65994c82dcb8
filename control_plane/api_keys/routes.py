"""API keys of the caller: create, list (metadata only), delete (docs/api.md Part 1, 2.2).

A new key belongs to the calling user and is bound to the calling key's workspace; its
``permission`` is at most the caller's (only ``edit`` keys get here: ``read`` keys are refused
by the auth middleware with 403 ``read_only_key``). The secret is in the creation response
only; the database keeps its SHA-256 digest.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, RootModel
from sqlalchemy import ColumnElement, CursorResult, delete, select

from control_plane.api.http import json_response, path_int, read_body
from control_plane.api.routes import ApiRoutes
from control_plane.auth.context import AuthContext, auth_of
from control_plane.auth.key_cache import KEY_CACHE
from control_plane.auth.provisioning import issue_key
from control_plane.db.engine import DB
from control_plane.db.models.workspace import ApiKey, User
from control_plane.enums import Permission, Role
from control_plane.errors import NotFound, Validation
from control_plane.quotas import enforce_quota
from control_plane.settings import SETTINGS
from control_plane.timestamps import UtcDateTime

routes = ApiRoutes("api-keys")


class ApiKeyCreate(BaseModel):
    """``POST /api/v1/api-keys`` body.

    ``expires_at`` omitted (or null) means the key never expires; it must be in the future.
    ``permission`` defaults to ``edit``.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    expires_at: UtcDateTime | None = Field(
        default=None, description="Must be in the future (422 expires_at_in_past); null: never."
    )
    permission: Literal[Permission.EDIT, Permission.READ] = Permission.EDIT


class ApiKeyInfo(BaseModel):
    """A key's metadata (docs/api.md Part 1 "API key" without ``key``)."""

    id: int
    name: str
    prefix: str
    workspace_id: uuid.UUID | None
    permission: str
    created_at: UtcDateTime
    last_used_at: UtcDateTime | None
    expires_at: UtcDateTime | None


class ApiKeyCreated(ApiKeyInfo):
    """The creation response: metadata plus the plaintext ``key``, shown only this once."""

    key: str


class ApiKeyList(RootModel[list[ApiKeyInfo]]):
    """The caller's keys in this workspace, newest first."""


def key_info(key: ApiKey) -> ApiKeyInfo:
    """The metadata view of a stored key."""
    return ApiKeyInfo(
        id=key.id,
        name=key.name,
        prefix=key.prefix,
        workspace_id=key.workspace_id,
        permission=key.permission,
        created_at=key.created_at,
        last_used_at=key.last_used_at,
        expires_at=key.expires_at,
    )


def created_view(key: ApiKey, secret: str) -> ApiKeyCreated:
    """The creation response of a key just issued."""
    return ApiKeyCreated(**key_info(key).model_dump(), key=secret)


@routes.post(
    "/api/v1/api-keys",
    summary="Create an API key",
    body=ApiKeyCreate,
    response=ApiKeyCreated,
    status=201,
    errors=(403, 409),
)
async def create_api_key(request: web.Request) -> web.Response:
    """Create a key of the caller, bound to the caller's workspace.

    403 ``key_not_bound`` for an unbound caller; 422 ``expires_at_in_past``; 409
    ``quota_exceeded`` at ``max_api_keys``.
    """
    caller = auth_of(request)
    workspace_id = caller.require_workspace()
    body = await read_body(request, ApiKeyCreate)
    if body.expires_at is not None and body.expires_at <= datetime.now(UTC):
        raise Validation.of_field(
            "expires_at",
            "expires_at must be in the future",
            code="expires_at_in_past",
            msg="in the past",
            item_type="past",
        )
    # At most the caller's permission (a read caller never gets here, but keep the rule local).
    permission = Permission(body.permission)
    if caller.permission is Permission.READ:
        permission = Permission.READ
    async with request.app[DB].sessions.begin() as session:
        user = await session.get(User, caller.user_id)
        if user is None:
            raise NotFound("the key's user no longer exists", code="user_not_found")
        await enforce_quota(
            session,
            select(ApiKey.id).where(ApiKey.workspace_id == workspace_id),
            request.app[SETTINGS].max_api_keys,
            "API keys",
        )
        issued = await issue_key(
            session,
            user=user,
            workspace_id=workspace_id,
            name=body.name,
            key_prefix=request.app[SETTINGS].key_prefix,
            permission=permission,
            expires_at=body.expires_at,
        )
        view = created_view(issued.key, issued.secret)
    return json_response(view, status=201)


def _same_workspace(caller: AuthContext) -> ColumnElement[bool]:
    if caller.workspace_id is None:
        return ApiKey.workspace_id.is_(None)
    return ApiKey.workspace_id == caller.workspace_id


@routes.get("/api/v1/api-keys", summary="List the caller's API keys", response=ApiKeyList)
async def list_api_keys(request: web.Request) -> web.Response:
    """The caller's keys in the caller's workspace (metadata only, never the secret)."""
    caller = auth_of(request)
    async with request.app[DB].reads() as session:
        keys = (
            await session.scalars(
                select(ApiKey)
                .where(ApiKey.user_id == caller.user_id, _same_workspace(caller))
                .order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
            )
        ).all()
    return json_response(ApiKeyList([key_info(key) for key in keys]))


@routes.delete(
    "/api/v1/api-keys/{key_id}",
    summary="Delete an API key",
    status=204,
    errors=(404,),
    path_types={"key_id": int},
)
async def delete_api_key(request: web.Request) -> web.Response:
    """Delete an API key: it stops working at once.

    The caller's own keys; owners may delete any key of their workspace; anything else is 404
    ``api_key_not_found``.
    """
    caller = auth_of(request)
    key_id = path_int(request, "key_id", code="api_key_not_found")
    condition = [ApiKey.id == key_id, _same_workspace(caller)]
    if not (caller.workspace_id is not None and caller.role is Role.OWNER):
        condition.append(ApiKey.user_id == caller.user_id)
    async with request.app[DB].sessions.begin() as session:
        result = await session.execute(delete(ApiKey).where(*condition))
    if not isinstance(result, CursorResult) or result.rowcount != 1:
        raise NotFound("no such API key", code="api_key_not_found")
    request.app[KEY_CACHE].forget_key(key_id)
    return web.Response(status=204)
