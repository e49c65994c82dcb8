"""The meeting record's artifacts: the lister the artifact storage part provides.

:data:`ArtifactLister` — ``artifacts = await list(session, meeting)``, a
:class:`MeetingArtifacts` of recordings, screenshots and agent logs with presigned URLs, for the
full meeting record; :func:`first_recording_url` adapts it to the bot record's
``recording_url`` (``control_plane.hooks.RecordingUrl``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NamedTuple

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.models.bot import Meeting
from control_plane.hooks import RecordingUrl
from control_plane.meetings.schemas import AgentLog, Recording, Screenshot


class MeetingArtifacts(NamedTuple):
    """A meeting's stored artifacts by kind, each list oldest first."""

    recordings: list[Recording]
    screenshots: list[Screenshot]
    logs: list[AgentLog]


NO_ARTIFACTS = MeetingArtifacts([], [], [])
"""What a control plane without artifact storage lists."""

ArtifactLister = Callable[[AsyncSession, Meeting], Awaitable[MeetingArtifacts]]

ARTIFACT_LISTER: web.AppKey[ArtifactLister] = web.AppKey("artifact_lister")
"""A meeting's recordings, screenshots and agent logs with presigned URLs; set by the agent link."""


def first_recording_url(lister: ArtifactLister) -> RecordingUrl:
    """The presigned URL of a meeting's main (first) recording, or None, through ``lister``."""

    async def url(session: AsyncSession, meeting: Meeting) -> str | None:
        recordings = (await lister(session, meeting)).recordings
        return recordings[0].url if recordings else None

    return url
