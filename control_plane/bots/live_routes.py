"""Live routes of a bot (docs/api.md Part 1, 2.5 and 2.7).

Stream subscription, participants, screenshot, avatar, hand, chat, speech and screen share.
``voice_agent_enabled`` false closes speech, chat sending and screen share (409
``voice_agent_disabled``, :func:`_voice_bot`).

Each command route builds its typed command (``agent.contracts.link.AgentCommand``) and sends
it through :class:`~control_plane.bots.live_commands.LiveCommands`, which waits for the agent's
result, so a failure is reported, never swallowed: ``capability_not_supported`` → 422,
``avatar_unavailable`` / ``screen_source_unavailable`` → 422 (the image or page cannot be used),
``bot_not_active`` → 404, another agent error → 502 ``agent_command_failed``, no link → 503
``agent_unavailable``, no answer → 504 ``agent_timeout``. Routes that need the bot in the
meeting answer 404 ``bot_not_active`` in any other status (Part 1 says so for screenshot,
avatar reset and hand lowering; 2.5 extends it to every live command).
"""

from __future__ import annotations

import asyncio
import uuid

from aiohttp import web
from sqlalchemy import select

from agent.contracts.link import (
    AgentCommand,
    AvatarCommand,
    ChatCommand,
    HandCommand,
    ScreenShareCommand,
    SpeakCommand,
    StopScreenShareCommand,
    StopSpeakingCommand,
)
from agent.contracts.status import NOT_JOINED_STATUSES, STREAMING_STATUSES, BotStatus
from control_plane.agent_hub.keys import AGENT_HUB, STREAM_SIGNER
from control_plane.api.http import json_response, path_uuid, read_body
from control_plane.api.routes import ApiRoutes
from control_plane.auth.context import auth_of
from control_plane.bots.live_commands import LIVE_COMMANDS, LiveCommands
from control_plane.bots.live_schemas import (
    AvatarSet,
    ChatMessageOut,
    ChatMessages,
    ChatSend,
    CommandAccepted,
    Participants,
    ScreenRequest,
    Screenshot,
    SpeakRequest,
    SpeechAccepted,
    Subscription,
)
from control_plane.bots.stream import stream_path
from control_plane.bots.url_guard import checked as checked_url
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import AgentLink, ChatMessage
from control_plane.db.models.bot import Meeting
from control_plane.errors import Conflict, NotFound, NotImplementedOperation
from control_plane.settings import SETTINGS

routes = ApiRoutes("live")

BOT_PATH = "/api/v1/bots/{bot_id}"
_BOT_TYPES = {"bot_id": uuid.UUID}
# How often subscribe re-reads the database while it waits (another replica may hold the link).
_SUBSCRIBE_POLL_S = 1.0


def live_commands(app: web.Application) -> LiveCommands:
    """The app's :class:`LiveCommands`, built once with its dependencies (``_bots_ctx``)."""
    return app[LIVE_COMMANDS]


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


async def _carry_out(request: web.Request, meeting: Meeting, command: AgentCommand) -> web.Response:
    """Have the agent carry ``command`` out (errors mapped); answer 202 :class:`CommandAccepted`."""
    await live_commands(request.app).carry_out(meeting.bot_id, command)
    return json_response(
        CommandAccepted(bot_id=meeting.bot_id, command=command.name.value), status=202
    )


# Stream ----------------------------------------------------------------------------------------


async def _registration(request: web.Request, meeting_id: int) -> tuple[bool, str]:
    """Whether the bot's agent has registered (to any replica), and the bot's status."""
    async with request.app[DB].sessions() as session:
        row = (
            await session.execute(
                select(AgentLink.registered_at, Meeting.status)
                .join(Meeting, Meeting.id == AgentLink.meeting_id)
                .where(AgentLink.meeting_id == meeting_id)
            )
        ).first()
        if row is None:
            status = await session.scalar(select(Meeting.status).where(Meeting.id == meeting_id))
            return False, status or BotStatus.FAILED
    return row[0] is not None, row[1]


