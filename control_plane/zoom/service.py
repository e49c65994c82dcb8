"""Stored Zoom connections: connect from an OAuth code, list, delete, and find a usable one.

:class:`ZoomConnections` is the control plane's
:class:`~control_plane.hooks.ZoomConnectionLookup`: docs/api.md Part 1 requires a zoom bot to
bring a ``zoom_obf_token`` or have a stored connection (400 ``zoom_token_required``). Nothing is
minted from the connection: meetbot's bots join through Zoom's web client, which takes no
on-behalf-of (OBF) token (docs/api.md 2.3, "Zoom"); the connections are kept for a Meeting SDK
join path (docs/api.md 2.12). Tokens are stored sealed
(:class:`~control_plane.token_cipher.TokenCipher`): a database dump alone does not reveal them.
No database transaction is held open while Zoom is being called.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.exc import IntegrityError

from control_plane.db.engine import Database
from control_plane.db.models.zoom_connection import ZoomConnection
from control_plane.errors import BadRequest, NotConfigured, ProviderError
from control_plane.token_cipher import TokenCipher
from control_plane.zoom.client import ZoomClient, ZoomTokens
from control_plane.zoom.errors import ZoomAuthorizationError, ZoomUnavailableError

log = logging.getLogger(__name__)


class ZoomConnections:
    """Zoom connections of every workspace, over the app's database and one Zoom client.

    Args:
        database: The app's database.
        client: Zoom REST client.
        cipher: Seals tokens at rest.
    """

    def __init__(self, database: Database, client: ZoomClient, cipher: TokenCipher) -> None:
        self._db = database
        self._client = client
        self._cipher = cipher

    async def connect(
        self,
        workspace_id: uuid.UUID,
        user_id: int,
        authorization_code: str,
        redirect_uri: str,
    ) -> ZoomConnection:
        """Exchange an OAuth code and store the connection.

        An existing connection of the same Zoom user in this workspace gets the new tokens in place.

        Raises:
            NotConfigured: 503 ``zoom_not_configured`` — no client id/secret set.
            BadRequest: 400 ``zoom_authorization_failed`` — Zoom refused the code.
            ProviderError: 502 ``zoom_provider_error`` — Zoom unreachable or failing.
        """
        if not self._client.configured:
            raise NotConfigured(
                "set MEETBOT_ZOOM_CLIENT_ID and MEETBOT_ZOOM_CLIENT_SECRET to connect Zoom",
                code="zoom_not_configured",
            )
        try:
            tokens = await self._client.exchange_code(authorization_code, redirect_uri)
            zoom_user = await self._client.current_user(tokens.access_token)
        except ZoomAuthorizationError as exc:
            raise BadRequest(
                "Zoom refused the authorization code", code="zoom_authorization_failed"
            ) from exc
        except ZoomUnavailableError as exc:
            raise ProviderError("Zoom could not be reached", code="zoom_provider_error") from exc
        for _ in range(2):
            try:
                return await self._upsert(
                    workspace_id, user_id, zoom_user.id, zoom_user.email, tokens
                )
            except IntegrityError:
                # A concurrent connect of the same Zoom user inserted first; update that row.
                continue
        raise ProviderError("could not store the Zoom connection", code="zoom_provider_error")

    async def _upsert(
        self,
        workspace_id: uuid.UUID,
        user_id: int,
        zoom_user_id: str,
        email: str,
        tokens: ZoomTokens,
    ) -> ZoomConnection:
        async with self._db.sessions.begin() as session:
            row = await session.scalar(
                select(ZoomConnection).where(
                    ZoomConnection.workspace_id == workspace_id,
                    ZoomConnection.zoom_user_id == zoom_user_id,
                )
            )
            if row is None:
                row = ZoomConnection(workspace_id=workspace_id, zoom_user_id=zoom_user_id)
                session.add(row)
            row.user_id = user_id
            row.email = email
            row.access_token_sealed = self._cipher.encrypt(tokens.access_token)
            row.refresh_token_sealed = self._cipher.encrypt(tokens.refresh_token)
            row.expires_at = tokens.expires_at
            await session.flush()
            await session.refresh(row)
            return row

    async def for_workspace(self, workspace_id: uuid.UUID) -> Sequence[ZoomConnection]:
        """The workspace's connections, newest first."""
        async with self._db.reads() as session:
            return (
                await session.scalars(
                    select(ZoomConnection)
                    .where(ZoomConnection.workspace_id == workspace_id)
                    .order_by(ZoomConnection.created_at.desc(), ZoomConnection.id.desc())
                )
            ).all()

    async def delete(
        self, workspace_id: uuid.UUID, connection_id: int, *, user_id: int | None
    ) -> bool:
        """Remove a connection of the workspace; with ``user_id``, only one that user made.

        Returns:
            Whether a connection was removed.
        """
        condition = [
            ZoomConnection.id == connection_id,
            ZoomConnection.workspace_id == workspace_id,
        ]
        if user_id is not None:
            condition.append(ZoomConnection.user_id == user_id)
        async with self._db.sessions.begin() as session:
            result = await session.execute(delete(ZoomConnection).where(*condition))
        return isinstance(result, CursorResult) and result.rowcount == 1

    async def usable_connection(
        self, workspace_id: uuid.UUID, user_id: int | None, connection_id: int | None
    ) -> int | None:
        """The connection a new zoom bot would use, or None when there is none.

        Given ``connection_id``: that connection when it is one of the workspace's (any
        member's), else None. Without it: the user's newest connection in the workspace.
        """
        query = select(ZoomConnection.id).where(ZoomConnection.workspace_id == workspace_id)
        if connection_id is not None:
            query = query.where(ZoomConnection.id == connection_id)
        elif user_id is not None:
            query = query.where(ZoomConnection.user_id == user_id)
        else:
            return None
        async with self._db.reads() as session:
            found = await session.scalar(
                query.order_by(ZoomConnection.created_at.desc(), ZoomConnection.id.desc()).limit(1)
            )
        return found
