"""The meeting a ``/api/v1/meetings/{meeting_id}…`` path names, in the caller's workspace.

A meeting of another workspace is 404 like one that does not exist (docs/api.md Part 1).
"""

from __future__ import annotations

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.api.http import path_int
from control_plane.auth.context import auth_of
from control_plane.db.models.bot import Meeting
from control_plane.errors import NotFound


def meeting_id_of_path(request: web.Request) -> int:
    """The path's ``{meeting_id}``.

    Raises:
        NotFound: 404 ``meeting_not_found`` when it is not an integer.
    """
    return path_int(request, "meeting_id", code="meeting_not_found")


def of_caller(request: web.Request, meeting: Meeting | None) -> Meeting:
    """``meeting`` when it is of the caller's workspace.

    Raises:
        NotFound: 404 ``meeting_not_found`` when it is None or of another workspace.
    """
    if meeting is None or meeting.workspace_id != auth_of(request).workspace_id:
        raise NotFound("no such meeting in this workspace", code="meeting_not_found")
    return meeting


async def meeting_of_path(session: AsyncSession, request: web.Request) -> Meeting:
    """The path's meeting, read in ``session``, when it is of the caller's workspace.

    Raises:
        NotFound: 404 ``meeting_not_found`` (no such meeting, another workspace's, or an id
            that is not an integer).
    """
    return of_caller(request, await session.get(Meeting, meeting_id_of_path(request)))