@routes.post(
    BOT_PATH + "/subscribe",
    summary="Subscribe to the bot's event stream",
    response=Subscription,
    errors=(404,),
    read_key_ok=True,
    path_types=_BOT_TYPES,
)
async def subscribe(request: web.Request) -> web.Response:
    """Return the bot's stream URL and a fresh token (15 minutes) once its agent registered.

    The URL is ``GET /api/v1/bots/{bot_id}/stream`` on this control plane (any replica serves
    it). Waits up to 30 s for the bot's agent to connect and register. 404 ``bot_not_active``
    when it does not in time or the bot is not (or no longer) in a meeting; retry after a few
    seconds.
    """
    meeting = await _bot(request)
    app = request.app
    settings = app[SETTINGS]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.subscribe_wait_seconds
    while True:
        registered, status = await _registration(request, meeting.id)
        if status not in STREAMING_STATUSES:
            raise NotFound(f"the bot is {status}: it has no stream", code="bot_not_active")
        if registered:
            break
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise NotFound("the bot has not registered its stream yet", code="bot_not_active")
        await app[AGENT_HUB].wait_registered(meeting.bot_id, min(remaining, _SUBSCRIBE_POLL_S))
    minted = app[STREAM_SIGNER].mint(meeting.bot_id, settings.stream_token_ttl_seconds)
    url = settings.effective_public_url + stream_path(meeting.bot_id)
    return json_response(Subscription(url=url, token=minted.token, expires_at=minted.expires_at))


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


