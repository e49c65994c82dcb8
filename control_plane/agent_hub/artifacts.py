"""Storing artifact rows (recordings, screenshots) idempotently by the agent's artifact id."""

from __future__ import annotations

from datetime import datetime
from typing import Required, TypedDict, Unpack

from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.engine import Database
from control_plane.db.inserts import insert_once
from control_plane.db.models.agent_link import Artifact


class ArtifactFields(TypedDict, total=False):
    """An artifact's row, as the agent reports it (sizes in bytes, duration in seconds)."""

    artifact_id: Required[str]
    kind: Required[str]
    storage_key: Required[str]
    content_type: Required[str]
    size_bytes: Required[int]
    media_format: str | None
    duration_s: float | None
    width: int | None
    height: int | None
    captured_at: datetime | None


async def add_artifact(
    session: AsyncSession, meeting_id: int, **fields: Unpack[ArtifactFields]
) -> bool:
    """Add the artifact within the caller's transaction; False when its id is already stored.

    ``media_format`` is the row's ``format``; a field not given is null.
    """
    values: dict[str, object] = {"meeting_id": meeting_id, **fields}
    values["format"] = values.pop("media_format", None)
    return await insert_once(session, Artifact, values, key=("meeting_id", "artifact_id"))


async def record_artifact(db: Database, meeting_id: int, **fields: Unpack[ArtifactFields]) -> None:
    """Store a screenshot-like artifact in its own transaction (idempotent by id).

    The agent also reports the same artifact as an ``artifact`` frame; whichever commits first
    stores it, and the other finds it stored (a race for the unique key is the same: the
    later insert does nothing).
    """
    async with db.sessions.begin() as session:
        await add_artifact(session, meeting_id, **fields)
