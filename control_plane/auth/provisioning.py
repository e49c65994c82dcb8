"""Creating workspaces, users, memberships and keys directly (bootstrap, tests, invitations).

``meetbot admin bootstrap`` calls :func:`bootstrap`; the API's workspace and key routes and the
test fixtures use the smaller pieces. Every function works inside the caller's transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.auth import api_keys
from control_plane.db.models.workspace import ApiKey, Membership, User, Workspace
from control_plane.enums import Permission, Role


@dataclass(frozen=True)
class IssuedKey:
    """A stored key and its plaintext ``secret`` (shown once)."""

    key: ApiKey
    secret: str


async def get_or_create_user(session: AsyncSession, email: str, name: str = "") -> User:
    """The user with ``email`` (case-insensitive), created when absent."""
    normalized = email.strip().lower()
    found = await session.execute(select(User).where(User.email == normalized))
    user = found.scalar_one_or_none()
    if user is None:
        user = User(email=normalized, name=name or normalized.split("@", 1)[0])
        session.add(user)
        await session.flush()
    return user


async def create_workspace(session: AsyncSession, name: str) -> Workspace:
    """A new workspace with default settings."""
    workspace = Workspace(id=uuid.uuid4(), name=name)
    session.add(workspace)
    await session.flush()
    return workspace


async def add_member(
    session: AsyncSession, workspace: Workspace, user: User, role: Role
) -> Membership:
    """Make ``user`` a member of ``workspace`` with ``role``."""
    membership = Membership(workspace_id=workspace.id, user_id=user.id, role=role.value)
    session.add(membership)
    await session.flush()
    return membership


async def issue_key(
    session: AsyncSession,
    *,
    user: User,
    workspace_id: uuid.UUID | None,
    name: str,
    key_prefix: str,
    permission: Permission = Permission.EDIT,
    expires_at: datetime | None = None,
) -> IssuedKey:
    """Generate and store a key for ``user`` bound to ``workspace_id`` (None: unbound)."""
    new = api_keys.generate(key_prefix)
    key = ApiKey(
        user_id=user.id,
        workspace_id=workspace_id,
        name=name,
        prefix=new.prefix,
        digest=new.digest,
        permission=permission.value,
        expires_at=expires_at,
    )
    session.add(key)
    await session.flush()
    return IssuedKey(key=key, secret=new.secret)


async def bootstrap(
    session: AsyncSession, *, email: str, workspace_name: str, key_prefix: str
) -> tuple[Workspace, User, IssuedKey]:
    """Create a workspace, its owner (``email``) and an owner ``edit`` key."""
    user = await get_or_create_user(session, email)
    workspace = await create_workspace(session, workspace_name)
    await add_member(session, workspace, user, Role.OWNER)
    issued = await issue_key(
        session, user=user, workspace_id=workspace.id, name="bootstrap", key_prefix=key_prefix
    )
    return workspace, user, issued
