"""Internal HTTP surface of the agent link (not in the public OpenAPI document).

- ``GET  /internal/v1/agents/{bot_id}`` — the link WebSocket (``Authorization: Bearer <agent
  token>``). JSON text frames of ``agent.contracts.link``; each stored frame is acked by id
  once its transaction committed (frames read while the link's previous group was being
  stored go together, with other links' frames, through the process's
  :class:`~control_plane.agent_link.batch.FrameBatcher`); stream frames (``stream_event``,
  ``stream_end``, ``stream_batch``) go to the hub's bot streams, unacked.
- ``POST /internal/v1/agents/{bot_id}/uploads`` — body ``UploadRequest``; answers an
  ``UploadSlot`` for a recording or screenshot (same token).

A wrong or missing agent token answers 401 ``invalid_agent_token`` before any WebSocket
upgrade. Local storage's upload and download routes are the storage's
(:mod:`control_plane.storage.routes`); its upload route checks the agent token with
:func:`agent_of_request`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from aiohttp import WSMsgType, web
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from agent.contracts.link import (
    Ack,
    AgentFrame,
    StreamBatch,
    StreamEnd,
    StreamEvent,
    UploadRequest,
    UploadSlot,
    parse_agent_frame,
)
from agent.contracts.wire import (
    AGENT_LINK_PATH,
    AGENT_UPLOADS_PATH,
    AUTHORIZATION_HEADER,
    bearer_token,
)
from control_plane.agent_hub.agent_tokens import agent_token_digest
from control_plane.agent_hub.keys import AGENT_HUB, STORAGE
from control_plane.agent_link.batch import FRAME_BATCHER, FrameBatcher
from control_plane.agent_link.frames import FrameStore, LinkIdentity
from control_plane.api.http import path_uuid, read_body
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.errors import AuthError, ErrorItem, PayloadTooLarge, Validation
from control_plane.hooks import STATUS_HOOKS
from control_plane.launchers.loopback import off_loopback
from control_plane.settings import SETTINGS
from control_plane.storage.base import artifact_key
from control_plane.webhooks.wiring import OUTBOX
from meetbot_common.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

routes = web.RouteTableDef()

_ARTIFACT_FOLDERS = {"recording": "recordings", "screenshot": "screenshots", "log": "logs"}
# Frames are small JSON objects; a segment or participant list stays far below this.
_MAX_FRAME_BYTES = 1024 * 1024


async def authenticate_agent(request: web.Request, bot_id: uuid.UUID | None) -> LinkIdentity:
    """The bot whose agent token the request carries; ``bot_id``, when given, must match.

    Raises:
        AuthError: 401 ``invalid_agent_token``.
    """
    token = bearer_token(request.headers.get(AUTHORIZATION_HEADER))
    if token is None:
        raise AuthError("send the agent token as a Bearer token", code="invalid_agent_token")
    async with request.app[DB].sessions() as session:
        row = (
            await session.execute(
                select(Meeting.id, Meeting.bot_id, Meeting.workspace_id)
                .join(AgentLink, AgentLink.meeting_id == Meeting.id)
                .where(AgentLink.token_digest == agent_token_digest(token))
            )
        ).first()
    # The lookup is by digest, so comparing bot ids leaks nothing about the token.
    if row is None or (bot_id is not None and row[1] != bot_id):
        raise AuthError("the agent token is not valid for this bot", code="invalid_agent_token")
    return LinkIdentity(meeting_id=row[0], bot_id=row[1], workspace_id=row[2])


async def agent_of_request(request: web.Request) -> uuid.UUID:
    """The bot whose agent token ``request`` carries (any bot's).

    Raises:
        AuthError: 401 ``invalid_agent_token``.
    """
    return (await authenticate_agent(request, None)).bot_id


@routes.get(AGENT_LINK_PATH)
async def agent_link(request: web.Request) -> web.StreamResponse:
    """The agent link WebSocket of one bot."""
    bot_id = path_uuid(request, "bot_id", code="bot_not_found")
    identity = await authenticate_agent(request, bot_id)
    app = request.app
    hub = app[AGENT_HUB]
    store = FrameStore(app[DB], hub, identity, app[STATUS_HOOKS], app[OUTBOX])
    ws = web.WebSocketResponse(max_msg_size=_MAX_FRAME_BYTES)
    await ws.prepare(request)
    await hub.attach(bot_id, ws)
    logger.info("agent link opened", extra={"bot_id": str(bot_id)})
    received: asyncio.Queue[tuple[AgentFrame, float]] = asyncio.Queue()
    storing = asyncio.create_task(
        _store_frames(ws, store, app[FRAME_BATCHER], received), name="agent-link-store"
    )
    try:
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            hub.heard(bot_id)
            try:
                frame = parse_agent_frame(message.data)
            except ValidationError:
                logger.warning("agent frame rejected", extra={"bot_id": str(bot_id)})
                continue
            if isinstance(frame, StreamEvent | StreamEnd | StreamBatch):
                # The bot's stream: relayed from memory, never stored (partials included).
                await hub.streams.on_frame(bot_id, frame)
                if isinstance(frame, StreamEnd):  # the agent exits once its end is here
                    await ws.send_str(Ack(ref_id=frame.id).model_dump_json())
                continue
            if storing.done():
                break
            received.put_nowait((frame, time.perf_counter()))
    finally:
        # An ack that found the socket gone ended the storing task: the agent resends.
        await cancel_and_wait(storing, ConnectionError)
        hub.detach(bot_id, ws)
        logger.info("agent link closed", extra={"bot_id": str(bot_id)})
    return ws


async def _store_frames(
    ws: web.WebSocketResponse,
    store: FrameStore,
    batcher: FrameBatcher,
    received: asyncio.Queue[tuple[AgentFrame, float]],
) -> None:
    """Store the link's frames in order, all read so far at once, and ack each after its commit.

    A frame that cannot be stored (database down) is not acked and the link is closed (1011):
    the agent keeps it in its outbox and resends it after reconnecting.
    """
    while True:
        frames = [await received.get()]
        while not received.empty():
            frames.append(received.get_nowait())
        run: list[AgentFrame] = []
        read_at = frames[0][1]  # the run's oldest frame: its wait is the run's longest
        for frame, at in frames:
            if FrameStore.batched(frame):
                if not run:
                    read_at = at
                run.append(frame)
                continue
            if run and not await _store_run(ws, store, batcher, run, read_at):
                return
            run = []
            try:
                acked = await store.apply(frame)
            except (SQLAlchemyError, OSError) as exc:
                await _not_stored(ws, store, frame, exc)
                return
            if acked:
                await ws.send_str(Ack(ref_id=frame.id).model_dump_json())
        if run and not await _store_run(ws, store, batcher, run, read_at):
            return


async def _store_run(
    ws: web.WebSocketResponse,
    store: FrameStore,
    batcher: FrameBatcher,
    run: list[AgentFrame],
    read_at: float,
) -> bool:
    """Store ``run`` (batched frames, in order) and ack what was stored; False: link closed.

    ``read_at`` (``time.perf_counter``) is when the run's first frame was read: the time to the
    commit is observed as ``meetbot_agent_frame_store_seconds``.
    """
    for frame in run:
        await store.prepare(frame)
    result = await batcher.store([(store, frame) for frame in run])
    store.observe_stored(time.perf_counter() - read_at)
    for frame, outcome in zip(run, result.outcomes, strict=False):
        store.count(frame, outcome)
        await store.finish(frame)
        await ws.send_str(Ack(ref_id=frame.id).model_dump_json())
    store.observe_acked(time.perf_counter() - result.settled_at)
    if result.error is not None:
        await _not_stored(ws, store, run[len(result.outcomes)], result.error)
        return False
    return True


async def _not_stored(
    ws: web.WebSocketResponse, store: FrameStore, frame: AgentFrame, error: BaseException
) -> None:
    # Not stored, not acked: the agent keeps the frame in its outbox and resends it after
    # reconnecting, when the database may be back.
    logger.error(
        "agent frame not stored",
        extra={"bot_id": str(store.bot_id), "frame_type": frame.type},
        exc_info=error,
    )
    await ws.close(code=1011, message=b"frame not stored; reconnect and resend")


@routes.post(AGENT_UPLOADS_PATH)
async def upload_slot(request: web.Request) -> web.Response:
    """Where the agent uploads one artifact (an ``UploadSlot``).

    413 ``payload_too_large`` when the announced ``size`` passes ``max_upload_bytes``; 422
    ``size_required`` when the storage cannot cap an upload itself (S3) and no ``size`` came:
    the size is signed into the presigned URL, so S3 refuses any other length.
    """
    bot_id = path_uuid(request, "bot_id", code="bot_not_found")
    await authenticate_agent(request, bot_id)
    body = await read_body(request, UploadRequest)
    storage = request.app[STORAGE]
    cap = request.app[SETTINGS].max_upload_bytes
    if body.size is not None and body.size > cap:
        raise PayloadTooLarge(f"artifact uploads are limited to {cap} bytes")
    if body.size is None and not storage.caps_uploads:
        raise Validation(
            "this storage needs the upload's size in advance",
            code="size_required",
            errors=[ErrorItem(loc=["body", "size"], msg="required", type="size_required")],
        )
    key = artifact_key(bot_id, _ARTIFACT_FOLDERS[body.kind.value], body.name)
    target = await storage.upload_target(
        key, body.content_type, request.app[SETTINGS].upload_url_ttl_seconds, body.size
    )
    slot = UploadSlot(
        storage_key=key,
        url=_as_reached(target.url, request) if target.agent_auth else target.url,
        headers=target.headers,
        agent_auth=target.agent_auth,
        expires_at=target.expires_at,
    )
    return web.json_response(text=slot.model_dump_json())


def _as_reached(url: str, request: web.Request) -> str:
    """A control-plane ``url`` on a loopback host, moved to the host ``request`` came through.

    A loopback ``MEETBOT_PUBLIC_URL`` is reachable from this machine only; an agent on its own
    VM reaches the control plane at another address (``10.0.2.2`` on qemu's user network), and
    it reaches the upload path the same way it reached the slot endpoint.
    """
    if not request.host:
        return url
    return off_loopback(url, request.host, keep_port=False)
