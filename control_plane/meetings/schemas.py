"""Models of the meeting routes (docs/api.md Part 1 "Meetings" and 2.6)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.contracts.bot_config import Platform
from agent.contracts.status import BotStatus
from control_plane.intelligence.summary_schemas import MeetingSummaryOut
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


class ActionOut(BaseModel):
    """An action found by live action detection (docs/api.md 2.9).

    The same shape as the ``action_detected`` stream event and the ``action.detected``
    webhook's ``data`` (without ``bot_id``/``meeting_id``).
    """

    id: str = Field(description="Stable id of the action.")
    type: Literal["action_item", "decision", "question", "follow_up"]
    text: str = Field(description="The action in a short sentence.")
    owner: str | None = Field(description="Who takes it, when said in the meeting; else null.")
    due: str | None = Field(description="When it is due, as said (e.g. `Friday`); else null.")
    segment_ids: list[str] = Field(description="Ids of the transcript segments it rests on.")
    timestamp: UtcDateTime = Field(description="When the control plane stored it.")


class ActionList(BaseModel):
    """``GET /api/v1/meetings/{meeting_id}/actions``: oldest first."""

    actions: list[ActionOut]


class ActionQuery(BaseModel):
    """``limit`` 1–200 (default 50), ``offset`` ≥ 0."""

    model_config = ConfigDict(extra="ignore")

    limit: int = Field(default=50, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=2**31 - 1)


class AgentLog(BaseModel):
    """The log of the bot's agent, uploaded by its machine when the agent exited (1 hour URL).

    On a VM (the ``qemu`` launcher) it is the journal of the agent's unit, plain UTF-8 text;
    bots of the ``local`` launcher upload none.
    """

    id: str
    content_type: str
    size_bytes: int
    created_at: UtcDateTime
    url: str
    expires_at: UtcDateTime


class MeetingRecord(BotRecord):
    """The full meeting record: the bot record plus artifacts, transcript summary, actions."""

    recordings: list[Recording]
    screenshots: list[Screenshot]
    logs: list[AgentLog] = Field(
        description="The agent's logs its bot machine uploaded when the agent exited, oldest first."
    )
    transcript: TranscriptSummary
    actions: list[ActionOut] = Field(
        description="Every action live action detection found, oldest first (docs/api.md 2.9)."
    )
    summary: MeetingSummaryOut | None = Field(
        description="The whole meeting's summary (docs/api.md 2.14): pending from when a bot "
        "with enable_actions ends until ready or failed; null with enable_actions false, "
        "before the end and after purge."
    )
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
