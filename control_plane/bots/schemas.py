"""Request and response models of the bot and scheduled-bot routes (docs/api.md 2.3, 2.4)."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agent.contracts.bot_config import (
    ADMISSION_TIMEOUT_S,
    LEFT_ALONE_TIMEOUT_S,
    MAX_MEETING_DURATION_S,
    STARTUP_ALONE_TIMEOUT_S,
    BotSettings,
    CaptureMode,
    Platform,
    RecordingFormat,
    Task,
    TranscriptionTier,
)
from agent.contracts.status import BotStatus
from agent.contracts.whisper_models import WHISPER_LANGUAGES
from control_plane.bots.live_schemas import MEDIA_URL_PATTERN
from control_plane.records.schemas import BotRecord
from control_plane.timestamps import UtcDateTime

JOIN_OFFSET_S = (-3600, 3600)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


LanguageCode = Annotated[
    str,
    Field(
        min_length=2,
        max_length=8,
        json_schema_extra={"enum": list(WHISPER_LANGUAGES)},
        description=(
            "A Whisper language code, lower case (the 99 the bundled multilingual model "
            "transcribes); any other, or one the configured models cannot serve, is 422 "
            "language_not_supported (docs/api.md 2.3)."
        ),
    ),
]
"""A transcription language as the API accepts it: the enum of the document, checked again at
creation against the models (:func:`control_plane.bots.transcription.check_transcription`)."""

AvatarUrl = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2048,
        pattern=MEDIA_URL_PATTERN,
        description=(
            "http(s):// URL or data:image/ URL of the camera image. An http(s) URL must pass "
            "the webhook address rules (docs/api.md 2.8), else 422 url_not_allowed; the bot "
            "fetches it when it starts (at most 5 MiB, an image)."
        ),
    ),
]


CaptureModes = Annotated[
    list[CaptureMode],
    # The document states what the service refuses (422 capture_needs_audio,
    # agent.contracts.capture_options): a list without audio.
    Field(min_length=1, max_length=2, json_schema_extra={"contains": {"const": "audio"}}),
]


class _EditableOptions(_Body):
    """Options a bot's owner may change before it joins (PATCH of bots and scheduled bots)."""

    bot_name: str | None = Field(default=None, min_length=1, max_length=100)
    language: LanguageCode | None = None
    recording_enabled: bool | None = None
    transcribe_enabled: bool | None = None
    voice_agent_enabled: bool | None = None
    capture_modes: CaptureModes | None = Field(
        default=None,
        description=(
            "Must include audio (422 capture_needs_audio); video needs recording_enabled "
            "(422 video_needs_recording) and a format other than mp3 (422 format_has_no_video)."
        ),
    )
    recording_format: RecordingFormat | None = None


