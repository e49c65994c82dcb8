"""Frames of the agent link: one WebSocket per bot, JSON text frames (docs/architecture.md §5).

Every frame is ``{type, id, ts, ...}``. ``id`` is stable: an event resent from the agent's
outbox after a reconnect keeps its id, and the control plane stores events idempotently by it
and answers each with an :class:`Ack`. Parse a received frame with :func:`parse_frame`.

Agent → control plane: ``register``, ``status``, ``transcript_segment``, ``participants``,
``action``, ``artifact``, ``chat_message``, ``heartbeat``, ``command_result``, ``ack``, and the
bot's stream: ``stream_event``, ``stream_end``, ``stream_batch`` (sent on the open connection,
not through the outbox, unacked but for ``stream_end``: the agent keeps the meeting's stream
log and feeds it again from where the control plane says).
Control plane → agent: ``command``, ``ack``, ``stream_from``, ``stream_fetch``.

A ``command`` frame carries one :data:`AgentCommand`: a model per command, told apart by its
``name`` (``{"type": "command", "id", "ts", "command": {"name": "hand", "raised": true}}``).
Both ends validate it; an agent answers a command it cannot parse with
:func:`reject_command` and one it cannot carry out with a :class:`CommandResult` whose
``error`` is a :class:`CommandErrorCode` (and ``field`` the argument or setting concerned).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from agent.contracts.bot_config import CaptureMode, RecordingFormat
from agent.contracts.status import BotStatus, StatusReason


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
    """First frame of every connection: the agent's version and how far its stream has got.

    ``stream_seq`` is the id of the last event in the agent's stream log (0: none yet); the
    control plane answers with :class:`StreamFrom` to say where the agent's stream feed starts.
    """

    type: Literal["register"] = "register"
    agent_version: str
    stream_seq: int = Field(default=0, ge=0)


class StatusEvent(_Frame):
    """A status change of the bot, with its machine-readable reason (docs/architecture.md §3)."""

    type: Literal["status"] = "status"
    status: BotStatus
    status_reason: str | None = None
    detail: str | None = None


class Segment(BaseModel):
    """A transcript segment (docs/api.md 2.6).

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
    """A final transcript segment, stored (partials travel only as :class:`StreamEvent`)."""

    type: Literal["transcript_segment"] = "transcript_segment"
    segment: Segment


class TranscriptionReady(_Frame):
    """A tier finished its work for the meeting: ``segment_count`` segments are stored."""

    type: Literal["transcription_ready"] = "transcription_ready"
    tier: Literal["realtime", "deferred"]
    segment_count: int


class ParticipantsEvent(_Frame):
    """The current participant names (the bot excluded) and who joined or left since last.

    ``meeting_name`` is the meeting's title as the platform's page shows it, read once the bot
    is in (sent with the first participants frame after it was read; null otherwise). The
    control plane stores it as the meeting's ``data.name``.
    """

    type: Literal["participants"] = "participants"
    participants: list[str]
    joined: list[str] = Field(default_factory=list)
    left: list[str] = Field(default_factory=list)
    meeting_name: str | None = Field(default=None, max_length=300)


class ActionType(StrEnum):
    """Kinds of detected actions (docs/api.md 2.9)."""

    ACTION_ITEM = "action_item"
    DECISION = "decision"
    QUESTION = "question"
    FOLLOW_UP = "follow_up"


class ActionEvent(_Frame):
    """An action an agent's own language model detected over completed segments.

    Sent only by agents of images built before issue 34 (detection is the control plane's now:
    it streams its actions with :class:`AnnounceActionCommand`); kept so a control plane still
    stores what those bots send. ``id`` is the action's stable id; ``owner`` and ``due`` are as
    said in the meeting (None when not said); ``segment_ids`` are ids of completed segments it
    rests on (never empty).
    """

    type: Literal["action"] = "action"
    action_type: ActionType
    text: str = Field(min_length=1, max_length=500)
    owner: str | None = Field(default=None, max_length=100)
    due: str | None = Field(default=None, max_length=100)
    segment_ids: list[str] = Field(min_length=1, max_length=64)


