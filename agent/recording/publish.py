"""A finished recording file to artifact storage, reported as an ``artifact`` event.

The file is uploaded through an upload slot from the control plane (or to the agent's data
folder without one), in ``UPLOAD_ATTEMPTS`` attempts with a doubling pause, and reported as an
``artifact`` event of kind ``recording``, which the SSE stream announces as ``recording_ready``
and the control plane as the ``recording.ready`` webhook.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent.contracts.bot_config import RecordingFormat
from agent.contracts.link import ArtifactEvent, ArtifactKind, UploadSlot
from agent.link.artifacts import ArtifactUploader, StoredArtifact
from agent.link.events import BotEvents
from agent.process.errors import CommandError
from agent.recording.job import content_type

log = logging.getLogger(__name__)

UPLOAD_ATTEMPTS = 3
UPLOAD_RETRY_S = 2.0
"""First pause between upload attempts (doubling): a control plane restarting at the meeting's
end must not cost the recording."""


@dataclass(frozen=True, slots=True)
class Destination:
    """Where a recording file goes.

    Attributes:
        uploader: The bot's artifact uploader.
        events: Where its ``artifact`` event goes.
        control_plane_url: Asked for an upload slot; None keeps the file in the uploader's
            local folder.
        bot_id: The bot's id (for the upload slot).
    """

    uploader: ArtifactUploader
    events: BotEvents
    control_plane_url: str | None
    bot_id: str


@dataclass(frozen=True, slots=True)
class RecordingFile:
    """A recording file ready to upload.

    Attributes:
        path: The file.
        duration_s: Its length in seconds.
        started_at: Unix time where it begins.
        with_video: Whether it has a picture (its MIME type says so).
        screen: Whether it is the bot's screen (for the log).
    """

    path: Path
    duration_s: float
    started_at: float
    with_video: bool
    screen: bool = False


async def publish(
    done: RecordingFile, fmt: RecordingFormat, artifact_id: str, to: Destination
) -> ArtifactEvent:
    """Upload a finished recording file and report it as an ``artifact`` event.

    Args:
        done: The file.
        fmt: Its format.
        artifact_id: The artifact's id (a UUID string).
        to: Where it goes.

    Returns:
        The ``artifact`` event sent.

    Raises:
        CommandError: The upload failed on its last attempt.
        OSError: The file is unreadable.
    """
    mime = content_type(fmt, with_video=done.with_video)
    size = (await asyncio.to_thread(done.path.stat)).st_size
    stored = await _upload(to, done.path, mime)
    frame = ArtifactEvent(
        kind=ArtifactKind.RECORDING,
        artifact_id=artifact_id,
        storage_key=stored.storage_key,
        content_type=mime,
        size_bytes=size,
        format=fmt.value,
        duration_s=done.duration_s,
        captured_at=datetime.fromtimestamp(done.started_at, UTC),
    )
    await to.events.artifact(frame)
    log.info(
        "recording uploaded",
        extra={
            "format": fmt.value,
            "size_bytes": size,
            "duration_s": done.duration_s,
            "screen": done.screen,
        },
    )
    return frame


async def _upload(to: Destination, path: Path, mime: str) -> StoredArtifact:
    name = path.name

    async def attempt() -> StoredArtifact:
        slot: UploadSlot | None = None
        if to.control_plane_url:
            size = (await asyncio.to_thread(path.stat)).st_size
            slot = await to.uploader.request_slot(
                to.control_plane_url, to.bot_id, ArtifactKind.RECORDING, name, mime, size
            )
        return await to.uploader.store_file(path, mime, name, slot)

    for number in range(1, UPLOAD_ATTEMPTS):
        try:
            return await attempt()
        except CommandError:
            log.info("recording upload retried", extra={"attempt": number})
            await asyncio.sleep(UPLOAD_RETRY_S * 2 ** (number - 1))
    return await attempt()
