"""Live routes of a bot (API.md Part 1, 2.5 and 2.7): stream subscription, participants,
screenshot, avatar, hand, chat, speech and screen share.

Commands travel over the bot's agent link (:class:`~control_plane.agent_link.hub.AgentHub`)
and each route waits for the agent's result, so a failure is reported, never swallowed:
``capability_not_supported`` → 422, ``bot_not_active`` → 404, no link → 503
``agent_unavailable``, no answer → 504 ``agent_timeout``. Routes that need the bot in the
meeting answer 404 ``bot_not_active`` in any other status (Part 1 says so for screenshot,
avatar reset and hand lowering; 2.5 extends it to every live command).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from sqlalchemy import select

from agent.contracts.link import CommandName, CommandResult, UploadSlot
from agent.contracts.status import BotStatus
from control_plane.agent_link.artifacts import record_artifact
from control_plane.agent_link.errors import AgentCommandFailed, AgentTimeout, AgentUnavailable
from control_plane.agent_link.hub import AgentNotConnected, CommandTimedOut
from control_plane.api.http import json_response, path_uuid, read_body
from control_plane.api.routes import ApiRoutes
from control_plane.api.timestamps import UtcDateTime
from control_plane.auth.context import auth_of
from control_plane.db.models.agent_link import AgentLink, ChatMessage
from control_plane.db.models.bot import Meeting
from control_plane.errors import (
    CapabilityNotSupported,
    Conflict,
    NotFound,
    NotImplementedOperation,
)
from control_plane.keys import AGENT_HUB, DB, SETTINGS, STORAGE, STREAM_SIGNER
from control_plane.storage.base import artifact_key

routes = ApiRoutes("live")

BOT_PATH = "/api/v1/bots/{bot_id}"
_BOT_TYPES = {"bot_id": uuid.UUID}
# Statuses in which the agent has (or had) a stream to subscribe to.
_STREAMING = frozenset(
    {BotStatus.REQUESTED, BotStatus.JOINING, BotStatus.AWAITING_ADMISSION, BotStatus.ACTIVE}
)
# Chat can be read once the bot started joining, also after it left.
_NOT_JOINED = frozenset({BotStatus.SCHEDULED, BotStatus.REQUESTED, BotStatus.CANCELLED})
# How often subscribe re-reads the database while it waits (another replica may hold the link).
_SUBSCRIBE_POLL_S = 1.0


# Models ----------------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class _In(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Subscription(_Out):
    """Where and how to open the bot's event stream (API.md 2.7).

    Open ``url`` as an SSE stream with ``Authorization: Bearer <token>``; the token is an EdDSA
    JWT (``sub`` = bot id, ``aud`` = ``bot-stream``) that stops working at ``expires_at``.
    """

    url: str
    token: str
    expires_at: UtcDateTime


class Participants(_Out):
    """The bot's current participant names (empty before it joined)."""

    bot_id: uuid.UUID
    participants: list[str]


class Screenshot(_Out):
    """A PNG of the bot's current view; ``url`` is presigned until ``expires_at`` (1 hour).

    ``width``/``height`` are pixels; ``captured_at`` is when the agent took it.
    """

    url: str
    expires_at: UtcDateTime
    captured_at: UtcDateTime
    width: int
    height: int


class CommandAccepted(_Out):
    """A live command was carried out by the bot's agent."""

    bot_id: uuid.UUID
    command: str


class AvatarSet(_In):
    """Camera image to show: a URL the bot's browser can load (``http(s)://`` or ``data:``)."""

    image_url: str = Field(min_length=1, max_length=8192, pattern=r"^(https?://|data:image/)")


class ChatSend(_In):
    """A chat message for the meeting, sent as the bot (1 to 4096 characters)."""

    text: str = Field(min_length=1, max_length=4096)


class ChatMessageOut(_Out):
    """One chat message seen in the meeting; ``from_bot`` marks the bot's own."""

    id: str
    sender: str
    text: str
    timestamp: UtcDateTime
    from_bot: bool


class ChatMessages(_Out):
    """Chat messages of the meeting, oldest first."""

    messages: list[ChatMessageOut]


class SpeakRequest(_In):
    """Speech for the bot: ``text`` (with an optional ``voice``) or an ``audio_url``."""

    text: str | None = Field(default=None, min_length=1, max_length=4096)
    voice: str | None = Field(default=None, max_length=100)
    audio_url: str | None = Field(default=None, max_length=8192)

    @model_validator(mode="after")
    def _one_source(self) -> SpeakRequest:
        if (self.text is None) == (self.audio_url is None):
            raise ValueError("give exactly one of text or audio_url")
        return self


