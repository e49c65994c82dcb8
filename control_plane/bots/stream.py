"""``GET /api/v1/bots/{bot_id}/stream``: a bot's SSE stream from any replica (docs/api.md 2.7).

Opened with ``Authorization: Bearer <stream token>`` from ``POST …/subscribe``: an EdDSA JWT
(Ed25519) with ``aud`` "bot-stream" and ``sub`` this bot's id, checked when the stream opens. A
missing, malformed, expired or other-bot token answers 401 with the JSON body
``{"code": "invalid_stream_token", "detail": …}`` and ``WWW-Authenticate: Bearer
realm="bot-stream"`` (not problem+json).

Frames carry the agent's event ids (``id:``, from 1, increasing by one, the same on every
replica), names and payloads; ``Last-Event-ID: n`` first replays every event after ``n`` (from
this replica's window, older ones fetched from the agent through its link or the replica that
holds it). A ``: ping`` comment goes out every ``stream_ping_seconds``. The agent's stream ends
with its ``stream_end`` (its final status sent and its outbox delivered), or once the bot has been
final for ``stream_end_check_seconds`` without a stream event (the agent was lost).

Then the response ends, except for a bot with ``enable_actions`` (issue #34): the actions of its
meeting's last window are detected after the agent left, and its summary is written at the
earliest ``intelligence_summary_settle_seconds`` after the end, so the control plane itself
keeps the response open (pings go on), for at most ``stream_summary_wait_seconds`` (0: no
wait). Once the meeting's action detection is finished it sends, as ``action_detected``, every
stored action the agent did not say it streamed (the last window's; every one when the agent's
image predates ``announce_action``), in the order stored, data serialised by the actions' own
code (:data:`STREAM_ACTIONS`); then, once the meeting's ``meeting_summaries`` row is ``ready``,
one ``summary_ready`` event, ``data`` the object ``GET …/meetings/{id}/summary`` answers
(:data:`STREAM_SUMMARY`), and ends (a ``failed`` summary ends it without). Their ids follow the
agent's last one by one: the list is read only when detection is finished, so it is the same
for every reader and every replica. The wait polls both by the meeting's key every
:data:`SUMMARY_POLL_S`: the rows are in the shared database, so any replica serving the stream
sees them, and the relay has no cross-replica signal for them (its NOTIFY channel carries
commands and stream frames between replicas holding links; the workers write the rows from
whichever replica claimed the meeting, outside any link). The ids count from the last one this
replica relayed, the same on every replica, so they are sent only when this replica knows where
the agent's stream stands (a client reconnecting after the end to a replica that never relayed
the bot reads the actions and the summary through the API).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import jwt
from aiohttp import web
from aiohttp_sse import EventSourceResponse, sse_response
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotSettings
from agent.contracts.link import StreamItem
from agent.contracts.status import FINAL_STATUSES, BotStatus
from agent.contracts.wire import AUTHORIZATION_HEADER, bearer_token
from control_plane.agent_hub.keys import AGENT_HUB, STREAM_SIGNER
from control_plane.agent_hub.streams import SUB_RENEW_S, BotFeed, BotStreams, StreamUnavailable
from control_plane.api.routes import ApiRoutes
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.settings import SETTINGS

logger = logging.getLogger(__name__)

routes = ApiRoutes("live")

STREAM_ROUTE = "/api/v1/bots/{bot_id}/stream"
# Failed fetches of older events before the stream is closed (the client reconnects with its
# Last-Event-ID and tries again).
_FETCH_ATTEMPTS = 3
SUMMARY_EVENT = "summary_ready"
"""The event a bot with ``enable_actions`` sends after the agent's last (docs/api.md 2.7)."""
ACTION_EVENT = "action_detected"
"""The event of an action the agent did not stream, sent after the agent's last event."""
SUMMARY_POLL_S = 1.0
"""How often a stream waiting after the agent's end reads the meeting's actions and summary."""

SummaryLookup = Callable[[AsyncSession, int], Awaitable[tuple[str, str | None] | None]]
"""``await lookup(session, meeting_id)``: None when the meeting has no summary row, else its
``status`` (``pending``, ``ready``, ``failed``) and, when ``ready``, the JSON text of the object
``GET /api/v1/meetings/{meeting_id}/summary`` answers."""
STREAM_SUMMARY: web.AppKey[SummaryLookup] = web.AppKey("stream_summary")
"""The summary's lookup for streams (set by ``control_plane.intelligence.summary_wiring``)."""

ActionsLookup = Callable[[AsyncSession, int], Awaitable[list[str] | None]]
"""``await lookup(session, meeting_id)``: None while the meeting's action detection is not
finished, else the JSON text of each action the agent did not stream, in the order stored."""
STREAM_ACTIONS: web.AppKey[ActionsLookup] = web.AppKey("stream_actions")
"""The actions' lookup for streams (set by ``control_plane.intelligence.detection_wiring``;
absent: no action is sent after the agent's end)."""

