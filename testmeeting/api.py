"""The host API: JSON over HTTP to create rooms, act as the host, and read the ground truth.

Every path is under ``/api``; a room is ``/api/rooms/{platform}/{meeting_id}``. Errors are
RFC 9457 problem details like the product API's (``{type, title, status, detail, code}``,
``application/problem+json``) with the status of the :mod:`testmeeting.errors` class.
The full table is in ``testmeeting/README.md`` ("Host API").
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, Field, ValidationError

from testmeeting import media
from testmeeting.app_keys import ROOMS
from testmeeting.errors import MediaNotFound, RoomNotFound, ScenarioError, TestMeetingError
from testmeeting.platforms import Platform
from testmeeting.room import Room
from testmeeting.scenario import Utterance, parse_scenario

routes = web.RouteTableDef()

Model = TypeVar("Model", bound=BaseModel)


class ChatPost(BaseModel):
    """Body of ``POST …/chat``: from a participant (id or name) or from ``Host``."""

    text: str = Field(min_length=1, max_length=10_000)
    participant_id: str | None = None
    name: str | None = None


class ParticipantPost(BaseModel):
    """Body of ``POST …/participants``: a simulated participant joining now."""

    name: str = Field(min_length=1, max_length=100)
    mic_on: bool = True
    camera_on: bool = False


class SpeakPost(BaseModel):
    """Body of ``POST …/participants/{id}/speak``: an audio file or a text to synthesise."""

    file: str | None = None
    text: str | None = None


class HandPost(BaseModel):
    """Body of ``POST …/participants/{id}/hand``."""

    raised: bool


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Turn simulator errors into the JSON error body."""
    try:
        return await handler(request)
    except TestMeetingError as exc:
        # Same shape as the product API's errors (docs/api.md: RFC 9457 problem details).
        body = {
            "type": f"/errors/{exc.code}",
            "title": exc.code.replace("_", " ").capitalize(),
            "status": exc.status,
            "detail": str(exc),
            "code": exc.code,
        }
        return web.json_response(body, status=exc.status, content_type="application/problem+json")


def _room(request: web.Request) -> Room:
    try:
        platform = Platform(request.match_info["platform"])
    except ValueError as exc:
        raise RoomNotFound(f"unknown platform {request.match_info['platform']!r}") from exc
    return request.app[ROOMS].get(platform, request.match_info["meeting_id"])


async def _body(request: web.Request, model: type[Model]) -> Model:
    try:
        return model.model_validate_json(await request.read())
    except ValidationError as exc:
        raise ScenarioError(f"invalid body: {exc.errors()[0]['msg']}") from exc


@routes.get("/api/rooms")
async def list_rooms(request: web.Request) -> web.Response:
    """``{"rooms": [room, …]}``."""
    return web.json_response({"rooms": [room.summary() for room in request.app[ROOMS].all()]})


@routes.post("/api/rooms")
async def create_room(request: web.Request) -> web.Response:
    """Create a room from a scenario (JSON or YAML body); 201 with the room."""
    scenario = parse_scenario(await request.text())
    room = await request.app[ROOMS].create(scenario)
    return web.json_response(room.summary(), status=201)


@routes.get("/api/rooms/{platform}/{meeting_id}")
async def get_room(request: web.Request) -> web.Response:
    """The room: platform, meeting id, lobby, ended, clock start, participants."""
    return web.json_response(_room(request).summary())


@routes.delete("/api/rooms/{platform}/{meeting_id}")
async def delete_room(request: web.Request) -> web.Response:
    """End and forget the room; 204."""
    room = _room(request)
    await request.app[ROOMS].delete(*room.key)
    return web.Response(status=204)


@routes.post("/api/rooms/{platform}/{meeting_id}/end")
async def end_meeting(request: web.Request) -> web.Response:
    """The host ends the meeting for everyone."""
    room = _room(request)
    await room.end()
    return web.json_response(room.summary())


@routes.get("/api/rooms/{platform}/{meeting_id}/participants")
async def list_participants(request: web.Request) -> web.Response:
    """Everyone ever seen in the room, with their current state.

    Answers ``{"participants": [{id, name, simulated, state, mic_on, camera_on, screen_on,
    hand_raised, joined_at}]}``.
    """
    room = _room(request)
    return web.json_response({"participants": [p.public() for p in room.participants.values()]})


@routes.post("/api/rooms/{platform}/{meeting_id}/participants")
async def add_participant(request: web.Request) -> web.Response:
    """A simulated participant joins now; 201 with the participant."""
    room = _room(request)
    body = await _body(request, ParticipantPost)
    participant = await room.add_participant(body.name, body.mic_on, body.camera_on)
    return web.json_response(participant.public(), status=201)


