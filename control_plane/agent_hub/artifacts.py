"""Storing artifact rows (recordings, screenshots) idempotently by the agent's artifact id."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.engine import Database
from control_plane.db.inserts import insert_once
from control_plane.db.models.agent_link import Artifact


async def add_artifact(
    session: AsyncSession,
    meeting_id: int,
    *,
    artifact_id: str,
    kind: str,
    storage_key: str,
    content_type: str,
    size_bytes: int,
    media_format: str | None = None,
    duration_s: float | None = None,
    width: int | None = None,
    height: int | None = None,
    captured_at: datetime | None = None,
) -> bool:
    """Add the artifact within the caller's transaction; False when its id is already stored."""
    return await insert_once(
        session,
        Artifact,
        {
            "meeting_id": meeting_id,
            "artifact_id": artifact_id,
            "kind": kind,
            "storage_key": storage_key,
            "content_type": content_type,
            "size_bytes": size_bytes,
            "format": media_format,
            "duration_s": duration_s,
            "width": width,
            "height": height,
            "captured_at": captured_at,
        },
        key=("meeting_id", "artifact_id"),
    )


async def record_artifact(
    db: Database,
    meeting_id: int,
    *,
    artifact_id: str,
    kind: str,
    storage_key: str,
    content_type: str,
    size_bytes: int,
    width: int | None = None,
    height: int | None = None,
    captured_at: datetime | None = None,
) -> None:
    """Store a screenshot-like artifact in its own transaction (idempotent by id).

    The agent also reports the same artifact as an ``artifact`` frame; whichever commits first
    stores it, and the other finds it stored (a race for the unique key is the same: the
    later insert does nothing).
    """
    async with db.sessions.begin() as session:
        await add_artifact(
            session,
            meeting_id,
            artifact_id=artifact_id,
            kind=kind,
            storage_key=storage_key,
            content_type=content_type,
            size_bytes=size_bytes,
            width=width,
            height=height,
            captured_at=captured_at,
        )
