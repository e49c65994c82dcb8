"""The meeting record's artifacts: the lister the artifact storage part provides.

:data:`ArtifactLister` — ``recordings, screenshots = await list(session, meeting)`` with
presigned URLs, for the full meeting record; :func:`first_recording_url` adapts it to the bot
record's ``recording_url`` (``control_plane.hooks.RecordingUrl``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.models.bot import Meeting
from control_plane.hooks import RecordingUrl
from control_plane.meetings.schemas import Recording, Screenshot

ArtifactLister = Callable[
    [AsyncSession, Meeting], Awaitable[tuple[list[Recording], list[Screenshot]]]
]

ARTIFACT_LISTER: web.AppKey[ArtifactLister] = web.AppKey("artifact_lister")
"""Recordings and screenshots of a meeting with presigned URLs; set by the agent link."""


def first_recording_url(lister: ArtifactLister) -> RecordingUrl:
    """The presigned URL of a meeting's main (first) recording, or None, through ``lister``."""

    async def url(session: AsyncSession, meeting: Meeting) -> str | None:
        recordings, _ = await lister(session, meeting)
        return recordings[0].url if recordings else None

    return url
