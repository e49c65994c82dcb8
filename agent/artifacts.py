"""Getting artifact bytes off the bot: upload to the target the control plane names, or keep
them in the agent's data folder when there is no control plane (``meetbot agent``).

The control plane's ``screenshot`` command carries an
:class:`~agent.contracts.link.UploadSlot` as ``args["upload"]``: the bytes go with ``method``
to ``url`` with exactly ``headers``, plus ``Authorization: Bearer <agent_token>`` when
``agent_auth`` is true (local storage; never for presigned S3 URLs).
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import ValidationError

from agent.contracts.link import UploadSlot
from agent.errors import CommandError

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

    async def store(
        self, data: bytes, content_type: str, name: str, args: dict[str, Any]
    ) -> StoredArtifact:
        """Upload ``data`` to the slot ``args["upload"]``, or keep it as ``local_dir/name``.

        Raises:
            CommandError: ``invalid_arguments`` for a malformed slot, ``upload_failed`` when
                the target refuses the bytes.
        """
        raw = args.get("upload")
        if raw is None:
            path = self._local_dir / name
            await asyncio.to_thread(self._write, path, data)
            return StoredArtifact(storage_key=name, local_path=path)
        try:
            slot = UploadSlot.model_validate(raw)
        except ValidationError as exc:
            raise CommandError("invalid_arguments", "upload is not an upload slot") from exc
        headers = dict(slot.headers)
        headers.setdefault("Content-Type", content_type)
        if slot.agent_auth and self._agent_token:
            headers["Authorization"] = f"Bearer {self._agent_token}"
        timeout = aiohttp.ClientTimeout(total=60)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.request(slot.method, slot.url, data=data, headers=headers) as resp,
            ):
                if resp.status >= 300:
                    raise CommandError("upload_failed", f"artifact upload answered {resp.status}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CommandError("upload_failed", "artifact upload failed") from exc
        return StoredArtifact(storage_key=slot.storage_key)

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
