"""The shared body of both creation routes: validate, honour ``Idempotency-Key``, store, wake."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from agent.contracts.status import BotStatus
from control_plane.api.http import read_json_object, validate
from control_plane.api.idempotency import (
    KeyTaken,
    body_digest,
    find_replay,
    forget,
    idempotency_key,
    record_match,
    replay_of,
    store_response,
)
from control_plane.api.list_gate import LIST_GATE
from control_plane.auth.context import auth_of
from control_plane.bots.live_count import live_expression
from control_plane.bots.scheduler import SCHEDULER
from control_plane.bots.schemas import BotCreate, ScheduledBotCreate
from control_plane.bots.service import BOT_SERVICE
from control_plane.bots.url_guard import checked as checked_url
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.db.models.idempotency import IdempotencyRecord
from control_plane.db.models.workspace import Workspace
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
    an http(s) ``default_avatar_url`` against the media URL rules (422 ``url_not_allowed``,
    :mod:`control_plane.bots.url_guard`), then a zoom bot's ``zoom_obf_token`` or usable stored
    Zoom connection (400 ``zoom_token_required``, docs/api.md Part 1), then
    the idempotency key (replay, or 422 ``idempotency_key_reused``; the answer is stored with
    the bot, see :mod:`control_plane.api.idempotency`). A bot that would launch
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
    avatar = body.default_avatar_url
    if avatar is not None and not avatar.startswith("data:"):
        # The bot fetches it when it starts: the same address rules as every media URL.
        await checked_url(request.app, "default_avatar_url", avatar)
    service = request.app[BOT_SERVICE]
    zoom = await service.require_zoom_token(auth, body)
    database = request.app[DB]
    launches_now = isinstance(body, BotCreate) and not (
        body.scheduled_at is not None and body.scheduled_at > datetime.now(UTC)
    )
    # Lists take fewer slots while this creation is in flight (control_plane.api.list_gate).
    with request.app[LIST_GATE].writing():
        try:
            async with database.sessions.begin() as session:
                # One statement reads the workspace, its live count and the key's stored answer;
                # create_meeting's own read of the workspace then finds it in the session.
                workspace_id = auth.require_workspace()
                first_read = select(Workspace, live_expression(session, workspace_id)).where(
                    Workspace.id == workspace_id
                )
                if key is not None:
                    first_read = first_read.add_columns(IdempotencyRecord).outerjoin(
                        IdempotencyRecord, record_match(auth.key_id, route, key)
                    )
                row = (await session.execute(first_read)).first()
                columns: tuple[Any, ...] = tuple(row) if row is not None else (None, 0, None)
                live = int(columns[1] or 0)
                record: IdempotencyRecord | None = columns[2] if key is not None else None
                if record is not None:
                    replay = replay_of(record, digest)
                    if replay is not None:
                        return replay
                    await forget(session, record)
                if launches_now:
                    limit = request.app[SETTINGS].max_concurrent_bots
                    check_quota(live, limit, "bots at once (requested to stopping)")
                meeting = await service.create_meeting(session, auth, body, zoom)
                text = render(meeting).model_dump_json()
                if key is not None and not await store_response(
                    session, auth.key_id, route, key, digest, 201, text
                ):
                    raise KeyTaken
        except (IntegrityError, KeyTaken):
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