@routes.post("/api/rooms/{platform}/{meeting_id}/participants/{participant_id}/speak")
async def speak(request: web.Request) -> web.Response:
    """A simulated participant says a file or a synthesised text now.

    Answers the timeline's view: ``{"text", "file", "duration"}`` (seconds).
    """
    room = _room(request)
    body = await _body(request, SpeakPost)
    try:
        utterance = Utterance(at=0, file=body.file, text=body.text)
    except ValidationError as exc:
        raise ScenarioError("speak needs a file or a text") from exc
    prepared = await room.say(request.match_info["participant_id"], utterance)
    return web.json_response(
        {"text": prepared.text, "file": prepared.file, "duration": prepared.duration}
    )


def _host_action(action: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        room = _room(request)
        participant_id = request.match_info["participant_id"]
        method: Callable[[str], Awaitable[None]] = getattr(room, action)
        await method(participant_id)
        return web.json_response(room.participants[participant_id].public())

    handler.__doc__ = f"The host calls ``Room.{action}`` on the participant."
    return handler


for _action in ("admit", "deny", "remove", "leave"):
    routes.post(
        f"/api/rooms/{{platform}}/{{meeting_id}}/participants/{{participant_id}}/{_action}"
    )(_host_action(_action))


@routes.post("/api/rooms/{platform}/{meeting_id}/participants/{participant_id}/hand")
async def set_hand(request: web.Request) -> web.Response:
    """Raise or lower a participant's hand (``{"raised": bool}``)."""
    room = _room(request)
    body = await _body(request, HandPost)
    await room.set_hand(request.match_info["participant_id"], body.raised)
    return web.json_response(room.participants[request.match_info["participant_id"]].public())


@routes.get("/api/rooms/{platform}/{meeting_id}/chat")
async def read_chat(request: web.Request) -> web.Response:
    """``{"messages": [{id, sender_id, sender, text, t}]}``, oldest first."""
    room = _room(request)
    return web.json_response({"messages": [message.public() for message in room.chat]})


@routes.post("/api/rooms/{platform}/{meeting_id}/chat")
async def send_chat(request: web.Request) -> web.Response:
    """Post a chat message as a participant (``participant_id`` or ``name``) or as Host; 201."""
    room = _room(request)
    body = await _body(request, ChatPost)
    sender_id = body.participant_id
    if sender_id is None and body.name is not None:
        sender_id = room.find_by_name(body.name).id
    message = await room.send_chat(body.text, sender_id=sender_id)
    return web.json_response(message.public(), status=201)


@routes.get("/api/rooms/{platform}/{meeting_id}/participants/{participant_id}/audio.wav")
async def received_audio(request: web.Request) -> web.Response:
    """The microphone a browser participant sent, as 16 kHz mono WAV.

    ``X-Testmeeting-Start`` carries the UNIX epoch seconds of the first sample.
    """
    start, pcm = _room(request).received_audio(request.match_info["participant_id"])
    return web.Response(
        body=media.wav_bytes(pcm),
        content_type="audio/wav",
        headers={"X-Testmeeting-Start": f"{start:.3f}"},
    )


@routes.get("/api/rooms/{platform}/{meeting_id}/participants/{participant_id}/frames/{kind}")
async def list_frames(request: web.Request) -> web.Response:
    """Camera or screen frames received and the stream's frame rate, once a second.

    ``{"frames": [{"index", "t", "bytes"}], "rates": [{"t", "fps"}]}``.
    """
    room = _room(request)
    participant_id, kind = request.match_info["participant_id"], request.match_info["kind"]
    frames = room.received_frames(participant_id, kind)
    listing: list[dict[str, Any]] = [
        {"index": index, "t": t, "bytes": len(png)} for index, (t, png) in enumerate(frames)
    ]
    rates = [{"t": t, "fps": fps} for t, fps in room.received_video_rate(participant_id, kind)]
    return web.json_response({"frames": listing, "rates": rates})


@routes.get(
    "/api/rooms/{platform}/{meeting_id}/participants/{participant_id}/frames/{kind}/{index}"
)
async def get_frame(request: web.Request) -> web.Response:
    """One frame as PNG; ``index`` is a position from the listing or ``latest``."""
    frames = _room(request).received_frames(
        request.match_info["participant_id"], request.match_info["kind"]
    )
    if not frames:
        raise MediaNotFound("no frames received")
    raw = request.match_info["index"].removesuffix(".png")
    try:
        t, png = frames[-1] if raw == "latest" else frames[int(raw)]
    except (ValueError, IndexError) as exc:
        raise MediaNotFound(f"no frame {raw!r}") from exc
    return web.Response(
        body=png, content_type="image/png", headers={"X-Testmeeting-Time": f"{t:.3f}"}
    )


@routes.get("/api/rooms/{platform}/{meeting_id}/timeline")
async def timeline(request: web.Request) -> web.Response:
    """``{"events": [TimelineEvent, …]}`` — the ground truth, epoch seconds."""
    events = [event.model_dump(exclude_none=True) for event in _room(request).timeline()]
    return web.json_response({"events": events}, dumps=json.dumps)