class ArtifactKind(StrEnum):
    """What an uploaded artifact is."""

    RECORDING = "recording"
    SCREENSHOT = "screenshot"
    LOG = "log"


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


class StreamItem(BaseModel):
    """One event of the bot's stream (docs/api.md 2.7) as the agent numbered it.

    ``seq`` is the SSE ``id`` (per bot, from 1, increasing by one), ``event`` the SSE event name,
    ``data`` its JSON payload as text, exactly as clients receive it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=1)
    event: str = Field(min_length=1, max_length=64)
    data: str


class StreamEvent(_Frame):
    """A live stream event (partials, speech events and the rest), neither stored nor acked.

    Sent on the open connection only, in ``seq`` order, from where the last :class:`StreamFrom`
    said; the control plane relays it to the bot's stream clients (any replica).
    """

    type: Literal["stream_event"] = "stream_event"
    item: StreamItem


class StreamEnd(_Frame):
    """The agent's stream log is closed: ``last_seq`` was its last event.

    Acked: the agent exits once the control plane has it (and sends it again after a
    reconnect until then).
    """

    type: Literal["stream_end"] = "stream_end"
    last_seq: int = Field(ge=0)


class StreamBatch(_Frame):
    """Answer to :class:`StreamFetch` ``ref_id``: events in ``seq`` order (not acked).

    ``items`` may stop short of the asked range (a size cap); the control plane asks again.
    """

    type: Literal["stream_batch"] = "stream_batch"
    ref_id: str
    items: list[StreamItem]


class StreamFrom(_Frame):
    """Control plane → agent: feed your stream events with ``seq > after`` on this connection.

    Sent after every ``register``; a later one restarts the feed from its ``after``.
    """

    type: Literal["stream_from"] = "stream_from"
    after: int = Field(ge=0)


class StreamFetch(_Frame):
    """Control plane → agent: send the events ``after < seq <= upto`` as a :class:`StreamBatch`.

    Used to replay events older than the control plane keeps in memory; the batch holds at
    most ``max_bytes`` of event data (at least one event).
    """

    type: Literal["stream_fetch"] = "stream_fetch"
    after: int = Field(ge=0)
    upto: int = Field(ge=0)
    max_bytes: int = Field(default=256 * 1024, ge=1)


class Heartbeat(_Frame):
    """Sent every few seconds; a silent agent is marked ``failed``/``agent_lost``."""

    type: Literal["heartbeat"] = "heartbeat"


class MemoryReport(_Frame):
    """The agent's process tree crossed a memory threshold (agent/memory; not stored).

    ``level`` is ``warn`` (above ``MEETBOT_AGENT_MEMORY_WARN_MB``) or ``limit`` (above
    ``MEETBOT_AGENT_MEMORY_LIMIT_MB``: ``relieved`` names what was freed, ``after_mb`` is the
    tree's PSS after that). Sizes are MiB of PSS; ``parts`` splits ``tree_mb`` by process role
    (``agent``, ``driver``, ``browser``, ``renderer``, ``chromium_other``, ``other``).
    """

    type: Literal["memory"] = "memory"
    level: Literal["warn", "limit"]
    tree_mb: float
    parts: dict[str, float]
    warn_mb: float
    limit_mb: float
    relieved: list[str] = Field(default_factory=list)
    after_mb: float | None = None


MAX_ARTIFACT_BYTES = 5 * 1024**3
"""Largest artifact an upload request may announce: S3's limit for one PUT (5 GiB)."""


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


class ArtifactReport(BaseModel):
    """An uploaded artifact reported without the link: ``POST …/agents/{bot_id}/artifacts``.

    For what a bot's machine uploads after its agent has exited (the agent's log), when there
    is no link left to carry an ``artifact`` frame. The control plane stores it once per
    ``artifact_id`` (a resent report is answered the same) and only when ``storage_key`` lies
    under the bot's prefix and holds bytes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ArtifactKind
    artifact_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    storage_key: str = Field(min_length=1, max_length=512)
    content_type: str = Field(min_length=1, max_length=100)
    size_bytes: int = Field(ge=0, le=MAX_ARTIFACT_BYTES)


class UploadRequest(BaseModel):
    """Body of the agent's upload-slot request: what it is about to upload.

    ``name`` is the file name within the bot's artifacts (``[A-Za-z0-9._-]``, e.g.
    ``recording.mp4``); ``content_type`` is sent back in the slot's headers. ``size`` is the
    number of bytes the agent will send: a slot is refused (413) when it passes the control
    plane's ``max_upload_bytes``, and S3 storage signs it as the upload's ``Content-Length``
    (S3 refuses any other length), so S3 slots need it (422 ``size_required`` without).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ArtifactKind
    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    content_type: str = Field(min_length=1, max_length=100)
    size: int | None = Field(default=None, ge=0, le=MAX_ARTIFACT_BYTES)