class ScreenRequest(_In):
    """What to share: a page ``url``, an ``image_url`` or a ``video_url`` (exactly one)."""

    url: str | None = Field(default=None, max_length=8192)
    image_url: str | None = Field(default=None, max_length=8192)
    video_url: str | None = Field(default=None, max_length=8192)

    @model_validator(mode="after")
    def _one_source(self) -> ScreenRequest:
        given = [value for value in (self.url, self.image_url, self.video_url) if value]
        if len(given) != 1:
            raise ValueError("give exactly one of url, image_url or video_url")
        return self


# Helpers ---------------------------------------------------------------------------------------


async def _bot(request: web.Request) -> Meeting:
    """The path's bot in the caller's workspace (404 ``bot_not_found`` otherwise)."""
    bot_id = path_uuid(request, "bot_id", code="bot_not_found")
    workspace_id = auth_of(request).workspace_id
    async with request.app[DB].sessions() as session:
        meeting = await session.scalar(
            select(Meeting).where(Meeting.bot_id == bot_id, Meeting.workspace_id == workspace_id)
        )
    if meeting is None:
        raise NotFound("no such bot in this workspace", code="bot_not_found")
    return meeting


async def _active_bot(request: web.Request) -> Meeting:
    """The path's bot, which must be ``active`` (404 ``bot_not_active`` otherwise)."""
    meeting = await _bot(request)
    if meeting.status != BotStatus.ACTIVE:
        raise NotFound(f"the bot is {meeting.status}, not active", code="bot_not_active")
    return meeting


async def _command(
    request: web.Request,
    meeting: Meeting,
    name: CommandName,
    args: Mapping[str, Any] | None = None,
) -> CommandResult:
    """Send ``name`` to the bot's agent and return its successful result (errors mapped)."""
    settings = request.app[SETTINGS]
    try:
        result = await request.app[AGENT_HUB].command(
            meeting.bot_id, name, args, within_seconds=settings.agent_command_timeout_seconds
        )
    except AgentNotConnected as exc:
        raise AgentUnavailable("the bot's agent is not connected; retry shortly") from exc
    except CommandTimedOut as exc:
        raise AgentTimeout(f"the bot did not answer the {name.value} command in time") from exc
    if result.ok:
        return result
    if result.error == "capability_not_supported":
        raise CapabilityNotSupported(result.detail or f"the bot's platform cannot {name.value}")
    if result.error == "bot_not_active":
        raise NotFound(result.detail or "the bot is not in the meeting", code="bot_not_active")
    raise AgentCommandFailed(result.detail or f"the {name.value} command failed")


def _accepted(meeting: Meeting, name: CommandName) -> web.Response:
    return json_response(CommandAccepted(bot_id=meeting.bot_id, command=name.value), status=202)


# Stream ----------------------------------------------------------------------------------------


async def _stream_url(request: web.Request, meeting_id: int) -> tuple[str | None, str]:
    async with request.app[DB].sessions() as session:
        row = (
            await session.execute(
                select(AgentLink.stream_url, Meeting.status)
                .join(Meeting, Meeting.id == AgentLink.meeting_id)
                .where(AgentLink.meeting_id == meeting_id)
            )
        ).first()
        if row is None:
            status = await session.scalar(select(Meeting.status).where(Meeting.id == meeting_id))
            return None, status or BotStatus.FAILED
    return row[0], row[1]


@routes.post(
    BOT_PATH + "/subscribe",
    summary="Subscribe to the bot's event stream",
    response=Subscription,
    errors=(404,),
    read_key_ok=True,
    path_types=_BOT_TYPES,
)
async def subscribe(request: web.Request) -> web.Response:
    """Wait up to 30 s for the bot's agent to register its stream, then return the stream URL
    and a fresh token (15 minutes). 404 ``bot_not_active`` when the bot does not register in
    time or is not (or no longer) in a meeting; retry after a few seconds."""
    meeting = await _bot(request)
    app = request.app
    settings = app[SETTINGS]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.subscribe_wait_seconds
    while True:
        stream_url, status = await _stream_url(request, meeting.id)
        if status not in _STREAMING:
            raise NotFound(f"the bot is {status}: it has no stream", code="bot_not_active")
        if stream_url:
            break
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise NotFound("the bot has not registered its stream yet", code="bot_not_active")
        await app[AGENT_HUB].wait_registered(meeting.bot_id, min(remaining, _SUBSCRIBE_POLL_S))
    minted = app[STREAM_SIGNER].mint(meeting.bot_id, settings.stream_token_ttl_seconds)
    return json_response(
        Subscription(url=stream_url, token=minted.token, expires_at=minted.expires_at)
    )


