"""Artifact bytes off the bot: uploaded to the control plane's target, or kept locally.

The bytes go to the upload target the control plane names, or stay in the agent's data folder when
there is no control plane (``meetbot agent``).

The control plane's ``screenshot`` command carries an
:class:`~agent.contracts.link.UploadSlot` as ``args["upload"]``: the bytes go with ``method``
to ``url`` with exactly ``headers``, plus ``Authorization: Bearer <agent_token>`` when
``agent_auth`` is true (local storage; never for presigned S3 URLs).

Recordings have no command: the agent asks the control plane for a slot itself
(:meth:`ArtifactUploader.request_slot`, ``POST /internal/v1/agents/{bot_id}/uploads``) and
streams the file from disk (:meth:`ArtifactUploader.store_file`), so a long recording never sits
in memory.
"""

from __future__ import annotations

import asyncio
import shutil
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import aiohttp
from pydantic import ValidationError

from agent.contracts.link import ArtifactKind, CommandErrorCode, UploadRequest, UploadSlot
from agent.contracts.wire import agent_uploads_path, bearer
from agent.process.errors import CommandError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height in pixels from a PNG's IHDR chunk.

    Raises:
        ValueError: ``data`` is not a PNG.
    """
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


@dataclass(frozen=True, slots=True)
class StoredArtifact:
    """Where an artifact went: the storage key, and a local path when kept on disk."""

    storage_key: str
    local_path: Path | None = None


class ArtifactUploader:
    """Uploads artifacts for one bot.

    Args:
        agent_token: Bearer token of the bot's link (sent when the target asks for it).
        local_dir: Folder for artifacts when the command names no upload target.
    """

    def __init__(self, agent_token: str | None, local_dir: Path) -> None:
        self._agent_token = agent_token
        self._local_dir = local_dir

    def _headers(self, slot: UploadSlot, content_type: str) -> dict[str, str]:
        """The slot's headers, the content type unless it names one, the bearer when asked."""
        headers = dict(slot.headers)
        headers.setdefault("Content-Type", content_type)
        if slot.agent_auth and self._agent_token:
            headers.update(bearer(self._agent_token))
        return headers

    async def store(
        self, data: bytes, content_type: str, name: str, slot: UploadSlot | None
    ) -> StoredArtifact:
        """Upload ``data`` to ``slot``, or keep it as ``local_dir/name`` without one.

        Raises:
            CommandError: ``upload_failed`` when the target refuses the bytes.
        """
        if slot is None:
            path = self._local_dir / name
            await asyncio.to_thread(self._write, path, data)
            return StoredArtifact(storage_key=name, local_path=path)
        headers = self._headers(slot, content_type)
        timeout = aiohttp.ClientTimeout(total=60)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.request(slot.method, slot.url, data=data, headers=headers) as resp,
            ):
                if resp.status >= 300:
                    raise CommandError(
                        CommandErrorCode.UPLOAD_FAILED, f"artifact upload answered {resp.status}"
                    )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CommandError(CommandErrorCode.UPLOAD_FAILED, "artifact upload failed") from exc
        return StoredArtifact(storage_key=slot.storage_key)

    async def request_slot(
        self,
        control_plane_url: str,
        bot_id: str,
        kind: ArtifactKind,
        name: str,
        content_type: str,
        size: int | None = None,
    ) -> UploadSlot:
        """Ask the control plane where to upload an artifact the agent makes on its own.

        Args:
            control_plane_url: Base URL of the control plane (``BotConfig.control_plane_url``).
            bot_id: The bot's id (a UUID string).
            kind: What the artifact is.
            name: File name within the bot's artifacts (``[A-Za-z0-9._-]``).
            content_type: MIME type of the bytes.
            size: Bytes that will be sent (S3 storage signs it as ``Content-Length``; the
                control plane refuses a slot over its cap).

        Raises:
            CommandError: ``upload_failed`` when the control plane refuses or is unreachable.
        """
        body = UploadRequest(kind=kind, name=name, content_type=content_type, size=size)
        url = f"{control_plane_url.rstrip('/')}{agent_uploads_path(bot_id)}"
        headers = bearer(self._agent_token or "")
        timeout = aiohttp.ClientTimeout(total=30)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.post(url, json=body.model_dump(mode="json"), headers=headers) as resp,
            ):
                if resp.status != 200:
                    raise CommandError(
                        CommandErrorCode.UPLOAD_FAILED, f"upload slot answered {resp.status}"
                    )
                return UploadSlot.model_validate_json(await resp.read())
        except (aiohttp.ClientError, TimeoutError, ValidationError) as exc:
            raise CommandError(CommandErrorCode.UPLOAD_FAILED, "no upload slot") from exc

    async def store_file(
        self, path: Path, content_type: str, name: str, slot: UploadSlot | None
    ) -> StoredArtifact:
        """Stream the file at ``path`` to ``slot``, or move it to ``local_dir/name`` without one.

        Raises:
            CommandError: ``upload_failed`` when the target refuses the bytes.
        """
        if slot is None:
            target = self._local_dir / name
            await asyncio.to_thread(self._move, path, target)
            return StoredArtifact(storage_key=name, local_path=target)
        headers = self._headers(slot, content_type)
        size = (await asyncio.to_thread(path.stat)).st_size
        headers["Content-Length"] = str(size)
        # Generous: a long meeting's recording over a slow uplink.
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=300)
        # The file is closed here, not by the chunk generator: a target that answers before
        # reading everything (413, a dropped connection) leaves the generator unfinished.
        handle = await asyncio.to_thread(path.open, "rb")
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                async with session.request(
                    slot.method, slot.url, data=self._chunks(handle), headers=headers
                ) as resp:
                    if resp.status >= 300:
                        raise CommandError(
                            CommandErrorCode.UPLOAD_FAILED,
                            f"artifact upload answered {resp.status}",
                        )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CommandError(CommandErrorCode.UPLOAD_FAILED, "artifact upload failed") from exc
        finally:
            await asyncio.to_thread(handle.close)
        return StoredArtifact(storage_key=slot.storage_key)

    @staticmethod
    async def _chunks(handle: BinaryIO, size: int = 256 * 1024) -> AsyncIterator[bytes]:
        while chunk := await asyncio.to_thread(handle.read, size):
            yield chunk

    @staticmethod
    def _move(source: Path, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(source, target)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