class CommandName(StrEnum):
    """Names of the commands the control plane sends to an agent (docs/architecture.md §5)."""

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
    ANNOUNCE_ACTION = "announce_action"


MAX_CHAT_CHARS = 4096
MAX_URL_CHARS = 8192


class _Cmd(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StopCommand(_Cmd):
    """Leave the meeting with ``reason`` (``stopped_by_api``); result ``{}``."""

    name: Literal[CommandName.STOP] = CommandName.STOP
    reason: StatusReason = StatusReason.STOPPED_BY_API


class ScreenshotCommand(_Cmd):
    """Capture a PNG and upload it to ``upload`` (kept on the agent's disk without one).

    ``artifact_id`` names it (a fresh UUID when absent).

    Result: ``{artifact_id, storage_key, content_type, size_bytes, width, height, captured_at}``
    (pixels; ISO 8601 UTC) and an ``artifact`` event.
    """

    name: Literal[CommandName.SCREENSHOT] = CommandName.SCREENSHOT
    artifact_id: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$"
    )
    upload: UploadSlot | None = None


class SpeakCommand(_Cmd):
    """Speak ``text`` (with an optional ``voice``) or play ``audio_url``: exactly one source.

    ``speech_id`` names the speech in its ``speak_started`` / ``speak_finished`` stream events
    (a fresh UUID when absent); ``interrupt`` true stops what the bot is saying and drops its
    queue first, false queues the speech after it. Result ``{speech_id, ahead}`` (``ahead``:
    speeches before this one). Error ``voice_agent_disabled`` when the bot's
    ``voice_agent_enabled`` is false.
    """

    name: Literal[CommandName.SPEAK] = CommandName.SPEAK
    speech_id: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$"
    )
    interrupt: bool = False
    text: str | None = Field(default=None, min_length=1, max_length=MAX_CHAT_CHARS)
    voice: str | None = Field(default=None, max_length=100)
    audio_url: str | None = Field(default=None, max_length=MAX_URL_CHARS)

    @model_validator(mode="after")
    def _one_source(self) -> SpeakCommand:
        if (self.text is None) == (self.audio_url is None):
            raise ValueError("give exactly one of text or audio_url")
        return self


class StopSpeakingCommand(_Cmd):
    """Silence the bot at once and drop its queued speeches; result ``{stopped}`` (a count)."""

    name: Literal[CommandName.STOP_SPEAKING] = CommandName.STOP_SPEAKING


class ChatCommand(_Cmd):
    """Post ``text`` (1 to 4096 characters) to the meeting chat; result ``{}``.

    The message comes back as a ``chat_message`` frame with ``from_bot`` true.
    """

    name: Literal[CommandName.CHAT] = CommandName.CHAT
    text: str = Field(min_length=1, max_length=MAX_CHAT_CHARS)


class ScreenShareCommand(_Cmd):
    """Share a page ``url``, an ``image_url`` or a ``video_url``: exactly one."""

    name: Literal[CommandName.SCREEN_SHARE] = CommandName.SCREEN_SHARE
    url: str | None = Field(default=None, max_length=MAX_URL_CHARS)
    image_url: str | None = Field(default=None, max_length=MAX_URL_CHARS)
    video_url: str | None = Field(default=None, max_length=MAX_URL_CHARS)

    @model_validator(mode="after")
    def _one_source(self) -> ScreenShareCommand:
        given = [value for value in (self.url, self.image_url, self.video_url) if value]
        if len(given) != 1:
            raise ValueError("give exactly one of url, image_url or video_url")
        return self


