"""Frames of the agent link: one WebSocket per bot, JSON text frames (DESIGN.md §5).

Every frame is ``{type, id, ts, ...}``. ``id`` is stable: an event resent from the agent's
outbox after a reconnect keeps its id, and the control plane stores events idempotently by it
and answers each with an :class:`Ack`. Parse a received frame with :func:`parse_frame`.

Agent → control plane: ``register``, ``status``, ``transcript_segment``, ``participants``,
``action``, ``artifact``, ``chat_message``, ``heartbeat``, ``command_result``, ``ack``.
Control plane → agent: ``command``, ``ack``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from agent.contracts.status import BotStatus


def new_frame_id() -> str:
    """Return a fresh frame id (a UUID4 string)."""
    return str(uuid.uuid4())


def utc_now() -> datetime:
    """Return the current time, timezone-aware UTC."""
    return datetime.now(UTC)


class _Frame(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=new_frame_id)
    ts: datetime = Field(default_factory=utc_now)


class Register(_Frame):
    """First frame of every connection: where the agent serves its SSE stream."""

    type: Literal["register"] = "register"
    stream_url: str
    agent_version: str


class StatusEvent(_Frame):
    """A status change of the bot, with its machine-readable reason (DESIGN.md §3)."""

    type: Literal["status"] = "status"
    status: BotStatus
    status_reason: str | None = None
    detail: str | None = None


class Segment(BaseModel):
    """A transcript segment (API.md 2.6).

    ``start``/``end`` are seconds from when the bot joined; a partial segment has
    ``completed=False`` and is replaced by the final one with the same ``id``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    start: float
    end: float
    absolute_start_time: datetime
    absolute_end_time: datetime
    text: str
    speaker: str | None = None
    language: str | None = None
    completed: bool = True
    tier: Literal["realtime", "deferred"] = "realtime"


class TranscriptSegmentEvent(_Frame):
    """A final transcript segment (partials go only to the SSE stream)."""

    type: Literal["transcript_segment"] = "transcript_segment"
    segment: Segment


class TranscriptionReady(_Frame):
    """A tier finished its work for the meeting: ``segment_count`` segments are stored."""

    type: Literal["transcription_ready"] = "transcription_ready"
    tier: Literal["realtime", "deferred"]
    segment_count: int


class ParticipantsEvent(_Frame):
    """The current participant names (the bot excluded) and who joined or left since last."""

    type: Literal["participants"] = "participants"
    participants: list[str]
    joined: list[str] = Field(default_factory=list)
    left: list[str] = Field(default_factory=list)


class ActionType(StrEnum):
    """Kinds of detected actions (API.md 2.9)."""

    ACTION_ITEM = "action_item"
    DECISION = "decision"
    QUESTION = "question"
    FOLLOW_UP = "follow_up"


class ActionEvent(_Frame):
    """An action detected by the language model over completed segments."""

    type: Literal["action"] = "action"
    action_type: ActionType
    text: str
    segment_ids: list[str]


class ArtifactKind(StrEnum):
    """What an uploaded artifact is."""

    RECORDING = "recording"
    SCREENSHOT = "screenshot"


class ArtifactEvent(_Frame):
    """An artifact the agent has uploaded to artifact storage under ``storage_key``."""

    type: Literal["artifact"] = "artifact"
    kind: ArtifactKind
    artifact_id: str
    storage_key: str
    content_type: str
    size_bytes: int
    format: str | None = None
    duration_s: float | None = None
    width: int | None = None
    height: int | None = None
    captured_at: datetime | None = None


class ChatMessageEvent(_Frame):
    """A chat message seen in the meeting (sent by a participant or by the bot)."""

    type: Literal["chat_message"] = "chat_message"
    message_id: str
    sender: str
    text: str
    timestamp: datetime
    from_bot: bool = False


class Heartbeat(_Frame):
    """Sent every few seconds; a silent agent is marked ``failed``/``agent_lost``."""

    type: Literal["heartbeat"] = "heartbeat"