@routes.post(
    BOT_PATH + "/subscribe/refresh",
    summary="Refresh a stream token (not offered)",
    errors=(501,),
    read_key_ok=True,
    path_types=_BOT_TYPES,
)
async def subscribe_refresh(request: web.Request) -> web.Response:
    """Always 501: call subscribe again for a fresh token."""
    del request
    raise NotImplementedOperation(
        "stream tokens are not refreshed; call POST /api/v1/bots/{bot_id}/subscribe again"
    )


# Participants ----------------------------------------------------------------------------------


@routes.get(
    BOT_PATH + "/participants",
    summary="Current participants",
    response=Participants,
    errors=(404,),
    path_types=_BOT_TYPES,
)
async def participants(request: web.Request) -> web.Response:
    """The names the bot currently sees in the meeting (the bot excluded)."""
    meeting = await _bot(request)
    return json_response(
        Participants(bot_id=meeting.bot_id, participants=list(meeting.participants or []))
    )


# Screenshot ------------------------------------------------------------------------------------


class _ScreenshotResult(_In):
    model_config = ConfigDict(frozen=True, extra="ignore")

    artifact_id: str
    storage_key: str
    size_bytes: int = Field(ge=1)
    width: int = Field(ge=1)
    height: int = Field(ge=1)
    captured_at: datetime


