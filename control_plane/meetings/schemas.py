"""Models of the meeting routes (docs/api.md Part 1 "Meetings" and 2.6)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.contracts.bot_config import Platform
from agent.contracts.status import BotStatus
from control_plane.records.schemas import BotRecord, MeetingData
from control_plane.timestamps import UtcDateTime


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
