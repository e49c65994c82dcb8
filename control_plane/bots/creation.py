"""The shared body of both creation routes: validate, honour ``Idempotency-Key``, store, wake."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from aiohttp import web
from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError

from agent.contracts.status import BotStatus
from control_plane.api.http import read_json_object, validate
from control_plane.api.idempotency import body_digest, claim, find_replay, idempotency_key
from control_plane.auth.context import auth_of
from control_plane.bots.live_count import workspace_and_live_bots
from control_plane.bots.scheduler import SCHEDULER
from control_plane.bots.schemas import BotCreate, ScheduledBotCreate
from control_plane.bots.service import BOT_SERVICE
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.quotas import check_quota
from control_plane.settings import SETTINGS


async def create_response(
    request: web.Request,
    model: type[BotCreate] | type[ScheduledBotCreate],
    route: str,
    render: Callable[[Meeting], BaseModel],
) -> web.Response:
    """Create a bot from the request and answer 201 with ``render(meeting)``.

    The key's workspace binding is checked first (403), then the body (415/413/400/422), then
    the idempotency key (replay, or 422 ``idempotency_key_reused``). A bot that would launch
    now is refused with 409 ``quota_exceeded`` while the workspace has ``max_concurrent_bots``
    bots from ``requested`` to ``stopping`` (counted in the creating transaction, after an
    idempotent replay: exact on SQLite; on PostgreSQL concurrent creations may overshoot by
    their number).
    """
    auth = auth_of(request)
    auth.require_workspace()
    raw = await read_json_object(request)
    body = validate(model, raw, "body")
    key = idempotency_key(request)
    digest = body_digest(raw)
    service = request.app[BOT_SERVICE]
    zoom_connection_id = await service.require_zoom_token(auth, body)
    database = request.app[DB]
    launches_now = isinstance(body, BotCreate) and not (
        body.scheduled_at is not None and body.scheduled_at > datetime.now(UTC)
    )
    try:
        async with database.sessions.begin() as session:
            record = None
            if key is not None:
                replay = await find_replay(session, auth.key_id, route, key, digest)
                if replay is not None:
                    return replay
                record = await claim(session, auth.key_id, route, key, digest)
            # One statement for both; create_meeting's own read of the workspace then finds
            # it in the session.
            _, live = await workspace_and_live_bots(session, auth.require_workspace())
            if launches_now:
                limit = request.app[SETTINGS].max_concurrent_bots
                check_quota(live, limit, "bots at once (requested to stopping)")
            meeting = await service.create_meeting(session, auth, body, zoom_connection_id)
            text = render(meeting).model_dump_json()
            if record is not None:
                record.response_status, record.response_body = 201, text
    except IntegrityError:
        if key is None:
            raise
        # A concurrent request with the same key committed first: answer what it answered.
        async with database.sessions.begin() as session:
            replay = await find_replay(session, auth.key_id, route, key, digest)
        if replay is None:
            raise
        return replay
    if meeting.status == BotStatus.REQUESTED.value:
        scheduler = request.app.get(SCHEDULER)
        if scheduler is not None:
            scheduler.wake()
    return web.Response(text=text, status=201, content_type="application/json")
