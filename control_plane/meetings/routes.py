"""Meetings (docs/api.md Part 1 "Meetings", 2.6): list, full record, transcript, purge."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from aiohttp import web
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotSettings, Platform
from agent.contracts.status import FINAL_STATUSES, BotStatus
from control_plane.api.http import json_response, read_query
from control_plane.api.list_gate import LIST_GATE
from control_plane.api.routes import ApiRoutes
from control_plane.auth.context import auth_of
from control_plane.bots.status import lock_meeting
from control_plane.db.engine import DB
from control_plane.db.models.action import MeetingAction
from control_plane.db.models.bot import Meeting
from control_plane.db.models.segment import Segment
from control_plane.errors import Conflict
from control_plane.hooks import PURGE_HOOKS
from control_plane.intelligence.summary_store import read_summary
from control_plane.meetings.actions import list_actions
from control_plane.meetings.artifacts import ARTIFACT_LISTER, NO_ARTIFACTS
from control_plane.meetings.lookup import meeting_id_of_path, meeting_of_path, of_caller
from control_plane.meetings.schemas import (
    ActionList,
    ActionQuery,
    MeetingList,
    MeetingListItem,
    MeetingRecord,
    SegmentOut,
    Transcript,
    TranscriptQuery,
    TranscriptSummary,
)
from control_plane.meetings.transcripts import to_srt, to_txt, to_vtt
from control_plane.records.queries import list_meeting_rows
from control_plane.records.render import to_record
from control_plane.records.schemas import MeetingData, MeetingQuery, Message

routes = ApiRoutes("meetings")

MEETINGS = "/api/v1/meetings"
MEETING = "/api/v1/meetings/{meeting_id}"
TRANSCRIPT = "/api/v1/meetings/{meeting_id}/transcript"
ACTIONS = "/api/v1/meetings/{meeting_id}/actions"
_ID = {"meeting_id": int}
# What a list item shows (docs/api.md Part 1 "Meeting list item").
_LIST_COLUMNS = (
    Meeting.id,
    Meeting.bot_id,
    Meeting.platform,
    Meeting.status,
    Meeting.name,
    Meeting.participants,
    Meeting.created_at,
    Meeting.updated_at,
)


async def _segments(session: AsyncSession, meeting_id: int) -> list[SegmentOut]:
    rows = (
        await session.execute(
            select(Segment)
            .where(Segment.meeting_id == meeting_id)
            .order_by(Segment.start, Segment.id)
        )
    ).scalars()
    return [
        SegmentOut(
            id=row.segment_id,
            start=row.start,
            end=row.end,
            absolute_start_time=row.absolute_start_time,
            absolute_end_time=row.absolute_end_time,
            text=row.text,
            speaker=row.speaker,
            language=row.language,
            completed=row.completed,
            tier="deferred" if row.tier == "deferred" else "realtime",
        )
        for row in rows
    ]


@routes.get(
    MEETINGS, summary="List meetings", query=MeetingQuery, response=MeetingList, errors=(400, 422)
)
async def list_meetings_route(request: web.Request) -> web.Response:
    """The workspace's meetings, newest first; ``limit`` 1–200 (default 50), ``offset`` ≥ 0.

    400 ``invalid_date`` for a malformed ``date_from``/``date_to``.
    """
    query = read_query(request, MeetingQuery)
    async with request.app[LIST_GATE]:
        async with request.app[DB].reads() as session:
            rows = await list_meeting_rows(
                session, auth_of(request).workspace_id, query, _LIST_COLUMNS
            )
            # Stored rows need no validation (the columns' types already give UUIDs and aware UTC
            # datetimes): validating each item was a tenth of a list request's CPU (bench/api.py
            # mixed run, py-spy). Serialisation still formats every field.
            items = [
                MeetingListItem.model_construct(
                    id=row.id,
                    bot_id=row.bot_id,
                    platform=Platform(row.platform),
                    status=BotStatus(row.status),
                    data=MeetingData.model_construct(
                        name=row.name, participants=list(row.participants or [])
                    ),
                    created_at=row.created_at,
                    updated_at=row.updated_at,
                )
                for row in rows
            ]
        return json_response(MeetingList(meetings=items))


@routes.get(MEETING, summary="Get a meeting", response=MeetingRecord, errors=(404,), path_types=_ID)
async def get_meeting(request: web.Request) -> web.Response:
    """The full record: bot record, artifacts, transcript summary, actions, summary, ``redacted``.

    Recordings, screenshots and agent logs come as presigned URLs valid 1 hour.
    """
    async with request.app[DB].reads() as session:
        meeting = await meeting_of_path(session, request)
        lister = request.app.get(ARTIFACT_LISTER)
        artifacts = await lister(session, meeting) if lister is not None else NO_ARTIFACTS
        recordings = artifacts.recordings
        segments = await _segments(session, meeting.id)
        tier: Literal["realtime", "deferred"] = (
            "deferred"
            if BotSettings.model_validate(meeting.settings).transcription_tier.value == "deferred"
            else "realtime"
        )
        summary = TranscriptSummary(
            segment_count=len(segments),
            languages=sorted({seg.language for seg in segments if seg.language}),
            tier=tier,
            ready=BotStatus(meeting.status) in FINAL_STATUSES,
        )
        base = to_record(meeting, recording_url=recordings[0].url if recordings else None)
        record = MeetingRecord(
            **base.model_dump(),
            recordings=recordings,
            screenshots=artifacts.screenshots,
            logs=artifacts.logs,
            transcript=summary,
            actions=await list_actions(session, meeting.id),
            summary=await read_summary(session, meeting.id),
            redacted=meeting.redacted,
        )
    return json_response(record)


@routes.get(
    TRANSCRIPT,
    summary="Get a meeting's transcript",
    query=TranscriptQuery,
    response=Transcript,
    text_media=("text/plain", "application/x-subrip", "text/vtt"),
    errors=(404, 422),
    path_types=_ID,
)
async def get_transcript(request: web.Request) -> web.Response:
    """``format=json`` (default) → ``{segments}``; ``txt``, ``srt``, ``vtt`` → text."""
    query = read_query(request, TranscriptQuery)
    async with request.app[DB].reads() as session:
        meeting = await meeting_of_path(session, request)
        segments = await _segments(session, meeting.id)
    if query.format == "json":
        return json_response(Transcript(segments=segments))
    if query.format == "txt":
        return web.Response(text=to_txt(segments), content_type="text/plain")
    if query.format == "srt":
        return web.Response(text=to_srt(segments), content_type="application/x-subrip")
    return web.Response(text=to_vtt(segments), content_type="text/vtt")


@routes.get(
    ACTIONS,
    summary="List a meeting's detected actions",
    query=ActionQuery,
    response=ActionList,
    errors=(404, 422),
    path_types=_ID,
)
async def get_actions(request: web.Request) -> web.Response:
    """Actions live action detection found, oldest first; ``limit`` 1–200, ``offset`` ≥ 0.

    ``limit`` defaults to 50. Empty for a bot without ``enable_actions`` and after purge.
    """
    query = read_query(request, ActionQuery)
    async with request.app[DB].reads() as session:
        meeting = await meeting_of_path(session, request)
        actions = await list_actions(session, meeting.id, limit=query.limit, offset=query.offset)
    return json_response(ActionList(actions=actions))


@routes.delete(
    MEETING, summary="Purge a meeting", response=Message, errors=(404, 409), path_types=_ID
)
async def purge_meeting(request: web.Request) -> web.Response:
    """Remove segments, actions, the summary, recordings, screenshots, chat, participant names.

    Only a finalized meeting: 409 ``meeting_active`` before it is final. The row stays with
    ``redacted: true``. Purging twice answers 200 again.
    """
    meeting_id = meeting_id_of_path(request)
    async with request.app[DB].sessions.begin() as session:
        meeting = of_caller(request, await lock_meeting(session, meeting_id=meeting_id))
        if BotStatus(meeting.status) not in FINAL_STATUSES:
            raise Conflict(
                f"the meeting is still {meeting.status}; stop the bot first",
                code="meeting_active",
            )
        await session.execute(delete(Segment).where(Segment.meeting_id == meeting.id))
        await session.execute(delete(MeetingAction).where(MeetingAction.meeting_id == meeting.id))
        for hook in request.app[PURGE_HOOKS]:
            await hook(session, meeting)
        meeting.name = None
        meeting.participants = []
        meeting.redacted = True
        meeting.updated_at = datetime.now(UTC)
    return json_response(Message(message=f"meeting {meeting_id} purged"))