class _LaunchOptions(_EditableOptions):
    """Every launch option of ``POST /api/v1/bots`` except the meeting and the schedule.

    Omitted options take the defaults of :class:`BotSettings` (``recording_enabled`` and
    ``transcribe_enabled``: the workspace's settings).
    """

    # The document states the rule the service enforces (issue 18): at least one of the two.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["meeting_url"], "properties": {"meeting_url": {"type": "string"}}},
                {
                    "required": ["native_meeting_id"],
                    "properties": {"native_meeting_id": {"type": "string"}},
                },
            ]
        }
    )

    platform: Platform
    meeting_url: str | None = Field(
        default=None,
        min_length=1,
        max_length=2048,
        description=(
            "https:// URL on the platform's own host (meet.google.com; zoom.us or *.zoom.us; "
            "teams.live.com or teams.microsoft.com), in lower case and printable ASCII as the "
            "pattern of the platform's oneOf branch states, else 422 malformed_meeting_url (400 "
            "invalid_meeting_id when only its id breaks the rule); with native_meeting_id both "
            "must agree (400 invalid_meeting_id). One of the two is required (400 "
            "missing_meeting_reference)."
        ),
    )
    native_meeting_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description=(
            "google_meet: abc-defg-hij; zoom: 9 to 11 digits; teams: 10 to 15 digits, ASCII "
            "0-9 only (the pattern of the platform's oneOf branch; else 400 invalid_meeting_id)."
        ),
    )
    task: Task | None = None
    transcription_tier: TranscriptionTier | None = None
    default_avatar_url: AvatarUrl | None = None
    enable_actions: bool | None = None
    prompt_version_id: str | None = Field(default=None, min_length=1, max_length=64)
    passcode: str | None = Field(default=None, min_length=1, max_length=256)
    zoom_obf_token: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description=(
            "One-time on-behalf-of token for zoom; when omitted, one is minted at launch from the "
            "user's stored Zoom connection (neither: 400 zoom_token_required). It reaches the "
            "bot in its configuration and is stored only sealed, never in plain text "
            "(docs/api.md 2.3)."
        ),
    )
    zoom_connection_id: int | None = Field(
        default=None,
        ge=1,
        le=2**31 - 1,  # INTEGER id
        description=(
            "1 to 2147483647: the stored Zoom connection a zoom bot's OBF token is minted from "
            "at launch; it must be one of the workspace's, else 400 zoom_token_required "
            "(omitted: the caller's newest). Ignored when zoom_obf_token is given."
        ),
    )
    left_alone_timeout_seconds: int | None = Field(
        default=None, ge=LEFT_ALONE_TIMEOUT_S[0], le=LEFT_ALONE_TIMEOUT_S[1]
    )
    startup_alone_timeout_seconds: int | None = Field(
        default=None, ge=STARTUP_ALONE_TIMEOUT_S[0], le=STARTUP_ALONE_TIMEOUT_S[1]
    )
    admission_timeout_seconds: int | None = Field(
        default=None, ge=ADMISSION_TIMEOUT_S[0], le=ADMISSION_TIMEOUT_S[1]
    )
    max_meeting_duration_seconds: int | None = Field(
        default=None,
        ge=MAX_MEETING_DURATION_S[0],
        le=MAX_MEETING_DURATION_S[1],
        description="Hard cap on the bot's time in the meeting (from admission), in seconds; "
        "the bot then leaves with `max_duration`. Default: the workspace's setting, else "
        f"{MAX_MEETING_DURATION_S[2]}.",
    )


class BotCreate(_LaunchOptions):
    """Body of ``POST /api/v1/bots``; a future ``scheduled_at`` schedules instead of launching."""

    scheduled_at: UtcDateTime | None = None


class ScheduledBotCreate(_LaunchOptions):
    """Body of ``POST /api/v1/bots/schedule``.

    The bot launches at ``scheduled_start_at + join_offset_seconds`` (seconds, −3600 to 3600).
    """

    scheduled_start_at: UtcDateTime = Field(
        description="Must be in the future (400 scheduled_start_in_past)."
    )
    join_offset_seconds: int = Field(default=0, ge=JOIN_OFFSET_S[0], le=JOIN_OFFSET_S[1])


class BotUpdate(_EditableOptions):
    """Body of ``PATCH /api/v1/bots/{bot_id}``: only given fields change."""


class ScheduledBotUpdate(_EditableOptions):
    """Body of ``PATCH /api/v1/bots/schedule/{bot_id}``: only given fields change."""

    meeting_url: str | None = Field(
        default=None,
        min_length=1,
        max_length=2048,
        description=(
            "A URL of the bot's own platform (the pattern is every platform's; another "
            "platform's URL is 422 malformed_meeting_url, a bad id 400 invalid_meeting_id)."
        ),
    )
    scheduled_start_at: UtcDateTime | None = None
    join_offset_seconds: int | None = Field(default=None, ge=JOIN_OFFSET_S[0], le=JOIN_OFFSET_S[1])


class BotList(BaseModel):
    """``GET /api/v1/bots``: newest first."""

    bots: list[BotRecord]


class ScheduledBot(BaseModel):
    """A scheduled entry (docs/api.md 2.4); ``id`` is the meeting id."""

    id: int
    bot_id: uuid.UUID
    platform: Platform
    native_meeting_id: str
    meeting_url: str
    status: BotStatus
    scheduled_start_at: UtcDateTime
    join_offset_seconds: int
    launch_at: UtcDateTime
    settings: BotSettings
    created_at: UtcDateTime
    updated_at: UtcDateTime


class ScheduledBotList(BaseModel):
    """``GET /api/v1/bots/schedule``: entries with status ``scheduled``, newest first."""

    scheduled_bots: list[ScheduledBot]