TOKEN_ERROR = {
    "description": "Missing, malformed, expired or other-bot stream token",
    "headers": {
        "WWW-Authenticate": {
            "schema": {"type": "string", "const": 'Bearer realm="bot-stream"'},
        }
    },
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["code", "detail"],
                "properties": {
                    "code": {"type": "string", "const": "invalid_stream_token"},
                    "detail": {"type": "string"},
                },
            }
        }
    },
}
"""The OpenAPI description of the stream's 401."""


def stream_path(bot_id: uuid.UUID) -> str:
    """The stream's path for ``bot_id``."""
    return STREAM_ROUTE.format(bot_id=bot_id)


def _unauthorized(detail: str) -> web.Response:
    return web.json_response(
        {"code": "invalid_stream_token", "detail": detail},
        status=401,
        headers={"WWW-Authenticate": 'Bearer realm="bot-stream"'},
    )


async def _bot_of(request: web.Request) -> uuid.UUID | web.Response:
    """The path's bot id once the request's stream token names it, else the 401 answer."""
    token = bearer_token(request.headers.get(AUTHORIZATION_HEADER))
    if token is None:
        return _unauthorized("bearer token required")
    try:
        bot_id = uuid.UUID(request.match_info["bot_id"])
    except ValueError:
        return _unauthorized("token is for another bot")
    try:
        await request.app[STREAM_SIGNER].verify(token, bot_id)
    except jwt.ExpiredSignatureError:
        return _unauthorized("token expired")
    except jwt.exceptions.InvalidSubjectError:
        return _unauthorized("token is for another bot")
    except jwt.InvalidTokenError:
        return _unauthorized("invalid token")
    return bot_id


def _last_event_id(request: web.Request) -> int:
    value = request.headers.get("Last-Event-ID", "").strip()
    return int(value) if value.isdigit() and len(value) < 19 else 0


async def _ended_without_agent(
    app: web.Application, bot_id: uuid.UUID, feed: BotFeed, linked_here: bool
) -> bool:
    """Whether the bot has been final for a check interval with no stream event (agent lost).

    A final status is stored a moment before the agent's last stream events arrive, so one
    look is not enough: the bot must still be final a check interval after it was first seen
    final, with nothing streamed meanwhile. Never while the agent is linked here.
    """
    interval = app[SETTINGS].stream_end_check_seconds
    now = time.monotonic()
    if linked_here or now - feed.checked_at < interval:
        return False
    feed.checked_at = now
    async with app[DB].sessions() as session:
        status = await session.scalar(select(Meeting.status).where(Meeting.bot_id == bot_id))
    if status is not None and BotStatus(status) not in FINAL_STATUSES:
        feed.final_seen_at = None
        return False
    if feed.final_seen_at is None or feed.last_event_at > feed.final_seen_at:
        feed.final_seen_at = now
        return False
    return True


