"""The agent link's part of a meeting record: artifacts with presigned URLs, and purging.

:func:`artifact_lister` fills the full meeting record's ``recordings``, ``screenshots`` and ``logs``
(docs/api.md 2.6; URLs valid ``presigned_url_ttl_seconds``, 1 hour by default) and the bot's
``recording_url``. :func:`purge_hook` deletes the meeting's chat, artifact rows and stored
files when the meeting is purged.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.models.agent_link import Artifact, ChatMessage
from control_plane.db.models.bot import Meeting
from control_plane.hooks import PurgeHook
from control_plane.meetings.artifacts import ArtifactLister, MeetingArtifacts
from control_plane.meetings.schemas import AgentLog, Recording, Screenshot
from control_plane.storage.base import ArtifactStorage, bot_prefix


def artifact_lister(storage: ArtifactStorage, ttl_seconds: int) -> ArtifactLister:
    """List a meeting's recordings, screenshots and logs (oldest first) with fresh URLs."""

    async def list_artifacts(session: AsyncSession, meeting: Meeting) -> MeetingArtifacts:
        rows = (
            await session.scalars(
                select(Artifact)
                .where(Artifact.meeting_id == meeting.id)
                .order_by(Artifact.created_at, Artifact.id)
            )
        ).all()
        recordings: list[Recording] = []
        screenshots: list[Screenshot] = []
        logs: list[AgentLog] = []
        for row in rows:
            signed = await storage.presign_get(row.storage_key, ttl_seconds)
            if row.kind == "recording":
                recordings.append(
                    Recording(
                        id=row.artifact_id,
                        format=row.format,
                        content_type=row.content_type,
                        duration_s=row.duration_s,
                        size_bytes=row.size_bytes,
                        created_at=row.created_at,
                        url=signed.url,
                        expires_at=signed.expires_at,
                    )
                )
            elif row.kind == "log":
                logs.append(
                    AgentLog(
                        id=row.artifact_id,
                        content_type=row.content_type,
                        size_bytes=row.size_bytes,
                        created_at=row.created_at,
                        url=signed.url,
                        expires_at=signed.expires_at,
                    )
                )
            else:
                screenshots.append(
                    Screenshot(
                        id=row.artifact_id,
                        captured_at=row.captured_at,
                        url=signed.url,
                        expires_at=signed.expires_at,
                    )
                )
        return MeetingArtifacts(recordings, screenshots, logs)

    return list_artifacts


def purge_hook(storage: ArtifactStorage) -> PurgeHook:
    """Delete a purged meeting's chat messages, artifact rows and stored artifact files."""

    async def purge(session: AsyncSession, meeting: Meeting) -> None:
        await session.execute(delete(ChatMessage).where(ChatMessage.meeting_id == meeting.id))
        await session.execute(delete(Artifact).where(Artifact.meeting_id == meeting.id))
        await storage.delete_prefix(bot_prefix(meeting.bot_id))

    return purge
