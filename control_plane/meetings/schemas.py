"""Models of the meeting routes (API.md Part 1 "Meetings" and 2.6)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.contracts.bot_config import Platform
from agent.contracts.status import BotStatus
from control_plane.api.timestamps import UtcDateTime
from control_plane.bots.schemas import BotRecord, MeetingData


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
    date_from: str | None = Field(default=None, max_length=64)
    date_to: str | None = Field(default=None, max_length=64)
    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=2**31 - 1)


class MeetingListItem(BaseModel):
    """An element of ``meetings`` in the list response."""

    id: int
    bot_id: uuid.UUID
    platform: Platform
    status: BotStatus
    data: MeetingData
    created_at: UtcDateTime
    updated_at: UtcDateTime


class MeetingList(BaseModel):
    """``GET /api/v1/meetings``: newest first."""

    meetings: list[MeetingListItem]


class Recording(BaseModel):
    """A recording of the meeting with a presigned URL (valid 1 hour)."""

    id: str
    format: str | None
    content_type: str
    duration_s: float | None
    size_bytes: int
    created_at: UtcDateTime
    url: str
    expires_at: UtcDateTime


class Screenshot(BaseModel):
    """A screenshot of the bot's view with a presigned URL (valid 1 hour)."""

    id: str
    captured_at: UtcDateTime | None
    url: str
    expires_at: UtcDateTime


class TranscriptSummary(BaseModel):
    """What the transcript holds: segment count, languages seen, tier, and whether it is final."""

    segment_count: int
    languages: list[str]
    tier: Literal["realtime", "deferred"]
    ready: bool


class MeetingRecord(BotRecord):
    """The full meeting record: the bot record plus artifacts and transcript summary."""

    recordings: list[Recording]
    screenshots: list[Screenshot]
    transcript: TranscriptSummary
    redacted: bool


class SegmentOut(BaseModel):
    """A transcript segment; ``start``/``end`` are seconds from when the bot joined."""

    id: str
    start: float
    end: float
    absolute_start_time: UtcDateTime
    absolute_end_time: UtcDateTime
    text: str
    speaker: str | None
    language: str | None
    completed: bool
    tier: Literal["realtime", "deferred"]


class Transcript(BaseModel):
    """``GET /api/v1/meetings/{meeting_id}/transcript?format=json``."""

    segments: list[SegmentOut]


class TranscriptQuery(BaseModel):
    """``format``: ``json`` (default), ``txt``, ``srt`` or ``vtt``."""

    model_config = ConfigDict(extra="ignore")

    format: Literal["json", "txt", "srt", "vtt"] = "json"
