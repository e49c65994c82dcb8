"""The meeting summary route (docs/api.md 2.14): ``GET /api/v1/meetings/{meeting_id}/summary``."""

from __future__ import annotations

from aiohttp import web

from agent.contracts.bot_config import BotSettings
from agent.contracts.status import FINAL_STATUSES, BotStatus
from control_plane.api.http import json_response
from control_plane.api.routes import ApiRoutes
from control_plane.db.engine import DB
from control_plane.errors import Conflict, NotFound
from control_plane.intelligence.summary_schemas import MeetingSummaryOut, SummaryStatus
from control_plane.intelligence.summary_store import read_summary
from control_plane.meetings.lookup import meeting_of_path

routes = ApiRoutes("meetings")

SUMMARY = "/api/v1/meetings/{meeting_id}/summary"


@routes.get(
    SUMMARY,
    summary="Get a meeting's summary",
    response=MeetingSummaryOut,
    errors=(404, 409),
    path_types={"meeting_id": int},
)
async def get_summary(request: web.Request) -> web.Response:
    """The summary, decisions and action items of the whole meeting, once ready.

    404 ``meeting_not_found`` (no such meeting in the workspace); 404 ``summary_not_found``
    when the bot had ``enable_actions`` false, the meeting was purged, or it ended before the
    control plane wrote summaries; 409
    ``summary_pending`` before the bot is final and until the summary is written; 409
    ``summary_failed`` when it could not be written (the detail says why).
    """
    async with request.app[DB].reads() as session:
        meeting = await meeting_of_path(session, request)
        summary = await read_summary(session, meeting.id)
        enabled = BotSettings.model_validate(meeting.settings).enable_actions
        final = BotStatus(meeting.status) in FINAL_STATUSES
    if summary is None:
        if enabled and not final:
            raise Conflict(
                f"the meeting is still {meeting.status}; its summary is written after it ends",
                code="summary_pending",
            )
        raise NotFound(
            "this meeting has no summary: its bot had enable_actions false, it was purged, "
            "or it ended before summaries were written",
            code="summary_not_found",
        )
    if summary.status is SummaryStatus.PENDING:
        raise Conflict("the summary is being written; ask again shortly", code="summary_pending")
    if summary.status is SummaryStatus.FAILED:
        raise Conflict(f"the summary could not be written: {summary.error}", code="summary_failed")
    return json_response(summary)
