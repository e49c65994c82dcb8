"""Bots: create, list, get, update, stop.

Contract: docs/api.md Part 1 "Launch a bot", "Update a bot", and 2.3.
"""

from __future__ import annotations

from functools import partial

from aiohttp import web

from control_plane.api.http import json_response, path_uuid, read_body, read_query
from control_plane.api.list_gate import LIST_GATE
from control_plane.api.routes import ApiRoutes
from control_plane.auth.context import auth_of
from control_plane.bots.creation import create_response
from control_plane.bots.schemas import BotCreate, BotList, BotUpdate
from control_plane.bots.service import BOT_SERVICE, find_bot
from control_plane.db.engine import DB
from control_plane.records.queries import list_meetings
from control_plane.records.render import to_record
from control_plane.records.schemas import BotRecord, MeetingQuery

routes = ApiRoutes("bots")

BOTS = "/api/v1/bots"
BOT = "/api/v1/bots/{bot_id}"


@routes.post(
    BOTS,
    summary="Launch a bot",
    body=BotCreate,
    response=BotRecord,
    status=201,
    errors=(400, 409),
    idempotent=True,
)
async def create_bot(request: web.Request) -> web.Response:
    """Send a bot into a meeting (``requested``), or schedule it (``scheduled``).

    The bot is scheduled when ``scheduled_at`` is in the future.

    400: neither ``meeting_url`` nor ``native_meeting_id`` (``missing_meeting_reference``), an
    id invalid for the platform (``invalid_meeting_id``), a ``zoom`` bot with neither
    ``zoom_obf_token`` nor a usable stored Zoom connection (``zoom_token_required``); 403
    ``key_not_bound``; 422: invalid platform, ``malformed_meeting_url``, out-of-range timeout,
    ``idempotency_key_reused``.
    """
    return await create_response(request, BotCreate, partial(to_record, at_creation=True))


@routes.get(BOTS, summary="List bots", query=MeetingQuery, response=BotList, errors=(400, 422))
async def list_bots(request: web.Request) -> web.Response:
    """The workspace's bots with the filters and paging of ``GET /api/v1/meetings``."""
    query = read_query(request, MeetingQuery)
    async with request.app[LIST_GATE]:
        async with request.app[DB].reads() as session:
            rows = await list_meetings(session, auth_of(request).workspace_id, query)
            bots = [to_record(meeting) for meeting in rows]
        return json_response(BotList(bots=bots))


@routes.get(BOT, summary="Get a bot", response=BotRecord, errors=(404,))
async def get_bot(request: web.Request) -> web.Response:
    """The bot record; 404 ``bot_not_found`` (also for another workspace's bot)."""
    bot_id = path_uuid(request, "bot_id", code="bot_not_found")
    async with request.app[DB].reads() as session:
        meeting = await find_bot(session, auth_of(request).workspace_id, bot_id)
        recording_url = await request.app[BOT_SERVICE].recording_url_of(session, meeting)
        record = to_record(meeting, recording_url=recording_url)
    return json_response(record)


@routes.patch(
    BOT,
    summary="Update a bot",
    body=BotUpdate,
    response=BotRecord,
    errors=(404, 409, 422, 502, 503, 504),
)
async def patch_bot(request: web.Request) -> web.Response:
    """Change options of a ``requested`` or ``scheduled`` bot.

    409 ``bot_not_updatable`` in any other status.

    A bot already launched (its agent is starting or running) gets the change live and all or
    nothing: its agent applies every given field or none, and the change is stored only once
    the agent confirmed. 409 ``setting_not_live`` when a field cannot change now (its name in
    ``errors[0].loc``, e.g. ``["body", "bot_name"]``: no platform renames a bot in a meeting);
    503 ``agent_unavailable`` when its agent is not connected, 504 ``agent_timeout`` when it
    does not answer, 502 ``agent_command_failed`` for another refusal; nothing is stored then.
    """
    bot_id = path_uuid(request, "bot_id", code="bot_not_found")
    update = await read_body(request, BotUpdate)
    record = await request.app[BOT_SERVICE].update_bot(auth_of(request), bot_id, update)
    return json_response(record)


@routes.route(
    "DELETE",
    BOT,
    summary="Stop a bot",
    response=BotRecord,
    status=202,
    also_status=(200,),
    errors=(404, 409),
)
async def delete_bot(request: web.Request) -> web.Response:
    """Stop the bot: 202 ``stopping`` (``cancelled`` when it was scheduled).

    200 unchanged when it is already stopping; 409 ``bot_finished`` when final.
    """
    bot_id = path_uuid(request, "bot_id", code="bot_not_found")
    status, record = await request.app[BOT_SERVICE].stop_bot(auth_of(request), bot_id)
    return json_response(record, status=status)