class UploadSlot(BaseModel):
    """Where an agent sends one artifact's bytes.

    It is the ``upload`` argument of a ``screenshot`` command and the answer of
    ``POST {control_plane_url}/internal/v1/agents/{bot_id}/uploads`` (body
    :class:`UploadRequest`, ``Authorization: Bearer <agent_token>``). Send the bytes with
    ``method`` to ``url`` with exactly ``headers``; when ``agent_auth`` is true, add
    ``Authorization: Bearer <agent_token>`` too (local storage; presigned S3 URLs must not get
    it). Then report the artifact (``artifact`` frame, or the command's result).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    storage_key: str
    url: str
    method: Literal["PUT"] = "PUT"
    headers: dict[str, str] = Field(default_factory=dict)
    agent_auth: bool = False
    expires_at: datetime


class UploadRequest(BaseModel):
    """Body of the agent's upload-slot request: what it is about to upload.

    ``name`` is the file name within the bot's artifacts (``[A-Za-z0-9._-]``, e.g.
    ``recording.mp4``); ``content_type`` is sent back in the slot's headers.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ArtifactKind
    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    content_type: str = Field(min_length=1, max_length=100)


class CommandName(StrEnum):
    """Commands the control plane sends to an agent (DESIGN.md §5).

    Arguments (``Command.args``) and results (``CommandResult.result``) of each:

    - ``stop``: ``{"reason": str}`` (``stopped_by_api``); no result needed.
    - ``screenshot``: ``{"artifact_id": str, "upload": UploadSlot}``; the agent captures a PNG,
      uploads it to the slot and answers ``{"artifact_id", "storage_key", "size_bytes",
      "width", "height", "captured_at"}`` (pixels; ISO 8601 UTC).
    - ``chat``: ``{"text": str}`` (1 to 4096 characters); the message also comes back as a
      ``chat_message`` frame with ``from_bot`` true.
    - ``hand``: ``{"raised": bool}``.
    - ``avatar``: ``{"image_url": str | None}``; None resets to ``default_avatar_url`` or the
      service logo.
    - ``speak`` / ``stop_speaking`` / ``screen_share`` / ``stop_screen_share`` /
      ``update_settings``: reserved for the voice-agent work.

    A command the platform cannot do is answered ``ok=False, error="capability_not_supported"``;
    one that needs the bot in the meeting, ``error="bot_not_active"``.
    """

    STOP = "stop"
    SCREENSHOT = "screenshot"
    SPEAK = "speak"
    STOP_SPEAKING = "stop_speaking"
    CHAT = "chat"
    SCREEN_SHARE = "screen_share"
    STOP_SCREEN_SHARE = "stop_screen_share"
    AVATAR = "avatar"
    HAND = "hand"
    UPDATE_SETTINGS = "update_settings"


class Command(_Frame):
    """A command for the agent; its result comes back as :class:`CommandResult` with ``ref_id``."""

    type: Literal["command"] = "command"
    command: CommandName
    args: dict[str, Any] = Field(default_factory=dict)


class CommandResult(_Frame):
    """Outcome of a :class:`Command`.

    ``error`` is a stable code (``capability_not_supported``, ``bot_not_active``, …) when the
    command failed; ``result`` carries the command's output otherwise.
    """

    type: Literal["command_result"] = "command_result"
    ref_id: str
    ok: bool
    result: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    detail: str | None = None


class Ack(_Frame):
    """Receipt of the frame ``ref_id``; the sender may forget it."""

    type: Literal["ack"] = "ack"
    ref_id: str


AgentFrame = Annotated[
    Register
    | StatusEvent
    | TranscriptSegmentEvent
    | TranscriptionReady
    | ParticipantsEvent
    | ActionEvent
    | ArtifactEvent
    | ChatMessageEvent
    | Heartbeat
    | CommandResult
    | Ack,
    Field(discriminator="type"),
]
ControlPlaneFrame = Annotated[Command | Ack, Field(discriminator="type")]

_AGENT_FRAME: TypeAdapter[AgentFrame] = TypeAdapter(AgentFrame)
_CONTROL_PLANE_FRAME: TypeAdapter[ControlPlaneFrame] = TypeAdapter(ControlPlaneFrame)


def parse_agent_frame(raw: str | bytes) -> AgentFrame:
    """Parse a JSON frame sent by an agent.

    Raises:
        pydantic.ValidationError: The frame is not valid JSON or not a known frame.
    """
    return _AGENT_FRAME.validate_json(raw)


def parse_control_plane_frame(raw: str | bytes) -> ControlPlaneFrame:
    """Parse a JSON frame sent by the control plane.

    Raises:
        pydantic.ValidationError: The frame is not valid JSON or not a known frame.
    """
    return _CONTROL_PLANE_FRAME.validate_json(raw)
