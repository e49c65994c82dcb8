"""The two routes local artifact storage is served by (internal: not in the OpenAPI document).

- ``PUT  /internal/v1/artifacts/{key}`` — the upload path of an ``UploadSlot``: a signed,
  expiring URL that also needs the agent token of the bot whose prefix ``key`` lies under;
  the body is streamed to disk and counted against ``max_upload_bytes`` (413 past it); 201
  ``{storage_key, size_bytes}``.
- ``GET  /artifacts/{key}`` — signed, expiring download URLs.

Bad or expired signatures answer 403 ``invalid_signature`` / ``url_expired``; a key of another
bot 403 ``invalid_signature``; an unknown key 404. Both routes answer 404 when the artifacts
are not on this control plane's disk (``MEETBOT_STORAGE=s3``): they serve the storage that
:func:`~control_plane.storage.factory.open_storage` put under :data:`LOCAL_STORAGE`, never
another. The agent token is checked by the agent link, handed in as an :data:`AgentOfRequest`
(storage sits below the link's layers).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from uuid import UUID

from aiohttp import web

from control_plane.errors import Forbidden, NotFound, PayloadTooLarge
from control_plane.settings import SETTINGS
from control_plane.storage.base import InvalidArtifactKey, bot_prefix
from control_plane.storage.local import (
    DOWNLOAD_PATH,
    UPLOAD_PATH,
    LocalArtifactStorage,
    SignatureExpired,
    SignatureInvalid,
)

LOCAL_STORAGE = web.AppKey("local_storage", LocalArtifactStorage)
"""The local storage this process serves, when the artifacts are on its disk."""

AgentOfRequest = Callable[[web.Request], Awaitable[UUID]]
"""The bot whose agent token a request carries.

Raises ``control_plane.errors.AuthError`` (401 ``invalid_agent_token``) for none or a wrong one.
"""


def _served(request: web.Request) -> LocalArtifactStorage:
    storage = request.app.get(LOCAL_STORAGE)
    if storage is None:
        raise NotFound("artifacts are not served by the control plane")
    return storage


def _verify(storage: LocalArtifactStorage, request: web.Request, method: str, key: str) -> None:
    try:
        storage.verify(method, key, request.query.get("expires"), request.query.get("signature"))
    except SignatureExpired as exc:
        raise Forbidden("this URL has expired", code="url_expired") from exc
    except SignatureInvalid as exc:
        raise Forbidden("this URL's signature is not valid", code="invalid_signature") from exc


async def _capped(chunks: AsyncIterator[bytes], cap: int) -> AsyncIterator[bytes]:
    """``chunks`` unchanged while their total stays within ``cap`` bytes.

    Raises:
        PayloadTooLarge: 413 once the total passes ``cap``.
    """
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > cap:
            raise PayloadTooLarge(f"artifact uploads are limited to {cap} bytes")
        yield chunk


def local_storage_routes(agent_of: AgentOfRequest) -> web.RouteTableDef:
    """The upload and download routes of local storage; ``agent_of`` checks the agent token."""
    routes = web.RouteTableDef()

    @routes.put(UPLOAD_PATH + "{key:.+}")
    async def upload_artifact(request: web.Request) -> web.Response:
        """Local storage's upload path (signed URL + the agent token of the key's bot)."""
        storage = _served(request)
        key = request.match_info["key"]
        _verify(storage, request, "PUT", key)
        bot_id = await agent_of(request)
        if not key.startswith(bot_prefix(bot_id)):
            raise Forbidden("the key belongs to another bot", code="invalid_signature")
        cap = request.app[SETTINGS].max_upload_bytes
        if request.content_length is not None and request.content_length > cap:
            raise PayloadTooLarge(f"artifact uploads are limited to {cap} bytes")
        try:
            # Streamed to disk: recordings are far above the API's 1 MiB body limit. The cap is
            # counted as the body arrives (a chunked body has no Content-Length); going over it
            # aborts the write and the partial file is removed.
            chunks = _capped(request.content.iter_chunked(1 << 16), cap)
            size = await storage.put_stream(key, chunks)
        except InvalidArtifactKey as exc:
            raise NotFound("no such artifact key") from exc
        return web.json_response({"storage_key": key, "size_bytes": size}, status=201)

    @routes.get(DOWNLOAD_PATH + "{key:.+}")
    async def download_artifact(request: web.Request) -> web.StreamResponse:
        """Local storage's signed download URLs."""
        storage = _served(request)
        key = request.match_info["key"]
        _verify(storage, request, "GET", key)
        try:
            path = storage.path_of(key)
        except InvalidArtifactKey as exc:
            raise NotFound("no such artifact") from exc
        if await storage.size(key) is None:
            raise NotFound("no such artifact")
        return web.FileResponse(path)

    return routes
