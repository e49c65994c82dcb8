"""Open the artifact storage the settings name (``MEETBOT_STORAGE``: ``local`` or ``s3``)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from control_plane.settings import Settings
from control_plane.storage.base import ArtifactStorage
from control_plane.storage.local import LocalArtifactStorage
from control_plane.storage.routes import LOCAL_STORAGE


class StorageNotConfigured(ValueError):
    """``storage = "s3"`` without ``s3_bucket``."""


def _open_s3(settings: Settings) -> ArtifactStorage:
    if not settings.s3_bucket:
        raise StorageNotConfigured("MEETBOT_STORAGE=s3 needs MEETBOT_S3_BUCKET")
    # Imported here: boto3 is slow to import and unused with local storage.
    from control_plane.storage.s3 import S3ArtifactStorage

    return S3ArtifactStorage(
        settings.s3_bucket,
        region=settings.s3_region,
        endpoint_url=settings.s3_endpoint_url,
        access_key_id=settings.s3_access_key_id,
        secret_access_key=settings.s3_secret_access_key,
    )


async def open_storage(app: web.Application, settings: Settings) -> ArtifactStorage:
    """Return the configured storage, opened off the event loop (folders, a key file, boto3).

    Local storage is also put under :data:`~control_plane.storage.routes.LOCAL_STORAGE`: the
    control plane serves its URLs (:func:`~control_plane.storage.routes.local_storage_routes`).

    Raises:
        StorageNotConfigured: S3 was chosen without a bucket.
        OSError: The local data directory is not writable.
    """
    if settings.storage == "s3":
        return await asyncio.to_thread(_open_s3, settings)
    local = await asyncio.to_thread(
        LocalArtifactStorage.open, settings.data_dir, settings.effective_public_url
    )
    app[LOCAL_STORAGE] = local
    return local
