"""S3 artifact storage: objects in one bucket, presigned SigV4 URLs for upload and download.

Works with AWS S3 and S3-compatible servers (MinIO, moto) through ``endpoint_url``. The client is
always SigV4 (``signature_version="s3v4"``): without it boto3 may presign SigV2 URLs, which
modern endpoints refuse (../shared/research/findings.md, infrastructure facts). boto3 is
synchronous, so every call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from control_plane.storage.base import PresignedUrl, UploadTarget, check_key

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

# S3 deletes at most this many keys per DeleteObjects request.
_DELETE_BATCH = 1000


class S3ArtifactStorage:
    """Objects under ``bucket``; URLs are presigned by the client, nothing is proxied.

    Args:
        bucket: Existing bucket name.
        region: Region the client signs for.
        endpoint_url: S3-compatible endpoint; empty means AWS.
        access_key_id: Static credentials; empty means boto3's default credential chain.
        secret_access_key: Pairs with ``access_key_id``.
    """

    def __init__(
        self,
        bucket: str,
        region: str = "us-east-1",
        endpoint_url: str = "",
        access_key_id: str = "",
        secret_access_key: str = "",
    ) -> None:
        self._bucket = bucket
        session = boto3.session.Session(
            aws_access_key_id=access_key_id or None,
            aws_secret_access_key=secret_access_key or None,
            region_name=region,
        )
        self._client: S3Client = session.client(
            "s3",
            endpoint_url=endpoint_url or None,
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
        )

    @staticmethod
    def _expiry(ttl_seconds: int) -> datetime:
        return (datetime.now(UTC) + timedelta(seconds=ttl_seconds)).replace(microsecond=0)

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        """Upload ``data`` as one object.

        Raises:
            botocore.exceptions.ClientError: S3 refused the request.
        """
        await asyncio.to_thread(
            self._client.put_object,
            Bucket=self._bucket,
            Key=check_key(key),
            Body=data,
            ContentType=content_type,
        )

    def _size(self, key: str) -> int | None:
        response = self._client.list_objects_v2(Bucket=self._bucket, Prefix=key, MaxKeys=1)
        for item in response.get("Contents", []):
            if item.get("Key") == key:
                return int(item.get("Size", 0))
        return None

    async def size(self, key: str) -> int | None:
        """Return the object's size, or ``None`` when there is no object under ``key``."""
        return await asyncio.to_thread(self._size, check_key(key))

    @property
    def caps_uploads(self) -> bool:
        """False: S3 stores whatever a presigned PUT sends unless its length is signed."""
        return False

    async def upload_target(
        self, key: str, content_type: str, ttl_seconds: int, size: int | None = None
    ) -> UploadTarget:
        """Return a presigned PUT URL; the upload must send exactly these headers.

        With ``size``, ``Content-Length`` is part of the signature: S3 refuses an upload of
        any other length (SignatureDoesNotMatch), which is what caps S3 uploads.
        """
        expires_at = self._expiry(ttl_seconds)
        params: dict[str, object] = {
            "Bucket": self._bucket,
            "Key": check_key(key),
            "ContentType": content_type,
        }
        headers = {"Content-Type": content_type}
        if size is not None:
            params["ContentLength"] = size
            headers["Content-Length"] = str(size)
        url = await asyncio.to_thread(
            self._client.generate_presigned_url, "put_object", Params=params, ExpiresIn=ttl_seconds
        )
        return UploadTarget(url=url, expires_at=expires_at, headers=headers)

    async def presign_get(self, key: str, ttl_seconds: int) -> PresignedUrl:
        """Return a presigned GET URL."""
        expires_at = self._expiry(ttl_seconds)
        url = await asyncio.to_thread(
            self._client.generate_presigned_url,
            "get_object",
            Params={"Bucket": self._bucket, "Key": check_key(key)},
            ExpiresIn=ttl_seconds,
        )
        return PresignedUrl(url=url, expires_at=expires_at)

    def _delete_prefix(self, prefix: str) -> int:
        deleted = 0
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
            keys = [item["Key"] for item in page.get("Contents", []) if "Key" in item]
            for start in range(0, len(keys), _DELETE_BATCH):
                batch = keys[start : start + _DELETE_BATCH]
                self._client.delete_objects(
                    Bucket=self._bucket,
                    Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
                )
                deleted += len(batch)
        return deleted

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every object under ``prefix``; return how many were deleted."""
        return await asyncio.to_thread(self._delete_prefix, prefix)