class StopScreenShareCommand(_Cmd):
    """Stop sharing the screen."""

    name: Literal[CommandName.STOP_SCREEN_SHARE] = CommandName.STOP_SCREEN_SHARE


class AvatarCommand(_Cmd):
    """Show ``image_url`` (http(s) or ``data:image/``) on the camera; None resets it.

    The reset target is the bot's ``default_avatar_url``, else the built-in image; result ``{}``.
    """

    name: Literal[CommandName.AVATAR] = CommandName.AVATAR
    image_url: str | None = Field(
        default=None, min_length=1, max_length=MAX_URL_CHARS, pattern=r"^(https?://|data:image/)"
    )


class HandCommand(_Cmd):
    """Raise (``raised`` true) or lower the bot's hand; result ``{raised}``."""

    name: Literal[CommandName.HAND] = CommandName.HAND
    raised: bool = True


class SettingsChange(_Cmd):
    """The settings a PATCH of a launched bot changes; only the given (non-null) fields change.

    The fields are those of docs/api.md Part 1 "Update a bot". An agent applies all of them or none
    (see :class:`UpdateSettingsCommand`).
    """

    bot_name: str | None = Field(default=None, min_length=1, max_length=100)
    language: str | None = Field(default=None, min_length=2, max_length=8)
    recording_enabled: bool | None = None
    transcribe_enabled: bool | None = None
    voice_agent_enabled: bool | None = None
    capture_modes: tuple[CaptureMode, ...] | None = Field(default=None, min_length=1, max_length=2)
    recording_format: RecordingFormat | None = None

    @model_validator(mode="after")
    def _something(self) -> SettingsChange:
        if not self.given():
            raise ValueError("a settings change names at least one field")
        return self

    def given(self) -> dict[str, Any]:
        """The changed fields as ``{name: value}`` (JSON-ready values)."""
        return self.model_dump(mode="json", exclude_none=True)


class UpdateSettingsCommand(_Cmd):
    """Change settings of a running bot: all of ``changes`` or none of them.

    The agent first checks every field against what it is doing (e.g. ``recording_format``
    once recording started, any ``bot_name`` change: no platform renames a bot in a meeting)
    and answers ``setting_not_live`` with the first such ``field`` without applying anything;
    otherwise it applies every field and answers ``{"settings": <every setting now in effect>}``.
    """

    name: Literal[CommandName.UPDATE_SETTINGS] = CommandName.UPDATE_SETTINGS
    changes: SettingsChange


class AnnounceActionCommand(_Cmd):
    """Put an action the control plane detected on the bot's stream; result ``{}``.

    The control plane finds actions in the stored transcript and stores them (docs/api.md
    2.9); the agent only streams them, as ``action_detected`` with these fields (``timestamp``
    ISO 8601 UTC), so the stream's ids stay the agent's.
    """

    name: Literal[CommandName.ANNOUNCE_ACTION] = CommandName.ANNOUNCE_ACTION
    id: str = Field(min_length=1, max_length=64)
    action_type: ActionType
    text: str = Field(min_length=1, max_length=500)
    owner: str | None = Field(default=None, max_length=100)
    due: str | None = Field(default=None, max_length=100)
    segment_ids: list[str] = Field(min_length=1)
    timestamp: datetime


AgentCommand = Annotated[
    StopCommand
    | ScreenshotCommand
    | SpeakCommand
    | StopSpeakingCommand
    | ChatCommand
    | ScreenShareCommand
    | StopScreenShareCommand
    | AvatarCommand
    | HandCommand
    | UpdateSettingsCommand
    | AnnounceActionCommand,
    Field(discriminator="name"),
]
"""Every command with its arguments, told apart by ``name``."""


class Command(_Frame):
    """A command for the agent; its result comes back as :class:`CommandResult` with ``ref_id``.

    Wire shape: ``{"type": "command", "id", "ts", "command": {"name": "chat", "text": "hi"}}``.
    """

    type: Literal["command"] = "command"
    command: AgentCommand

    @property
    def name(self) -> CommandName:
        """The command's name."""
        return self.command.name


