"""Access to the ``/api/v1/workspaces/{workspace_id}/…`` paths (docs/api.md Part 1, 2.2).

These paths are the one place where another workspace answers 403 rather than 404 (Part 1:
"caller must be a member … 403; 404"): an unknown workspace is 404 ``workspace_not_found``;
one the calling key is not bound to, or whose membership the key's user lost, is 403
``not_a_member``; owner-only operations called with role ``member`` are 403
``owner_required``. A key is scoped to one workspace (Part 1 "Authentication" 2), so a user's
membership of workspace B does not open B to a key bound to A.
"""

from __future__ import annotations

import uuid

from aiohttp import web
from sqlalchemy import select

from control_plane.api.http import path_uuid
from control_plane.auth.context import AuthContext, auth_of
from control_plane.db.engine import DB
from control_plane.db.models.workspace import Workspace
from control_plane.enums import Role
from control_plane.errors import Forbidden, NotFound


async def workspace_of_path(request: web.Request, *, owner_only: bool = False) -> uuid.UUID:
    """The ``{workspace_id}`` of the path, once the caller may use it.

    Args:
        request: A request of an authenticated route with a ``workspace_id`` path parameter.
        owner_only: Whether the operation needs role ``owner``.

    Returns:
        The workspace id (the caller's own workspace).

    Raises:
        NotFound: ``workspace_not_found`` — no such workspace (or not a UUID).
        Forbidden: ``not_a_member`` / ``owner_required`` as in the module docstring.
    """
    workspace_id = path_uuid(request, "workspace_id", code="workspace_not_found")
    context = auth_of(request)
    if workspace_id != context.workspace_id or context.role is None:
        await _require_exists(request, workspace_id)
        raise Forbidden("the API key is not a member of this workspace", code="not_a_member")
    require_owner(context, owner_only=owner_only)
    return workspace_id


def require_owner(context: AuthContext, *, owner_only: bool = True) -> None:
    """Refuse role ``member`` when ``owner_only`` (403 ``owner_required``)."""
    if owner_only and context.role is not Role.OWNER:
        raise Forbidden("this operation needs the owner role", code="owner_required")


def workspace_not_found() -> NotFound:
    """The 404 ``workspace_not_found`` of a workspace that does not exist."""
    return NotFound("no such workspace", code="workspace_not_found")


async def _require_exists(request: web.Request, workspace_id: uuid.UUID) -> None:
    async with request.app[DB].reads() as session:
        found = await session.scalar(select(Workspace.id).where(Workspace.id == workspace_id))
    if found is None:
        raise workspace_not_found()
