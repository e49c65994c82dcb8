"""What a bot is told when it starts: the meeting, every launch option, and how to reach home.

The control plane validates launch options against :class:`BotSettings` (docs/api.md Part 1
"Launch a bot" and its Limits table) and hands the agent a :class:`BotConfig`
(docs/architecture.md §2 step 1).
"""

from __future__ import annotations

from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from agent.contracts.agent_settings import HandedOverSettings


class Platform(StrEnum):
    """Meeting platforms a bot can join."""

    GOOGLE_MEET = "google_meet"
    ZOOM = "zoom"
    TEAMS = "teams"


class Task(StrEnum):
    """Whisper task: keep the spoken language, or translate to English."""

    TRANSCRIBE = "transcribe"
    TRANSLATE = "translate"


class TranscriptionTier(StrEnum):
    """``realtime``: segments about 1 s after speech ends; ``deferred``: after the meeting."""

    REALTIME = "realtime"
    DEFERRED = "deferred"


class CaptureMode(StrEnum):
    """What the bot captures besides the transcript."""

    AUDIO = "audio"
    VIDEO = "video"


class RecordingFormat(StrEnum):
    """Container of the main recording."""

    MP4 = "mp4"
    MP3 = "mp3"
    WEBM = "webm"


# Limits of docs/api.md Part 1 ("Limits"): (minimum, maximum, default) in seconds.
LEFT_ALONE_TIMEOUT_S = (10, 3600, 10)
STARTUP_ALONE_TIMEOUT_S = (60, 7200, 1200)
ADMISSION_TIMEOUT_S = (30, 600, 300)
# Part 2 (docs/api.md 2.3): the hard cap on a bot's time in a meeting, from admission.
MAX_MEETING_DURATION_S = (60, 86400, 14400)


class BotSettings(BaseModel):
    """Every per-bot option in effect, defaults filled in (the bot record's ``settings``).

    Timeouts are whole seconds within the API's limits.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    bot_name: str = Field(default="meetbot", min_length=1, max_length=100)
    language: str | None = Field(default=None, min_length=2, max_length=8)
    task: Task = Task.TRANSCRIBE
    transcription_tier: TranscriptionTier = TranscriptionTier.REALTIME
    recording_enabled: bool = False
    transcribe_enabled: bool = True
    capture_modes: tuple[CaptureMode, ...] = (CaptureMode.AUDIO,)
    recording_format: RecordingFormat = RecordingFormat.MP4
    voice_agent_enabled: bool = True
    default_avatar_url: str | None = None
    enable_actions: bool = False
    prompt_version_id: str | None = None
    left_alone_timeout_seconds: int = Field(
        default=LEFT_ALONE_TIMEOUT_S[2], ge=LEFT_ALONE_TIMEOUT_S[0], le=LEFT_ALONE_TIMEOUT_S[1]
    )
    startup_alone_timeout_seconds: int = Field(
        default=STARTUP_ALONE_TIMEOUT_S[2],
        ge=STARTUP_ALONE_TIMEOUT_S[0],
        le=STARTUP_ALONE_TIMEOUT_S[1],
    )
    admission_timeout_seconds: int = Field(
        default=ADMISSION_TIMEOUT_S[2], ge=ADMISSION_TIMEOUT_S[0], le=ADMISSION_TIMEOUT_S[1]
    )
    max_meeting_duration_seconds: int = Field(
        default=MAX_MEETING_DURATION_S[2],
        ge=MAX_MEETING_DURATION_S[0],
        le=MAX_MEETING_DURATION_S[1],
    )


class BotConfig(BaseModel):
    """Everything an agent needs to run one bot; written as JSON by the launcher.

    Attributes:
        bot_id: The bot's public UUID.
        workspace_id: The bot's workspace (cloud launchers tag its machine with it).
        meeting_id: The control plane's integer meeting id.
        platform: Which adapter joins.
        meeting_url: The URL the browser opens (``constructed_meeting_url``).
        native_meeting_id: Platform meeting id.
        passcode: Meeting passcode, if any.
        zoom_obf_token: One-time Zoom on-behalf-of token, if any.
        settings: Options in effect.
        control_plane_url: Base URL of the control plane (``http://host:port``); the agent link
            is ``{control_plane_url}/internal/v1/agents/{bot_id}`` as a WebSocket.
        agent_token: Bearer token of this bot's agent link.
        transcription_model: Whisper model of the realtime tier (a registry name of
            ``agent.contracts.whisper_models`` or a local CTranslate2 directory); None leaves
            the choice to the agent host's ``MEETBOT_AGENT_TRANSCRIBE_MODEL``.
        deferred_transcription_model: Model of the deferred pass; None picks one by language.
        refine_after_meeting: The realtime tier also runs the deferred pass after the meeting
            and replaces its segments (``MEETBOT_REFINE_AFTER_MEETING``).
        agent_settings: Agent host settings the control plane hands the bot's machine in the
            bootstrap exchange (``MEETBOT_AGENT_*`` name → value as in the environment;
            :mod:`agent.contracts.agent_settings`); they win over the machine's environment.
            The local launcher writes them (and the secret ones of its environment) into the
            agent's private config file.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    bot_id: UUID
    workspace_id: UUID | None = None
    meeting_id: int
    platform: Platform
    meeting_url: str
    native_meeting_id: str
    passcode: str | None = None
    zoom_obf_token: str | None = None
    settings: BotSettings = BotSettings()
    control_plane_url: str | None = None
    agent_token: str | None = None
    transcription_model: str | None = None
    deferred_transcription_model: str | None = None
    refine_after_meeting: bool = False
    agent_settings: HandedOverSettings = Field(default_factory=dict)
