"""The bot record and what both the bots and the meetings routes share (docs/api.md 2.3, 2.6).

:class:`BotRecord` is the ``MeetingResponse`` of every bot route and the base of the full
meeting record; :class:`MeetingQuery` is the list query of ``GET /api/v1/meetings`` and
``GET /api/v1/bots``.
"""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict, Field

from agent.contracts.bot_config import BotSettings, Platform
from agent.contracts.status import BotStatus, StatusReason
from control_plane.timestamps import UtcDateTime


class MeetingQuery(BaseModel):
    """Query of ``GET /api/v1/meetings`` and ``GET /api/v1/bots``.

    ``date_from``/``date_to`` are ISO 8601 bounds on ``created_at`` (inclusive; naive = UTC);
    a malformed one answers 400 ``invalid_date``.
    """

    model_config = ConfigDict(extra="ignore")

    meeting_id: int | None = Field(default=None, ge=1, le=2**31 - 1)  # INTEGER column
    bot_id: uuid.UUID | None = None
    name: str | None = Field(default=None, max_length=300)
    status: BotStatus | None = None
    date_from: str | None = Field(
        default=None,
        max_length=64,
        description="ISO 8601 timestamp, 0002-01-01 to 9997-12-31 UTC (else 400 invalid_date).",
        json_schema_extra={"format": "date-time"},
    )
    date_to: str | None = Field(
        default=None,
        max_length=64,
        description="ISO 8601 timestamp, 0002-01-01 to 9997-12-31 UTC (else 400 invalid_date).",
        json_schema_extra={"format": "date-time"},
    )
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=2**31 - 1)


class MeetingData(BaseModel):
    """``data`` of a bot/meeting: its name and the current participant names."""

    name: str | None
    participants: list[str]


class BotRecord(BaseModel):
    """The bot record (``MeetingResponse``, docs/api.md Part 1 + 2.3).

    ``data`` is null in the creation response and an object everywhere else; ``ws_url`` and
    ``ws_token`` stay null (the stream is reached through ``subscribe``).
    """

    id: int
    bot_id: uuid.UUID
    platform: Platform
    native_meeting_id: str
    constructed_meeting_url: str
    status: BotStatus
    status_reason: str | None = Field(
        description="Why the bot is in its status (open-ended; docs/api.md 2.3). Codes today: "
        + ", ".join(f"`{reason.value}`" for reason in StatusReason)
        + "."
    )
    status_detail: str | None = Field(
        default=None,
        description="Human-readable words on the status when there are any: for "
        "`launch_failed`, why the launcher could not start the bot (a cloud provider's error "
        "code and message, e.g. `InsufficientInstanceCapacity: …`); null otherwise. Cleared by "
        "the next status change (docs/api.md 2.3).",
    )
    bot_container_id: str | None
    start_time: UtcDateTime | None
    end_time: UtcDateTime | None
    data: MeetingData | None
    recording_url: str | None
    ws_url: str | None
    ws_token: str | None
    scheduled_at: UtcDateTime | None
    settings: BotSettings
    created_at: UtcDateTime
    updated_at: UtcDateTime


class Message(BaseModel):
    """``{message}`` answers (cancel, purge)."""

    message: str