class CommandErrorCode(StrEnum):
    """Why an agent did not carry out a command (``CommandResult.error``).

    The control plane maps them to HTTP (docs: docs/api.md 2.5): ``capability_not_supported`` 422,
    ``bot_not_active`` 404 on live routes (409 ``bot_not_updatable`` on PATCH),
    ``setting_not_live`` 409 (with the ``field``), the others 502 ``agent_command_failed``.
    """

    UNKNOWN_COMMAND = "unknown_command"
    """The agent does not know the command's name (an older agent)."""
    INVALID_ARGUMENTS = "invalid_arguments"
    """The arguments do not fit the command's model; ``field`` names the first bad one."""
    CAPABILITY_NOT_SUPPORTED = "capability_not_supported"
    """The platform (or this agent) cannot do it."""
    BOT_NOT_ACTIVE = "bot_not_active"
    """The bot is not in the meeting (yet, or any more)."""
    SETTING_NOT_LIVE = "setting_not_live"
    """``field`` cannot change while the bot runs (or not any more); nothing was applied."""
    UPLOAD_FAILED = "upload_failed"
    """The artifact could not be uploaded."""
    VOICE_AGENT_DISABLED = "voice_agent_disabled"
    """The bot's ``voice_agent_enabled`` is false: it neither speaks, chats nor shares."""
    AVATAR_UNAVAILABLE = "avatar_unavailable"
    """The image could not be fetched, is not an image, is over 5 MiB, or does not decode."""
    SCREEN_SOURCE_UNAVAILABLE = "screen_source_unavailable"
    """A screen-share image or page could not be fetched, loaded or decoded, or is refused."""
    BROWSER_ERROR = "browser_error"
    """The meeting page did not do what was asked."""


class CommandResult(_Frame):
    """Outcome of a :class:`Command`.

    ``ok`` true: ``result`` carries the command's output. ``ok`` false: ``error`` is the code,
    ``field`` the argument or setting it concerns (when one does), ``detail`` a sentence.
    """

    type: Literal["command_result"] = "command_result"
    ref_id: str
    ok: bool
    result: dict[str, Any] = Field(default_factory=dict)
    error: CommandErrorCode | None = None
    field: str | None = None
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
    | MemoryReport
    | CommandResult
    | StreamEvent
    | StreamEnd
    | StreamBatch
    | Ack,
    Field(discriminator="type"),
]
ControlPlaneFrame = Annotated[Command | StreamFrom | StreamFetch | Ack, Field(discriminator="type")]

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


class _CommandEnvelope(_Frame):
    type: Literal["command"] = "command"
    command: dict[str, Any]


_ENVELOPE: TypeAdapter[_CommandEnvelope | Ack] = TypeAdapter(
    Annotated[_CommandEnvelope | Ack, Field(discriminator="type")]
)


def reject_command(raw: str | bytes) -> CommandResult | None:
    """The error answer to a command frame whose command is unknown or invalid.

    Call it when :func:`parse_control_plane_frame` failed: a frame that is a ``command`` with
    an id but an unknown ``name`` gets ``unknown_command``, one with bad arguments
    ``invalid_arguments`` (``field`` = the first bad argument). None when the frame is not
    even a command envelope (nobody to answer).
    """
    try:
        frame = _ENVELOPE.validate_json(raw)
    except ValidationError:
        return None
    if not isinstance(frame, _CommandEnvelope):
        return None
    name = frame.command.get("name")
    if name not in {item.value for item in CommandName}:
        return CommandResult(
            ref_id=frame.id,
            ok=False,
            error=CommandErrorCode.UNKNOWN_COMMAND,
            detail=f"unknown command {str(name)[:64]!r}",
        )
    try:
        _COMMAND.validate_python(frame.command)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(part) for part in first["loc"][1:]]
        return CommandResult(
            ref_id=frame.id,
            ok=False,
            error=CommandErrorCode.INVALID_ARGUMENTS,
            field=".".join(loc) or None,
            detail=f"{name}: {first['msg']}",
        )
    return None


_COMMAND: TypeAdapter[AgentCommand] = TypeAdapter(AgentCommand)
