"""The ``ArtifactStorage`` seam: put bytes under a key, hand out expiring URLs, purge by prefix.

Keys are ``/``-separated relative paths of ``[A-Za-z0-9._-]`` segments, always under
``bots/{bot_id}/`` (see :func:`artifact_key`), so a purge is one prefix delete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol
from uuid import UUID

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class InvalidArtifactKey(ValueError):
    """A key is empty, absolute, or has a segment outside ``[A-Za-z0-9._-]`` (or ``..``)."""


def check_key(key: str) -> str:
    """Return ``key`` unchanged when it is a safe relative key.

    Raises:
        InvalidArtifactKey: The key could escape its directory or has odd characters.
    """
    segments = key.split("/")
    # fullmatch: ``$`` of ``match`` also matches before a trailing newline ('a\n').
    if not key or any(not _SEGMENT.fullmatch(part) or part.startswith("..") for part in segments):
        raise InvalidArtifactKey(key)
    return key


def artifact_key(bot_id: UUID, kind: str, name: str) -> str:
    """Return the key of an artifact: ``bots/{bot_id}/{kind}/{name}``.

    Raises:
        InvalidArtifactKey: ``kind`` or ``name`` is not a safe key segment.
    """
    return check_key(f"bots/{bot_id}/{kind}/{name}")


def bot_prefix(bot_id: UUID) -> str:
    """Return the key prefix holding every artifact of one bot."""
    return f"bots/{bot_id}/"


@dataclass(frozen=True, slots=True)
class PresignedUrl:
    """A URL anyone holding it may GET until ``expires_at`` (UTC)."""

    url: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class UploadTarget:
    """Where the agent sends an artifact's bytes.

    Attributes:
        url: Absolute URL to send the bytes to with ``method``.
        method: Always ``PUT``.
        headers: Headers to send as given (they may be part of a signature).
        agent_auth: The agent adds ``Authorization: Bearer <agent_token>`` (local storage).
        expires_at: When an unused target stops working (UTC).
    """

    url: str
    expires_at: datetime
    method: str = "PUT"
    headers: dict[str, str] = field(default_factory=dict)
    agent_auth: bool = False


class ArtifactStorage(Protocol):
    """Where recordings and screenshots live. Implementations do I/O off the event loop."""

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        """Store ``data`` under ``key`` (replacing what was there)."""

    async def size(self, key: str) -> int | None:
        """Return the stored size in bytes, or ``None`` when nothing is stored under ``key``."""

    @property
    def caps_uploads(self) -> bool:
        """Whether the upload target itself counts the bytes against ``max_upload_bytes``.

        True for local storage (its upload route streams and counts); false for S3, where only
        a ``size`` signed into the presigned URL bounds an upload.
        """

    async def upload_target(
        self, key: str, content_type: str, ttl_seconds: int, size: int | None = None
    ) -> UploadTarget:
        """Return where an agent may upload ``key`` during the next ``ttl_seconds``.

        ``size``, when given, is the exact byte count the upload must have (S3 signs it).
        """

    async def presign_get(self, key: str, ttl_seconds: int) -> PresignedUrl:
        """Return a URL that downloads ``key`` during the next ``ttl_seconds``."""

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every object whose key starts with ``prefix``; return how many went."""
