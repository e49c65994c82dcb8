"""Stored Zoom connections: connect from an OAuth code, list, delete, and mint OBF tokens.

:class:`ZoomConnections` is the control plane's :class:`~control_plane.hooks.ZoomTokenSource`:
docs/api.md Part 1 requires a zoom bot to bring a ``zoom_obf_token`` or have a stored connection
(400 ``zoom_token_required``), and a bot without a token gets one minted at launch from its
connection (Zoom's ``GET /v2/users/me/token?type=onbehalf&meeting_id=…``). Tokens are stored
sealed (:class:`~control_plane.token_cipher.TokenCipher`): a database dump alone does not reveal
them; a given OBF token is sealed by :meth:`ZoomConnections.seal` before it is stored.

Minting refreshes the token pair first when the access token expires within
:data:`REFRESH_MARGIN`, and once more when Zoom refuses an access token our clock still thinks
valid. Zoom rotates refresh tokens, so refreshes of one connection are serialised in this process
by a lock; when another process refreshed first (our refresh token is refused), the pair it
stored is used instead. No database transaction is held open while Zoom is being called.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.exc import IntegrityError

from control_plane.db.engine import Database
from control_plane.db.models.zoom_connection import ZoomConnection
from control_plane.errors import BadRequest, NotConfigured, ProviderError
from control_plane.token_cipher import TokenCipher, TokenDecryptionError
from control_plane.zoom.client import ZoomClient, ZoomTokens
from control_plane.zoom.errors import ZoomAuthorizationError, ZoomUnavailableError

log = logging.getLogger(__name__)

REFRESH_MARGIN = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class _Pair:
    access_token: str
    refresh_token: str
    expires_at: datetime


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
        self._locks: dict[int, asyncio.Lock] = {}

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
        self._locks.pop(connection_id, None)
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

    def seal(self, token: str) -> str:
        """``token`` (a given OBF token) sealed for storage."""
        return self._cipher.encrypt(token)

    async def launch_token(
        self, connection_id: int | None, sealed_token: str | None, native_meeting_id: str
    ) -> str:
        """The OBF token a launching zoom bot gets: its given one, else one minted.

        Raises:
            ProviderError: 502 ``zoom_provider_error`` — the given token cannot be opened, there
                is no connection to mint from, or minting failed (see :meth:`mint`).
        """
        if sealed_token is not None:
            try:
                return self._cipher.decrypt(sealed_token)
            except TokenDecryptionError as exc:
                raise ProviderError(
                    "the bot's Zoom on-behalf-of token cannot be opened with the current key",
                    code="zoom_provider_error",
                ) from exc
        if connection_id is None:
            raise ProviderError(
                "no Zoom on-behalf-of token and no stored Zoom connection to mint one",
                code="zoom_provider_error",
            )
        return await self.mint(connection_id, native_meeting_id)

    async def mint(self, connection_id: int, native_meeting_id: str) -> str:
        """A fresh on-behalf-of token for ``native_meeting_id`` from a stored connection.

        Raises:
            ProviderError: 502 ``zoom_provider_error`` — the connection is gone or no longer
                authorized, or Zoom is unreachable or failing.
        """
        try:
            pair = await self._fresh_pair(connection_id, force_refresh=False)
            try:
                return await self._client.mint_obf_token(pair.access_token, native_meeting_id)
            except ZoomAuthorizationError:
                # Revoked early or clocks disagree: one refresh, one retry.
                pair = await self._fresh_pair(connection_id, force_refresh=True)
                return await self._client.mint_obf_token(pair.access_token, native_meeting_id)
        except (ZoomAuthorizationError, ZoomUnavailableError, TokenDecryptionError) as exc:
            log.warning(
                "zoom obf minting failed",
                extra={"connection_id": connection_id, "error": type(exc).__name__},
            )
            raise ProviderError(
                "could not mint a Zoom on-behalf-of token from the stored connection",
                code="zoom_provider_error",
            ) from exc

    async def _load(self, connection_id: int) -> _Pair:
        async with self._db.reads() as session:
            row = await session.get(ZoomConnection, connection_id)
        if row is None:
            raise ZoomAuthorizationError(404)
        return _Pair(
            access_token=self._cipher.decrypt(row.access_token_sealed),
            refresh_token=self._cipher.decrypt(row.refresh_token_sealed),
            expires_at=row.expires_at,
        )

    async def _fresh_pair(self, connection_id: int, *, force_refresh: bool) -> _Pair:
        lock = self._locks.setdefault(connection_id, asyncio.Lock())
        async with lock:
            pair = await self._load(connection_id)
            if not force_refresh and pair.expires_at - REFRESH_MARGIN > datetime.now(UTC):
                return pair
            try:
                tokens = await self._client.refresh(pair.refresh_token)
            except ZoomAuthorizationError:
                # Another replica may have rotated the pair meanwhile; its result is stored.
                stored = await self._load(connection_id)
                if stored.refresh_token == pair.refresh_token:
                    raise
                return stored
            async with self._db.sessions.begin() as session:
                row = await session.get(ZoomConnection, connection_id)
                if row is None:
                    raise ZoomAuthorizationError(404)
                row.access_token_sealed = self._cipher.encrypt(tokens.access_token)
                row.refresh_token_sealed = self._cipher.encrypt(tokens.refresh_token)
                row.expires_at = tokens.expires_at
            log.info("zoom tokens refreshed", extra={"connection_id": connection_id})
            return _Pair(tokens.access_token, tokens.refresh_token, tokens.expires_at)
