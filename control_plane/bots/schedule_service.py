"""What the scheduled-bot routes do after creation: render, update and cancel an entry.

An entry is a meeting row with status ``scheduled`` and a schedule (docs/api.md 2.4); creating
one is :meth:`control_plane.bots.service.BotService.create_meeting`'s, launching it the
scheduler's (:mod:`control_plane.bots.scheduler`). Once the scheduler has claimed it for launch,
the entry is gone for these routes (404 ``scheduled_bot_not_found``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotSettings, Platform
from agent.contracts.status import BotStatus, StatusReason
from control_plane.auth.context import AuthContext
from control_plane.bots.schemas import ScheduledBot, ScheduledBotUpdate
from control_plane.bots.service import meeting_reference, merged_settings, start_in_past
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import Database
from control_plane.db.models.bot import Meeting
from control_plane.errors import NotFound
from control_plane.hooks import StatusHook
from control_plane.settings import Settings


def scheduled_bot_not_found() -> NotFound:
    """404 ``scheduled_bot_not_found`` (also: launched or cancelled already)."""
    return NotFound(
        "no scheduled bot with this id (it may have launched or been cancelled)",
        code="scheduled_bot_not_found",
    )


def to_scheduled(meeting: Meeting) -> ScheduledBot:
    """The scheduled entry of a row that has a schedule.

    Raises:
        ValueError: The row has no ``scheduled_start_at`` or ``launch_at``.
    """
    if meeting.scheduled_start_at is None or meeting.launch_at is None:
        raise ValueError("meeting has no schedule")
    return ScheduledBot(
        id=meeting.id,
        bot_id=meeting.bot_id,
        platform=Platform(meeting.platform),
        native_meeting_id=meeting.native_meeting_id,
        meeting_url=meeting.constructed_meeting_url,
        status=BotStatus(meeting.status),
        scheduled_start_at=meeting.scheduled_start_at,
        join_offset_seconds=meeting.join_offset_seconds,
        launch_at=meeting.launch_at,
        settings=BotSettings.model_validate(meeting.settings),
        created_at=meeting.created_at,
        updated_at=meeting.updated_at,
    )


async def _find_scheduled(session: AsyncSession, auth: AuthContext, meeting_id: int) -> Meeting:
    meeting = await lock_meeting(session, meeting_id=meeting_id)
    if (
        meeting is None
        or meeting.workspace_id != auth.workspace_id
        or meeting.status != BotStatus.SCHEDULED.value
        or meeting.launch_claimed_at is not None
    ):
        raise scheduled_bot_not_found()
    return meeting


@dataclass
class ScheduleService:
    """Update and cancel scheduled entries; built once per app with its dependencies.

    Args:
        database: Where the bots live.
        settings: The process's settings (meeting hosts, the options a bot can serve).
        status_hooks: In-transaction status hooks (the app's live list).
    """

    database: Database
    settings: Settings
    status_hooks: Sequence[StatusHook] = ()

    async def update_scheduled(
        self, auth: AuthContext, meeting_id: int, update: ScheduledBotUpdate
    ) -> ScheduledBot:
        """``PATCH /api/v1/bots/schedule/{id}``: only given fields change; ``launch_at`` follows.

        Raises:
            NotFound: 404 when absent, another workspace's, launched or cancelled.
            Validation: 400 ``scheduled_start_in_past``; 400/422 for a bad ``meeting_url``.
        """
        now = datetime.now(UTC)
        async with self.database.sessions.begin() as session:
            meeting = await _find_scheduled(session, auth, meeting_id)
            given = update.model_fields_set
            if "scheduled_start_at" in given and update.scheduled_start_at is not None:
                if update.scheduled_start_at <= now:
                    raise start_in_past()
                meeting.scheduled_start_at = update.scheduled_start_at
            if "join_offset_seconds" in given and update.join_offset_seconds is not None:
                meeting.join_offset_seconds = update.join_offset_seconds
            if "meeting_url" in given and update.meeting_url is not None:
                ref = meeting_reference(
                    Platform(meeting.platform),
                    meeting_url=update.meeting_url,
                    native_meeting_id=None,
                    passcode=None,
                    extra_hosts=self.settings.extra_meeting_hosts,
                )
                meeting.native_meeting_id = ref.native_meeting_id
                meeting.constructed_meeting_url = ref.constructed_meeting_url
                meeting.passcode = ref.passcode or meeting.passcode
            if meeting.scheduled_start_at is not None:
                meeting.launch_at = meeting.scheduled_start_at + timedelta(
                    seconds=meeting.join_offset_seconds
                )
            meeting.settings = merged_settings(self.settings, meeting, update)
            meeting.updated_at = now
            return to_scheduled(meeting)

    async def cancel_scheduled(self, auth: AuthContext, meeting_id: int) -> None:
        """``DELETE /api/v1/bots/schedule/{id}``: ``scheduled → cancelled``; the bot never launches.

        Raises:
            NotFound: 404 when absent, another workspace's, launched or cancelled.
        """
        hooks = self.status_hooks
        async with self.database.sessions.begin() as session:
            meeting = await _find_scheduled(session, auth, meeting_id)
            await change_status(
                session, meeting, BotStatus.CANCELLED, StatusReason.CANCELLED_BY_API, hooks=hooks
            )


SCHEDULE_SERVICE = web.AppKey("schedule_service", ScheduleService)
"""The application's :class:`ScheduleService` (the scheduled-bot route handlers call it)."""
