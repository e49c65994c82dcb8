"""The shared body of both creation routes: validate, store, wake."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from aiohttp import web
from pydantic import BaseModel
from sqlalchemy import select

from agent.contracts.status import BotStatus
from control_plane.api.http import read_body
from control_plane.api.list_gate import LIST_GATE
from control_plane.api.transaction import answered_transaction
from control_plane.auth.context import auth_of
from control_plane.bots.live_count import live_expression
from control_plane.bots.scheduler import SCHEDULER
from control_plane.bots.schemas import BotCreate, ScheduledBotCreate
from control_plane.bots.service import BOT_SERVICE
from control_plane.bots.url_guard import checked as checked_url
from control_plane.db.models.bot import Meeting
from control_plane.db.models.workspace import Workspace
from control_plane.quotas import check_quota
from control_plane.settings import SETTINGS


async def create_response(
    request: web.Request,
    model: type[BotCreate] | type[ScheduledBotCreate],
    render: Callable[[Meeting], BaseModel],
) -> web.Response:
    """Create a bot from the request and answer 201 with ``render(meeting)``.

    The key's workspace binding is checked first (403), then the body (415/413/400/422), then
    an http(s) ``default_avatar_url`` against the media URL rules (422 ``url_not_allowed``,
    :mod:`control_plane.bots.url_guard`), then a zoom bot's ``zoom_obf_token`` or usable stored
    Zoom connection (400 ``zoom_token_required``, docs/api.md Part 1). Both routes are declared
    ``idempotent=True``: an ``Idempotency-Key``'s form is checked before all this, and its
    stored answer is read with the creating transaction's first read, before the quota
    (:mod:`control_plane.api.transaction`). A bot that would launch now is refused with 409
    ``quota_exceeded`` while the workspace has ``max_concurrent_bots`` bots from ``requested``
    to ``stopping`` (counted in the creating transaction: exact on SQLite; on PostgreSQL
    concurrent creations may overshoot by their number).
    """
    workspace_id = auth_of(request).require_workspace()
    body = await read_body(request, model)
    avatar = body.default_avatar_url
    if avatar is not None and not avatar.startswith("data:"):
        # The bot fetches it when it starts: the same address rules as every media URL.
        await checked_url(request.app, "default_avatar_url", avatar)
    service = request.app[BOT_SERVICE]
    zoom = await service.require_zoom_token(auth_of(request), body)
    launches_now = isinstance(body, BotCreate) and not (
        body.scheduled_at is not None and body.scheduled_at > datetime.now(UTC)
    )
    # Lists take fewer slots while this creation is in flight (control_plane.api.list_gate).
    with request.app[LIST_GATE].writing():
        async with answered_transaction(request) as transaction:
            session = transaction.session
            # One statement reads the workspace and its live count; create_meeting's own read
            # of the workspace then finds it in the session.
            row = await transaction.first_read(
                select(Workspace, live_expression(session, workspace_id).label("live")).where(
                    Workspace.id == workspace_id
                )
            )
            if launches_now:
                live = int(row.live or 0) if row is not None else 0
                limit = request.app[SETTINGS].max_concurrent_bots
                check_quota(live, limit, "bots at once (requested to stopping)")
            meeting = await service.create_meeting(session, auth_of(request), body, zoom)
            transaction.answer(render(meeting), status=201)
    if meeting.status == BotStatus.REQUESTED.value:
        scheduler = request.app.get(SCHEDULER)
        if scheduler is not None:
            scheduler.wake()
    return transaction.response