@routes.post(
    BOT_PATH + "/screenshot",
    summary="Capture the bot's screen",
    response=Screenshot,
    errors=(404, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def screenshot(request: web.Request) -> web.Response:
    """The agent captures a PNG of its current view and uploads it to artifact storage.

    The answer holds a presigned download URL valid 1 hour.
    """
    meeting = await _active_bot(request)
    shot = await live_commands(request.app).screenshot(meeting)
    return json_response(
        Screenshot(
            url=shot.url.url,
            expires_at=shot.url.expires_at,
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
    errors=(404, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def set_avatar(request: web.Request) -> web.Response:
    """Show ``image_url`` on the bot's camera feed (while no screen content is shared).

    The bot fetches the image under the webhook SSRF rules (at most 5 MiB) and draws it on its
    1280x720 camera. 422 ``avatar_unavailable`` (``errors[0].loc`` ``["body", "image_url"]``)
    when it is refused, cannot be fetched or does not decode; the camera keeps its image.
    """
    body = await read_body(request, AvatarSet)
    meeting = await _active_bot(request)
    return await _carry_out(request, meeting, AvatarCommand(image_url=body.image_url))


@routes.delete(
    BOT_PATH + "/avatar",
    summary="Reset the camera image",
    response=CommandAccepted,
    status=202,
    errors=(404, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def reset_avatar(request: web.Request) -> web.Response:
    """Back to the bot's ``default_avatar_url``, or the service logo without one.

    422 ``avatar_unavailable`` when ``default_avatar_url`` cannot be fetched or decoded now.
    """
    meeting = await _active_bot(request)
    return await _carry_out(request, meeting, AvatarCommand(image_url=None))


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
    return await _carry_out(request, meeting, HandCommand(raised=True))


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
    return await _carry_out(request, meeting, HandCommand(raised=False))


# Chat ------------------------------------------------------------------------------------------


@routes.post(
    BOT_PATH + "/chat",
    summary="Send a chat message",
    body=ChatSend,
    response=CommandAccepted,
    status=202,
    errors=(404, 409, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def send_chat(request: web.Request) -> web.Response:
    """The bot posts ``text`` to the meeting chat; it then appears in GET …/chat.

    409 ``voice_agent_disabled`` when the bot's ``voice_agent_enabled`` is false.
    """
    body = await read_body(request, ChatSend)
    meeting = await _voice_bot(request)
    return await _carry_out(request, meeting, ChatCommand(text=body.text))


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
    if meeting.status in NOT_JOINED_STATUSES:
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


# Speech and screen share (the voice-agent switch gates both, and chat) ------------------------


async def _voice_bot(request: web.Request) -> Meeting:
    """The path's active bot, whose ``voice_agent_enabled`` must be true (409 otherwise)."""
    meeting = await _active_bot(request)
    if not meeting.settings.get("voice_agent_enabled", True):
        raise Conflict(
            "the bot's voice_agent_enabled is false: it does not speak, chat or share",
            code="voice_agent_disabled",
        )
    return meeting


@routes.post(
    BOT_PATH + "/speak",
    summary="Speak in the meeting",
    body=SpeakRequest,
    status=202,
    response=SpeechAccepted,
    errors=(404, 409, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def speak(request: web.Request) -> web.Response:
    """The bot says ``text`` (or plays ``audio_url``) through its microphone.

    The 202 comes once the bot queued the speech (after what it is saying, or at once with
    ``interrupt`` true); it unmutes with the platform's microphone button, streams the speech
    sentence by sentence as it is synthesised, and mutes again when its queue is empty.
    ``speak_started`` / ``speak_finished`` on the stream carry the answer's ``speech_id``.
    ``voice``: the bot's voice names (the packaged ``en_US-joe-medium``, alias ``joe``), any
    name with an OpenAI-compatible speech endpoint. ``audio_url``: http(s), checked against the
    webhook address rules (422 ``url_not_allowed``), at most 20 MiB and 600 s, any format
    ffmpeg reads; a file that cannot be fetched or decoded ends as ``speak_finished`` with
    ``error`` ``audio_unavailable``. 409 ``voice_agent_disabled`` when the bot's
    ``voice_agent_enabled`` is false; 422 ``voice_not_available`` (``errors[0].loc``
    ``["body", "voice"]``) for a voice the bot's synthesizer lacks.
    """
    body = await read_body(request, SpeakRequest)
    meeting = await _voice_bot(request)
    if body.audio_url is not None:
        await checked_url(request.app, "audio_url", body.audio_url)
    command = SpeakCommand(
        text=body.text,
        voice=body.voice,
        audio_url=body.audio_url,
        speech_id=str(uuid.uuid4()),
        interrupt=body.interrupt,
    )
    result = await live_commands(request.app).carry_out(meeting.bot_id, command)
    return json_response(
        SpeechAccepted(
            bot_id=meeting.bot_id,
            command=command.name.value,
            speech_id=str(command.speech_id),
            ahead=int(result.result.get("ahead", 0)),
        ),
        status=202,
    )


@routes.delete(
    BOT_PATH + "/speak",
    summary="Interrupt speech",
    status=202,
    response=CommandAccepted,
    errors=(404, 409, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def stop_speaking(request: web.Request) -> web.Response:
    """The bot falls silent at once and drops its queued speeches (each ends ``interrupted``).

    409 ``voice_agent_disabled`` when the bot's ``voice_agent_enabled`` is false.
    """
    meeting = await _voice_bot(request)
    return await _carry_out(request, meeting, StopSpeakingCommand())


@routes.post(
    BOT_PATH + "/screen",
    summary="Share a screen: an image, a web page or a video",
    body=ScreenRequest,
    status=202,
    response=CommandAccepted,
    errors=(404, 409, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def share_screen(request: web.Request) -> web.Response:
    """The bot presents ``image_url``, the page at ``url`` or ``video_url`` (the share control).

    The shared stream is 1280x720 (16:9) at 30 fps; while it is shared the camera shows it too.
    A page is rendered by the bot in an isolated browser context, its frames drawn into the
    stream as they change; a video (``video/*``, at most 50 MiB) plays once, its sound fed into
    the bot's microphone. Sources are fetched under the webhook SSRF rules. A share already
    running is replaced. 202 once the platform shows the share as started.

    Errors: 422 ``screen_source_unavailable`` (``errors[0].loc`` names the argument) when the
    source is refused, cannot be fetched or loaded, or does not decode or play; 422
    ``capability_not_supported`` from a platform (or an older agent) without screen share; 409
    ``voice_agent_disabled``; 404 ``bot_not_active``; 502 ``agent_command_failed`` when the share
    control did not respond.
    """
    body = await read_body(request, ScreenRequest)
    meeting = await _voice_bot(request)
    command = ScreenShareCommand(url=body.url, image_url=body.image_url, video_url=body.video_url)
    return await _carry_out(request, meeting, command)


@routes.delete(
    BOT_PATH + "/screen",
    summary="Stop sharing the screen",
    status=202,
    response=CommandAccepted,
    errors=(404, 409, 422, 502, 503, 504),
    path_types=_BOT_TYPES,
)
async def stop_screen(request: web.Request) -> web.Response:
    """The bot stops presenting; its camera shows its avatar again (202 also when not sharing).

    422 ``capability_not_supported`` only from an agent that predates screen share.
    """
    meeting = await _voice_bot(request)
    return await _carry_out(request, meeting, StopScreenShareCommand())
