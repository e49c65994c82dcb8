"""The bot record of a meeting row (shared by the bot and meeting routes)."""

from __future__ import annotations

from agent.contracts.bot_config import BotSettings, Platform
from agent.contracts.status import BotStatus
from control_plane.db.models.bot import Meeting
from control_plane.records.schemas import BotRecord, MeetingData


def to_record(
    meeting: Meeting, *, at_creation: bool = False, recording_url: str | None = None
) -> BotRecord:
    """The bot record of a row (``data`` null in the creation response, per Part 1)."""
    return BotRecord(
        id=meeting.id,
        bot_id=meeting.bot_id,
        platform=Platform(meeting.platform),
        native_meeting_id=meeting.native_meeting_id,
        constructed_meeting_url=meeting.constructed_meeting_url,
        status=BotStatus(meeting.status),
        status_reason=meeting.status_reason,
        status_detail=meeting.status_detail,
        bot_container_id=meeting.bot_container_id,
        start_time=meeting.start_time,
        end_time=meeting.end_time,
        data=None
        if at_creation
        else MeetingData(name=meeting.name, participants=list(meeting.participants or [])),
        recording_url=recording_url,
        ws_url=None,
        ws_token=None,
        scheduled_at=meeting.scheduled_start_at,
        settings=BotSettings.model_validate(meeting.settings),
        created_at=meeting.created_at,
        updated_at=meeting.updated_at,
    )
