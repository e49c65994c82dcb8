r"""Local artifact storage: files under ``{data_dir}/artifacts`` and HMAC-signed URLs.

The control plane serves the URLs itself (``control_plane.storage.routes``):

- ``GET  {public_url}/artifacts/{key}?expires=<unix s>&signature=<hex>`` downloads.
- ``PUT  {public_url}/internal/v1/artifacts/{key}?expires=…&signature=…`` uploads; it also
  needs the bot's agent token (``Authorization: Bearer``), and ``key`` must lie under that
  bot's prefix.

``signature`` is HMAC-SHA256 over ``"{METHOD}\n{key}\n{expires}"`` with a 256-bit secret
generated once into ``{data_dir}/keys/artifact_urls.key``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
import shutil
from collections.abc import AsyncIterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote, urlencode

from agent.contracts.wire import ARTIFACT_UPLOAD_PREFIX
from control_plane.storage.base import PresignedUrl, UploadTarget, check_key

_SECRET_FILE = "artifact_urls.key"  # noqa: S105 - a file name, not a secret
DOWNLOAD_PATH = "/artifacts/"
UPLOAD_PATH = ARTIFACT_UPLOAD_PREFIX


class SignatureInvalid(Exception):
    """A signed URL's signature does not match, or its parameters are malformed."""


class SignatureExpired(Exception):
    """A signed URL was valid but its ``expires`` moment has passed."""


def _load_or_create_secret(data_dir: Path) -> bytes:
    key_dir = data_dir / "keys"
    key_dir.mkdir(parents=True, exist_ok=True)
    path = key_dir / _SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass  # created earlier, or by a concurrent process: read it below
    else:
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(32))
    secret = path.read_bytes()
    if len(secret) < 32:
        raise ValueError(f"{path} is shorter than 32 bytes")
    return secret


class LocalArtifactStorage:
    """Files under a root directory; URLs signed with a secret kept beside it."""

    def __init__(self, root: Path, secret: bytes, public_url: str) -> None:
        self._root = root
        self._secret = secret
        self._public_url = public_url.rstrip("/")

    @classmethod
    def open(cls, data_dir: Path, public_url: str) -> LocalArtifactStorage:
        """Create the artifact root and URL secret under ``data_dir`` if missing (blocking).

        Raises:
            OSError: The directories or the secret file cannot be created or read.
        """
        root = data_dir / "artifacts"
        root.mkdir(parents=True, exist_ok=True)
        return cls(root, _load_or_create_secret(data_dir), public_url)

    def path_of(self, key: str) -> Path:
        """Return the file of ``key`` under the root.

        Raises:
            InvalidArtifactKey: The key is not a safe relative key.
        """
        return self._root / check_key(key)

    # Signing ---------------------------------------------------------------------------------

    def _signature(self, method: str, key: str, expires: int) -> str:
        message = f"{method}\n{key}\n{expires}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def _signed_url(self, method: str, path: str, key: str, ttl_seconds: int) -> PresignedUrl:
        expires_at = (datetime.now(UTC) + timedelta(seconds=ttl_seconds)).replace(microsecond=0)
        expires = int(expires_at.timestamp())
        query = urlencode({"expires": expires, "signature": self._signature(method, key, expires)})
        return PresignedUrl(f"{self._public_url}{path}{quote(key)}?{query}", expires_at)

    def verify(self, method: str, key: str, expires: str | None, signature: str | None) -> None:
        """Check a signed URL's parameters for ``method`` on ``key`` against the clock.

        Raises:
            SignatureInvalid: Missing or malformed parameters, or a signature that does not match.
            SignatureExpired: The signature matches but ``expires`` is in the past.
        """
        # ASCII digits only: str.isdigit() takes '²' (int() refuses it) and '١٢' (int() reads
        # it), so another spelling of the same URL would verify, or raise ValueError.
        if not expires or not signature or not (expires.isascii() and expires.isdigit()):
            raise SignatureInvalid
        expected = self._signature(method, key, int(expires))
        if not hmac.compare_digest(expected, signature):
            raise SignatureInvalid
        if int(expires) < datetime.now(UTC).timestamp():
            raise SignatureExpired

    # ArtifactStorage ------------------------------------------------------------------------

    def _write(self, key: str, data: bytes) -> None:
        path = self.path_of(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
        partial.write_bytes(data)
        partial.replace(path)  # atomic: readers never see half a file

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        """Store a body that arrives in chunks (recordings are large); return its size in bytes.

        The file appears under ``key`` only once complete.

        Raises:
            InvalidArtifactKey: The key is not a safe relative key.
            OSError: The file cannot be written.
        """
        path = self.path_of(key)
        partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")

        def open_partial() -> BinaryIO:
            path.parent.mkdir(parents=True, exist_ok=True)
            return partial.open("wb")

        handle = await asyncio.to_thread(open_partial)
        size = 0
        try:
            async for chunk in chunks:
                await asyncio.to_thread(handle.write, chunk)
                size += len(chunk)
        except BaseException:
            handle.close()
            await asyncio.to_thread(partial.unlink, True)
            raise
        handle.close()
        await asyncio.to_thread(partial.replace, path)
        return size

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        """Store ``data`` under ``key``; the content type is implied by the key's suffix."""
        await asyncio.to_thread(self._write, key, data)

    def _size(self, key: str) -> int | None:
        path = self.path_of(key)
        return path.stat().st_size if path.is_file() else None

    async def size(self, key: str) -> int | None:
        """Return the file's size in bytes, or ``None`` when it does not exist."""
        return await asyncio.to_thread(self._size, key)

    @property
    def caps_uploads(self) -> bool:
        """True: the upload route counts the streamed bytes against ``max_upload_bytes``."""
        return True

    async def upload_target(
        self, key: str, content_type: str, ttl_seconds: int, size: int | None = None
    ) -> UploadTarget:
        """Return a signed PUT URL on the control plane; the agent adds its agent token.

        ``size`` is not needed: the upload route caps what arrives.
        """
        signed = self._signed_url("PUT", UPLOAD_PATH, check_key(key), ttl_seconds)
        return UploadTarget(
            url=signed.url,
            expires_at=signed.expires_at,
            headers={"Content-Type": content_type},
            agent_auth=True,
        )

    async def presign_get(self, key: str, ttl_seconds: int) -> PresignedUrl:
        """Return a signed GET URL on the control plane."""
        return self._signed_url("GET", DOWNLOAD_PATH, check_key(key), ttl_seconds)

    def _delete_prefix(self, prefix: str) -> int:
        # Prefixes are directory-shaped (``bots/{id}/``); anything else is checked as a key.
        target = self._root / check_key(prefix.rstrip("/"))
        if target.is_file():
            target.unlink()
            return 1
        if not target.is_dir():
            return 0
        count = sum(1 for item in target.rglob("*") if item.is_file())
        shutil.rmtree(target)
        return count

    async def delete_prefix(self, prefix: str) -> int:
        """Delete the files under ``prefix`` (a directory-shaped key prefix)."""
        return await asyncio.to_thread(self._delete_prefix, prefix)

    async def read(self, key: str) -> bytes:
        """Return the bytes stored under ``key``.

        Raises:
            FileNotFoundError: Nothing is stored under ``key``.
        """
        return await asyncio.to_thread(self.path_of(key).read_bytes)
