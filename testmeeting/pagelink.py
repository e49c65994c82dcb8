"""The room WebSocket each skin page opens: page messages in, room events and speech out.

Page → simulator (JSON text): ``join {name, mic, camera}``, ``chat {text}``,
``hand {raised}``, ``device {device: mic|camera|screen, on}``, ``leave``,
``video_rate {device: camera|screen, frames, seconds}`` (frames the page presented from that
stream in the last ``seconds``, sent once a second while it sends the stream).
Page → simulator (binary): one byte kind (1 microphone PCM, 2 camera PNG, 3 screen PNG),
float64 LE capture time (UNIX epoch seconds), payload (16 kHz mono int16 LE PCM, or PNG).

Simulator → page (JSON text): ``joined {participant_id, audio_slots}``, ``lobby``,
``admitted``, ``denied``, ``no_answer``, ``removed``, ``ended``, ``participants``, ``chat``,
``chat_history``, ``audio_slots``, ``error``. Binary
(see :func:`testmeeting.room.streams.speech_message`): ``speech`` (a simulated participant's
utterance, in parts of at most 8 s played once all are in: ``clip``, ``part``, ``parts``) and
``stream`` (a 100 ms block of another browser participant's microphone).
"""

from __future__ import annotations

import json
import logging
import struct
from typing import Annotated, Any, Literal

from aiohttp import WSMsgType, web
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from testmeeting.errors import TestMeetingError
from testmeeting.platforms import Platform
from testmeeting.room import Room, Rooms

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
_UPLOAD_HEADER = struct.Struct("<Bd")
_UPLOAD_KINDS = {1: "mic", 2: "camera", 3: "screen"}


class JoinMessage(BaseModel):
    """The page pressed its join button."""

    type: Literal["join"]
    name: str = Field(min_length=1, max_length=100)
    mic: bool = True
    camera: bool = False


class ChatSend(BaseModel):
    """The page sends a chat message."""

    type: Literal["chat"]
    text: str = Field(min_length=1, max_length=10_000)


class HandMessage(BaseModel):
    """The page raised or lowered its hand."""

    type: Literal["hand"]
    raised: bool


class DeviceMessage(BaseModel):
    """The page switched its microphone, camera or screen share."""

    type: Literal["device"]
    device: Literal["mic", "camera", "screen"]
    on: bool


class VideoRateMessage(BaseModel):
    """Frames the page presented from its camera or screen stream in the last ``seconds``."""

    type: Literal["video_rate"]
    device: Literal["camera", "screen"]
    frames: int = Field(ge=0)
    seconds: float = Field(gt=0)


class LeaveMessage(BaseModel):
    """The page left the meeting."""

    type: Literal["leave"]


PageMessage = Annotated[
    JoinMessage | ChatSend | HandMessage | DeviceMessage | VideoRateMessage | LeaveMessage,
    Field(discriminator="type"),
]
_PAGE_MESSAGE: TypeAdapter[PageMessage] = TypeAdapter(PageMessage)


class WebSocketLink:
    """:class:`~testmeeting.room.state.PageLink` over an aiohttp WebSocket.

    A closed page is ignored.
    """

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self._ws = ws

    async def send_json(self, message: dict[str, Any]) -> None:
        """Send one JSON text message."""
        if not self._ws.closed:
            try:
                await self._ws.send_str(json.dumps(message))
            except ConnectionError:
                log.debug("page gone while sending")

    async def send_bytes(self, data: bytes) -> None:
        """Send one binary message."""
        if not self._ws.closed:
            try:
                await self._ws.send_bytes(data)
            except ConnectionError:
                log.debug("page gone while sending")


async def handle_page_socket(request: web.Request, rooms: Rooms) -> web.WebSocketResponse:
    """Serve one page's WebSocket (``/_tm/ws?platform=…&meeting_id=…``) until it closes."""
    ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES)
    await ws.prepare(request)
    link = WebSocketLink(ws)
    try:
        room = rooms.find(
            Platform(request.query.get("platform", "")), request.query.get("meeting_id", "")
        )
    except ValueError:
        room = None
    participant_id: str | None = None
    try:
        async for msg in ws:
            if room is None:
                await link.send_json({"type": "not_found"})
                continue
            if msg.type is WSMsgType.TEXT:
                participant_id = await _on_text(room, link, participant_id, msg.data)
            elif msg.type is WSMsgType.BINARY and participant_id is not None:
                await _on_binary(room, participant_id, msg.data)
    finally:
        if room is not None and participant_id is not None:
            await room.leave(participant_id)
            room.detach(participant_id)
    return ws


async def _on_text(
    room: Room, link: WebSocketLink, participant_id: str | None, data: str
) -> str | None:
    try:
        message = _PAGE_MESSAGE.validate_json(data)
    except ValidationError:
        await link.send_json({"type": "error", "code": "bad_message"})
        return participant_id
    try:
        if isinstance(message, JoinMessage):
            if participant_id is None:
                participant = await room.guest_join(link, message.name, message.mic, message.camera)
                return participant.id
        elif participant_id is None:
            await link.send_json({"type": "error", "code": "not_joined"})
        elif isinstance(message, ChatSend):
            await room.send_chat(message.text, sender_id=participant_id)
        elif isinstance(message, HandMessage):
            await room.set_hand(participant_id, message.raised)
        elif isinstance(message, DeviceMessage):
            await room.set_device(participant_id, message.device, message.on)
        elif isinstance(message, VideoRateMessage):
            room.receive_video_rate(participant_id, message.device, message.frames, message.seconds)
        else:
            await room.leave(participant_id)
    except TestMeetingError as exc:
        await link.send_json({"type": "error", "code": exc.code})
    return participant_id


async def _on_binary(room: Room, participant_id: str, data: bytes) -> None:
    if len(data) <= _UPLOAD_HEADER.size:
        return
    kind_code, captured_at = _UPLOAD_HEADER.unpack_from(data)
    kind = _UPLOAD_KINDS.get(kind_code)
    payload = data[_UPLOAD_HEADER.size :]
    if kind == "mic":
        room.receive_audio(participant_id, captured_at, payload)
        await room.relay_audio(participant_id, payload)
    elif kind is not None:
        room.receive_frame(participant_id, kind, captured_at, payload)