class _Pump:
    """Sends one client the bot's events from its cursor on, until the stream ends."""

    def __init__(
        self,
        app: web.Application,
        bot_id: uuid.UUID,
        feed: BotFeed,
        response: EventSourceResponse,
        cursor: int,
    ) -> None:
        self._app = app
        self._streams: BotStreams = app[AGENT_HUB].streams
        self._bot_id = bot_id
        self._feed = feed
        self._response = response
        self.cursor = cursor

    async def _send(self, items: list[StreamItem]) -> None:
        for item in items:
            if item.seq <= self.cursor:
                continue
            await self._response.send(item.data, id=str(item.seq), event=item.event)
            self.cursor = item.seq

    async def _older(self) -> bool:
        """Send the events between the cursor and the window; False when none could be had."""
        window = self._feed.window
        try:
            items = await self._streams.fetch(self._bot_id, self.cursor, window.base)
        except StreamUnavailable:
            return False
        if not items or items[0].seq != self.cursor + 1:
            return False
        await self._send(items)
        return True

    async def run(self) -> bool:
        """Relay the agent's events; True once the client has every one of an ended stream."""
        failures = 0
        while self._response.is_connected():
            window = self._feed.window
            items = window.after(self.cursor)
            if items is None:
                if await self._older():
                    failures = 0
                    continue
                failures += 1
                if failures >= _FETCH_ATTEMPTS or window.ended:
                    logger.info("stream replay unavailable", extra={"bot_id": str(self._bot_id)})
                    return False
                await asyncio.sleep(1.0)
                continue
            await self._send(items)
            if window.ended and self.cursor >= window.last:
                return True
            await self._streams.keep_fed(self._bot_id, self._feed)
            linked = self._app[AGENT_HUB].connected(self._bot_id)
            if await _ended_without_agent(self._app, self._bot_id, self._feed, linked):
                return self.cursor >= window.last
            await window.wait(self.cursor, SUB_RENEW_S)
        return False

    async def after_agent(self) -> None:
        """After the agent's stream: the actions it did not carry, then the summary (module doc).

        Only for a bot with ``enable_actions``, when this replica knows the agent's last id;
        never while the replica shuts down. Events the client has (by ``Last-Event-ID``) are
        not sent again.
        """
        limit = self._app[SETTINGS].stream_summary_wait_seconds
        window = self._feed.window
        base = window.last
        if limit <= 0 or not window.known or self._streams.closing:
            return
        database = self._app[DB]
        async with database.reads() as session:
            row = (
                await session.execute(
                    select(Meeting.id, Meeting.settings).where(Meeting.bot_id == self._bot_id)
                )
            ).one_or_none()
        if row is None or not BotSettings.model_validate(row.settings).enable_actions:
            return
        summary_lookup = self._app[STREAM_SUMMARY]
        actions_lookup = self._app.get(STREAM_ACTIONS)
        actions: list[str] | None = None if actions_lookup is not None else []
        sent_actions = False
        extra = {"bot_id": str(self._bot_id), "meeting_id": row.id}
        logger.info("stream waits for the meeting's last actions and summary", extra=extra)
        deadline = time.monotonic() + limit
        while self._response.is_connected() and not self._streams.closing:
            async with database.reads() as session:
                if actions is None and actions_lookup is not None:
                    actions = await actions_lookup(session, row.id)
                found = await summary_lookup(session, row.id)
                status = None if found is not None else await _status_of(session, row.id)
            if actions is not None and not sent_actions:
                for offset, action in enumerate(actions, start=1):
                    await self._event(base + offset, ACTION_EVENT, action)
                sent_actions = True
                if actions:
                    logger.info(
                        "stream sent the actions the agent did not",
                        extra={**extra, "actions": len(actions)},
                    )
            if found is None:
                if status is None or status in FINAL_STATUSES:
                    return  # none will come: purged, or ended before summaries were written
            elif actions is not None:
                state, data = found
                if data is not None:
                    await self._event(base + len(actions) + 1, SUMMARY_EVENT, data)
                    logger.info("stream sent the meeting's summary", extra=extra)
                    return
                if state != "pending":
                    return  # failed: the summary route and the webhook say so
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                logger.info("stream stopped waiting after the agent's end", extra=extra)
                return
            await asyncio.sleep(min(SUMMARY_POLL_S, remaining))

    async def _event(self, event_id: int, name: str, data: str) -> None:
        """Send one event of the control plane's own unless the client has it already."""
        if event_id <= self.cursor:
            return
        await self._response.send(data, id=str(event_id), event=name)
        self.cursor = event_id


async def _status_of(session: AsyncSession, meeting_id: int) -> BotStatus | None:
    status = await session.scalar(select(Meeting.status).where(Meeting.id == meeting_id))
    return BotStatus(status) if status is not None else None


@routes.get(
    STREAM_ROUTE,
    summary="Read the bot's event stream (SSE)",
    text_media=("text/event-stream",),
    auth=False,
    security_scheme="StreamToken",
    raw_responses={"401": TOKEN_ERROR},
    path_types={"bot_id": uuid.UUID},
)
async def stream(request: web.Request) -> web.StreamResponse:
    """The bot's events as Server-Sent Events (see docs/api.md 2.7).

    Send ``Authorization: Bearer <token>`` from subscribe; ``Last-Event-ID`` to resume. Events
    ``transcript_segment``, ``bot_status``, ``participant_update``, ``action_detected``,
    ``recording_ready``, ``speak_started``, ``speak_finished``, ``meeting_audio_missing``,
    ``avatar_unavailable``, and ``summary_ready`` (the object ``GET
    /api/v1/meetings/{meeting_id}/summary`` answers, after the agent's last event);
    ``: ping`` every 15 s. The stream ends when the bot's agent exits; for a bot with
    ``enable_actions``, once its meeting's detection is finished (the actions the agent did
    not stream follow its last event as ``action_detected``) and its summary is ready (sent as
    ``summary_ready``) or failed, or after ``MEETBOT_STREAM_SUMMARY_WAIT_SECONDS`` (600 s).
    """
    checked = await _bot_of(request)
    if isinstance(checked, web.Response):
        return checked
    bot_id = checked
    app = request.app
    streams = app[AGENT_HUB].streams
    cursor = _last_event_id(request)
    feed = streams.open(bot_id)
    extra: dict[str, Any] = {"bot_id": str(bot_id), "after": cursor}
    try:
        await streams.keep_fed(bot_id, feed)
        async with sse_response(
            request, sep="\n", ping_interval=app[SETTINGS].stream_ping_seconds
        ) as response:
            logger.info("stream client connected", extra=extra)
            pump = _Pump(app, bot_id, feed, response, cursor)
            with contextlib.suppress(ConnectionError):  # the client went away
                if await pump.run():
                    await pump.after_agent()
            extra["last"] = pump.cursor
    finally:
        streams.close(bot_id, feed)
        logger.info("stream client done", extra=extra)
    return response
