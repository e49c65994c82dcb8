"""Scheduled bots (docs/api.md Part 1 "Scheduled bots", 2.4).

Registered before ``bots.routes`` so ``/api/v1/bots/schedule`` is not taken for a bot id.
"""

from __future__ import annotations

from aiohttp import web
from sqlalchemy import select

from agent.contracts.status import BotStatus
from control_plane.api.http import json_response, path_int, read_body
from control_plane.api.routes import ApiRoutes
from control_plane.auth.context import auth_of
from control_plane.bots.creation import create_response
from control_plane.bots.schedule_service import SCHEDULE_SERVICE, to_scheduled
from control_plane.bots.schemas import (
    ScheduledBot,
    ScheduledBotCreate,
    ScheduledBotList,
    ScheduledBotUpdate,
)
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.records.schemas import Message

routes = ApiRoutes("scheduled bots")

SCHEDULE = "/api/v1/bots/schedule"
SCHEDULE_ITEM = "/api/v1/bots/schedule/{bot_id}"


@routes.post(
    SCHEDULE,
    summary="Schedule a bot",
    body=ScheduledBotCreate,
    response=ScheduledBot,
    status=201,
    errors=(400,),
    idempotent=True,
)
async def schedule_bot(request: web.Request) -> web.Response:
    """Store a bot that launches at ``scheduled_start_at + join_offset_seconds``.

    400: missing or invalid meeting id, ``scheduled_start_in_past``, ``zoom_token_required``;
    403 ``key_not_bound``; 422: malformed meeting URL, out-of-range values,
    ``idempotency_key_reused``.
    """
    return await create_response(request, ScheduledBotCreate, to_scheduled)


@routes.get(SCHEDULE, summary="List scheduled bots", response=ScheduledBotList)
async def list_scheduled_bots(request: web.Request) -> web.Response:
    """The workspace's entries with status ``scheduled``, newest first."""
    auth = auth_of(request)
    async with request.app[DB].reads() as session:
        rows = (
            await session.execute(
                select(Meeting)
                .where(
                    Meeting.workspace_id == auth.workspace_id,
                    Meeting.status == BotStatus.SCHEDULED.value,
                )
                .order_by(Meeting.created_at.desc(), Meeting.id.desc())
            )
        ).scalars()
        entries = [to_scheduled(meeting) for meeting in rows]
    return json_response(ScheduledBotList(scheduled_bots=entries))


@routes.patch(
    SCHEDULE_ITEM,
    summary="Update a scheduled bot",
    body=ScheduledBotUpdate,
    response=ScheduledBot,
    errors=(400, 404),
    path_types={"bot_id": int},
)
async def update_scheduled_bot(request: web.Request) -> web.Response:
    """Change a ``scheduled`` entry; 404 once it launched or was cancelled."""
    meeting_id = path_int(request, "bot_id", code="scheduled_bot_not_found")
    update = await read_body(request, ScheduledBotUpdate)
    entry = await request.app[SCHEDULE_SERVICE].update_scheduled(
        auth_of(request), meeting_id, update
    )
    return json_response(entry)


@routes.delete(
    SCHEDULE_ITEM,
    summary="Cancel a scheduled bot",
    response=Message,
    errors=(404,),
    path_types={"bot_id": int},
)
async def cancel_scheduled_bot(request: web.Request) -> web.Response:
    """``scheduled → cancelled``; 404 once it launched or was cancelled."""
    meeting_id = path_int(request, "bot_id", code="scheduled_bot_not_found")
    await request.app[SCHEDULE_SERVICE].cancel_scheduled(auth_of(request), meeting_id)
    return json_response(Message(message=f"scheduled bot {meeting_id} cancelled"))
