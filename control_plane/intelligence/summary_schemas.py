"""The meeting summary as the API, the webhook and the stream show it (docs/api.md 2.14)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from control_plane.timestamps import UtcDateTime


class SummaryStatus(StrEnum):
    """Where a meeting's summary stands: ``pending`` until ``ready`` or ``failed``."""

    PENDING = "pending"
    READY = "ready"
    FAILED = "failed"


class SummaryDecision(BaseModel):
    """Something the group settled, with the segments that say so."""

    text: str = Field(description="The decision in a short sentence (1 to 500 characters).")
    segment_ids: list[str] = Field(
        description="Ids of the transcript segments it rests on (never empty)."
    )


class SummaryActionItem(BaseModel):
    """A task someone will do; owner and due only as the cited segments say them."""

    text: str = Field(description="The task in a short sentence (1 to 500 characters).")
    owner: str | None = Field(
        description="Who takes it, as said in the cited segments; else null (up to 100 characters)."
    )
    due: str | None = Field(
        description="When it is due, in the words of the cited segments; else null (up to 100 "
        "characters)."
    )
    segment_ids: list[str] = Field(
        description="Ids of the transcript segments it rests on (never empty)."
    )


class MeetingSummaryOut(BaseModel):
    """``GET /api/v1/meetings/{meeting_id}/summary`` and the full record's ``summary``.

    ``summary``, ``decisions`` and ``action_items`` are null until ``status`` is ``ready``.
    """

    status: SummaryStatus
    summary: str | None = Field(
        description="A short summary of the whole meeting (up to 2000 characters); empty for a "
        "meeting without transcript."
    )
    decisions: list[SummaryDecision] | None
    action_items: list[SummaryActionItem] | None
    model: str | None = Field(description="`provider/model` that wrote it.")
    error: str | None = Field(description="Why it failed (`failed` only); else null.")
    created_at: UtcDateTime = Field(description="When the meeting became final.")
    ready_at: UtcDateTime | None = Field(description="When it was written; null until ready.")
