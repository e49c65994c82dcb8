"""Who is calling: the identity the auth middleware attaches to each request."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from aiohttp import web

from control_plane.enums import Permission, Role
from control_plane.errors import KeyNotBound


@dataclass(frozen=True)
class AuthContext:
    """The calling key and what it is bound to.

    Attributes:
        key_id: ``api_keys.id`` of the calling key.
        user_id: Owner of the key.
        workspace_id: Workspace the key is bound to, or None for an unbound key.
        permission: ``edit`` or ``read``.
        role: The user's role in ``workspace_id`` (None when unbound or no longer a member).
    """

    key_id: int
    user_id: int
    workspace_id: uuid.UUID | None
    permission: Permission
    role: Role | None

    def require_workspace(self) -> uuid.UUID:
        """The bound workspace.

        Raises:
            KeyNotBound: The key is bound to no workspace (403 ``key_not_bound``).
        """
        if self.workspace_id is None:
            raise KeyNotBound("this API key is not bound to a workspace")
        return self.workspace_id


AUTH = web.RequestKey("auth", AuthContext)
"""Set by the auth middleware on every request of a route that needs a key."""


def auth_of(request: web.Request) -> AuthContext:
    """The caller of ``request`` (only valid on routes declared with ``auth=True``)."""
    return request[AUTH]