@routes.post(
    BOT_PATH + "/screenshot",
    summary="Capture the bot's screen",
    response=Screenshot,
    errors=(404, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def screenshot(request: web.Request) -> web.Response:
    """The agent captures a PNG of its current view and uploads it to artifact storage; the
    answer holds a presigned download URL valid 1 hour."""
    meeting = await _active_bot(request)
    app = request.app
    settings = app[SETTINGS]
    storage = app[STORAGE]
    artifact_id = uuid.uuid4().hex
    key = artifact_key(meeting.bot_id, "screenshots", f"{artifact_id}.png")
    target = await storage.upload_target(key, "image/png", settings.upload_url_ttl_seconds)
    slot = UploadSlot(
        storage_key=key,
        url=target.url,
        headers=target.headers,
        agent_auth=target.agent_auth,
        expires_at=target.expires_at,
    )
    result = await _command(
        request,
        meeting,
        CommandName.SCREENSHOT,
        {"artifact_id": artifact_id, "upload": slot.model_dump(mode="json")},
    )
    try:
        shot = _ScreenshotResult.model_validate(result.result)
    except ValidationError as exc:
        raise AgentCommandFailed("the bot answered the screenshot without its details") from exc
    if shot.storage_key != key or await storage.size(key) is None:
        raise AgentCommandFailed("the bot did not upload the screenshot")
    await record_artifact(
        app[DB],
        meeting.id,
        artifact_id=artifact_id,
        kind="screenshot",
        storage_key=key,
        content_type="image/png",
        size_bytes=shot.size_bytes,
        width=shot.width,
        height=shot.height,
        captured_at=shot.captured_at,
    )
    signed = await storage.presign_get(key, settings.presigned_url_ttl_seconds)
    return json_response(
        Screenshot(
            url=signed.url,
            expires_at=signed.expires_at,
            captured_at=shot.captured_at,
            width=shot.width,
            height=shot.height,
        )
    )


# Avatar and hand -------------------------------------------------------------------------------


@routes.put(
    BOT_PATH + "/avatar",
    summary="Set the camera image",
    body=AvatarSet,
    response=CommandAccepted,
    status=202,
    errors=(404, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def set_avatar(request: web.Request) -> web.Response:
    """Show ``image_url`` on the bot's camera feed."""
    body = await read_body(request, AvatarSet)
    meeting = await _active_bot(request)
    await _command(request, meeting, CommandName.AVATAR, {"image_url": body.image_url})
    return _accepted(meeting, CommandName.AVATAR)


@routes.delete(
    BOT_PATH + "/avatar",
    summary="Reset the camera image",
    response=CommandAccepted,
    status=202,
    errors=(404, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def reset_avatar(request: web.Request) -> web.Response:
    """Back to the bot's ``default_avatar_url``, or the service logo without one."""
    meeting = await _active_bot(request)
    await _command(request, meeting, CommandName.AVATAR, {"image_url": None})
    return _accepted(meeting, CommandName.AVATAR)


@routes.post(
    BOT_PATH + "/hand",
    summary="Raise the bot's hand",
    response=CommandAccepted,
    status=202,
    errors=(404, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def raise_hand(request: web.Request) -> web.Response:
    """The bot raises its hand in the meeting."""
    meeting = await _active_bot(request)
    await _command(request, meeting, CommandName.HAND, {"raised": True})
    return _accepted(meeting, CommandName.HAND)


@routes.delete(
    BOT_PATH + "/hand",
    summary="Lower the bot's hand",
    response=CommandAccepted,
    status=202,
    errors=(404, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def lower_hand(request: web.Request) -> web.Response:
    """The bot lowers its hand; the bot must be ``active``."""
    meeting = await _active_bot(request)
    await _command(request, meeting, CommandName.HAND, {"raised": False})
    return _accepted(meeting, CommandName.HAND)


# Chat ------------------------------------------------------------------------------------------


@routes.post(
    BOT_PATH + "/chat",
    summary="Send a chat message",
    body=ChatSend,
    response=CommandAccepted,
    status=202,
    errors=(404, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def send_chat(request: web.Request) -> web.Response:
    """The bot posts ``text`` to the meeting chat; it then appears in GET …/chat."""
    body = await read_body(request, ChatSend)
    meeting = await _active_bot(request)
    await _command(request, meeting, CommandName.CHAT, {"text": body.text})
    return _accepted(meeting, CommandName.CHAT)


@routes.get(
    BOT_PATH + "/chat",
    summary="Read the meeting chat",
    response=ChatMessages,
    errors=(404,),
    path_types=_BOT_TYPES,
)
async def read_chat(request: web.Request) -> web.Response:
    """Every chat message the bot saw, oldest first; 404 ``bot_not_active`` before joining."""
    meeting = await _bot(request)
    if meeting.status in _NOT_JOINED:
        raise NotFound(f"the bot is {meeting.status}: it has no chat", code="bot_not_active")
    async with request.app[DB].sessions() as session:
        rows = (
            await session.scalars(
                select(ChatMessage)
                .where(ChatMessage.meeting_id == meeting.id)
                .order_by(ChatMessage.timestamp, ChatMessage.id)
            )
        ).all()
    return json_response(
        ChatMessages(
            messages=[
                ChatMessageOut(
                    id=row.message_id,
                    sender=row.sender,
                    text=row.text,
                    timestamp=row.timestamp,
                    from_bot=row.from_bot,
                )
                for row in rows
            ]
        )
    )


# Speech and screen share (the voice-agent work comes later) -------------------------------------

_VOICE_LATER = (
    "speech output and screen share are not available on any platform yet "
    "(422 capability_not_supported)"
)


async def _voice_bot(request: web.Request) -> Meeting:
    meeting = await _active_bot(request)
    if not meeting.settings.get("voice_agent_enabled", True):
        raise Conflict(
            "the bot was launched with voice_agent_enabled false", code="voice_agent_disabled"
        )
    return meeting


@routes.post(
    BOT_PATH + "/speak",
    summary="Speak in the meeting (not available yet)",
    body=SpeakRequest,
    status=202,
    response=CommandAccepted,
    errors=(404, 409, 422),
    path_types=_BOT_TYPES,
)
async def speak(request: web.Request) -> web.Response:
    """Not available yet on any platform: answers 422 ``capability_not_supported`` (after the
    404 ``bot_not_active`` and 409 ``voice_agent_disabled`` checks)."""
    await read_body(request, SpeakRequest)
    await _voice_bot(request)
    raise CapabilityNotSupported(_VOICE_LATER)


@routes.delete(
    BOT_PATH + "/speak",
    summary="Interrupt speech (not available yet)",
    status=202,
    response=CommandAccepted,
    errors=(404, 409, 422),
    path_types=_BOT_TYPES,
)
async def stop_speaking(request: web.Request) -> web.Response:
    """Not available yet on any platform: answers 422 ``capability_not_supported``."""
    await _voice_bot(request)
    raise CapabilityNotSupported(_VOICE_LATER)


@routes.post(
    BOT_PATH + "/screen",
    summary="Share a screen (not available yet)",
    body=ScreenRequest,
    status=202,
    response=CommandAccepted,
    errors=(404, 409, 422),
    path_types=_BOT_TYPES,
)
async def share_screen(request: web.Request) -> web.Response:
    """Not available yet on any platform: answers 422 ``capability_not_supported``."""
    await read_body(request, ScreenRequest)
    await _voice_bot(request)
    raise CapabilityNotSupported(_VOICE_LATER)


@routes.delete(
    BOT_PATH + "/screen",
    summary="Stop sharing the screen (not available yet)",
    status=202,
    response=CommandAccepted,
    errors=(404, 409, 422),
    path_types=_BOT_TYPES,
)
async def stop_screen(request: web.Request) -> web.Response:
    """Not available yet on any platform: answers 422 ``capability_not_supported``."""
    await _voice_bot(request)
    raise CapabilityNotSupported(_VOICE_LATER)
