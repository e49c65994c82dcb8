"""Zoom connections of the workspace: list, connect from an OAuth code, delete (docs/api.md 2.3).

A connection stores one Zoom user's OAuth tokens, sealed, so a ``zoom`` bot created without a
``zoom_obf_token`` gets an on-behalf-of token minted from it at launch (docs/api.md Part 1 and
2.3, "Zoom").
"""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, RootModel

from control_plane.api.http import json_response, path_int, read_body
from control_plane.api.routes import ApiRoutes
from control_plane.auth.context import auth_of
from control_plane.db.models.zoom_connection import ZoomConnection
from control_plane.enums import Role
from control_plane.errors import NotFound
from control_plane.timestamps import UtcDateTime
from control_plane.zoom.wiring import ZOOM_CONNECTIONS

routes = ApiRoutes("zoom")

_BASE = "/api/v1/workspace/integrations/zoom/connections"


class ZoomConnectionOut(BaseModel):
    """A stored connection.

    ``expires_at`` is when its current access token expires (it is refreshed on use).
    """

    id: int
    zoom_user_id: str
    email: str
    created_at: UtcDateTime
    expires_at: UtcDateTime


class ZoomConnectionList(RootModel[list[ZoomConnectionOut]]):
    """The workspace's connections, newest first."""


class ZoomConnectionCreate(BaseModel):
    """The OAuth authorization code Zoom redirected with, and the redirect URI used."""

    model_config = ConfigDict(extra="forbid")

    authorization_code: str = Field(min_length=1, max_length=2048)
    redirect_uri: str = Field(min_length=1, max_length=2048)


def _view(row: ZoomConnection) -> ZoomConnectionOut:
    return ZoomConnectionOut(
        id=row.id,
        zoom_user_id=row.zoom_user_id,
        email=row.email,
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


@routes.get(_BASE, summary="List Zoom connections", response=ZoomConnectionList, errors=(403,))
async def list_zoom_connections(request: web.Request) -> web.Response:
    """Every Zoom connection of the caller's workspace (no tokens)."""
    workspace_id = auth_of(request).require_workspace()
    rows = await request.app[ZOOM_CONNECTIONS].for_workspace(workspace_id)
    return json_response(ZoomConnectionList([_view(row) for row in rows]))


@routes.post(
    _BASE,
    summary="Connect a Zoom user from an OAuth code",
    body=ZoomConnectionCreate,
    response=ZoomConnectionOut,
    status=201,
    errors=(403, 502, 503),
)
async def create_zoom_connection(request: web.Request) -> web.Response:
    """Exchange the code with Zoom and store the tokens encrypted.

    Uses settings ``zoom_client_id``/``zoom_client_secret``. 400 ``zoom_authorization_failed`` when
    Zoom refuses the code; 502 ``zoom_provider_error``; 503 ``zoom_not_configured``.
    """
    caller = auth_of(request)
    workspace_id = caller.require_workspace()
    body = await read_body(request, ZoomConnectionCreate)
    row = await request.app[ZOOM_CONNECTIONS].connect(
        workspace_id, caller.user_id, body.authorization_code, body.redirect_uri
    )
    return json_response(_view(row), status=201)


@routes.delete(
    _BASE + "/{connection_id}",
    summary="Delete a Zoom connection",
    status=204,
    errors=(403, 404),
    path_types={"connection_id": int},
)
async def delete_zoom_connection(request: web.Request) -> web.Response:
    """Delete a Zoom connection: its stored tokens are removed.

    The caller's own connections; owners may delete any of the workspace; anything else is 404
    ``zoom_connection_not_found``.
    """
    caller = auth_of(request)
    workspace_id = caller.require_workspace()
    connection_id = path_int(request, "connection_id", code="zoom_connection_not_found")
    removed = await request.app[ZOOM_CONNECTIONS].delete(
        workspace_id,
        connection_id,
        user_id=None if caller.role is Role.OWNER else caller.user_id,
    )
    if not removed:
        raise NotFound("no such Zoom connection", code="zoom_connection_not_found")
    return web.Response(status=204)
