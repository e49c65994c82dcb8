"""What the bot routes do: create (immediate or scheduled), read, update, stop.

Updating and cancelling a scheduled entry is :mod:`control_plane.bots.schedule_service`'s.

Launching itself is the scheduler's job (:mod:`control_plane.bots.scheduler`): creation stores
the row (``requested`` with ``launch_at`` = now, or ``scheduled``) and wakes the scheduler, which
claims it exactly once and hands it to the launcher. That keeps ``POST /api/v1/bots`` fast,
makes its response the record *at creation* (Part 1: ``bot_container_id`` null), and lets a
launch interrupted by a crash be found again by the scheduler's reaper.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotSettings, Platform
from agent.contracts.link import AgentCommand, Command, StopCommand
from agent.contracts.meeting_urls import (
    InvalidMeetingId,
    MalformedMeetingUrl,
    MeetingReference,
    MeetingReferenceError,
    MissingMeetingReference,
    resolve_meeting,
)
from agent.contracts.status import (
    FINAL_STATUSES,
    UPDATABLE_STATUSES,
    BotStatus,
    StatusReason,
)
from control_plane.action_prompts.service import version_of_workspace
from control_plane.agent_hub.errors import AgentUnavailable
from control_plane.auth.context import AuthContext
from control_plane.bots.launch_checks import check_bot_options
from control_plane.bots.live_commands import LiveCommands
from control_plane.bots.live_settings import (
    apply_live,
    is_launched,
    not_updatable,
    settings_change,
)
from control_plane.bots.schemas import (
    BotCreate,
    BotUpdate,
    ScheduledBotCreate,
    ScheduledBotUpdate,
)
from control_plane.bots.status import change_status, lock_meeting, record_creation
from control_plane.db.engine import Database
from control_plane.db.models.bot import Meeting
from control_plane.db.models.workspace import Workspace
from control_plane.errors import Conflict, ErrorItem, NotFound, Validation
from control_plane.hooks import AgentCommander, RecordingUrl, StatusHook, ZoomTokenSource
from control_plane.launchers.base import BotLauncher, LaunchHandle
from control_plane.records.render import to_record
from control_plane.records.schemas import BotRecord
from control_plane.settings import Settings

log = logging.getLogger(__name__)


# Launch options copied from a request into BotSettings when given.
_SETTING_FIELDS = tuple(BotSettings.model_fields)


def bot_not_found() -> NotFound:
    """404 ``bot_not_found``."""
    return NotFound("no such bot in this workspace", code="bot_not_found")


def meeting_reference(
    platform: Platform,
    *,
    meeting_url: str | None,
    native_meeting_id: str | None,
    passcode: str | None,
    extra_hosts: Sequence[str],
) -> MeetingReference:
    """Resolve the meeting, mapping errors to the API's: 400 missing/invalid id, 422 bad URL."""
    try:
        return resolve_meeting(
            platform,
            meeting_url=meeting_url,
            native_meeting_id=native_meeting_id,
            passcode=passcode,
            extra_hosts=extra_hosts,
        )
    except MissingMeetingReference as exc:
        raise Validation(str(exc), status=400, code=exc.code) from exc
    except InvalidMeetingId as exc:
        field = "native_meeting_id" if native_meeting_id else "meeting_url"
        raise Validation.of_field(field, str(exc), code=exc.code, status=400) from exc
    except MalformedMeetingUrl as exc:
        raise Validation.of_field("meeting_url", str(exc), code=exc.code) from exc
    except MeetingReferenceError as exc:  # a future subclass: treat as a bad request
        raise Validation(str(exc), status=400, code=exc.code) from exc


def _settings_from(body: BotCreate | ScheduledBotCreate, workspace: Workspace) -> BotSettings:
    given: dict[str, Any] = {
        name: getattr(body, name)
        for name in _SETTING_FIELDS
        if name in type(body).model_fields and getattr(body, name) is not None
    }
    given.setdefault("recording_enabled", workspace.recording_enabled)
    given.setdefault("transcribe_enabled", workspace.transcribe_enabled)
    if workspace.max_meeting_duration_seconds is not None:
        given.setdefault("max_meeting_duration_seconds", workspace.max_meeting_duration_seconds)
    if workspace.default_prompt_version_id is not None:
        given.setdefault("prompt_version_id", workspace.default_prompt_version_id)
    return BotSettings.model_validate(given)


def merged_settings(
    settings: Settings, meeting: Meeting, update: BotUpdate | ScheduledBotUpdate
) -> dict[str, Any]:
    """``meeting``'s stored settings with the options ``update`` gives, as stored (JSON).

    Raises:
        Validation: 422 for options the bot cannot serve
            (:func:`~control_plane.bots.launch_checks.check_bot_options`).
    """
    merged = dict(meeting.settings)
    merged.update(
        {
            name: getattr(update, name)
            for name in update.model_fields_set
            if name in _SETTING_FIELDS and getattr(update, name) is not None
        }
    )
    bot_settings = BotSettings.model_validate(merged)
    check_bot_options(settings, bot_settings, update.model_fields_set)
    return bot_settings.model_dump(mode="json")


def start_in_past() -> Validation:
    """400 ``scheduled_start_in_past``."""
    return Validation(
        "scheduled_start_at must be in the future",
        status=400,
        code="scheduled_start_in_past",
        errors=[
            ErrorItem(loc=["body", "scheduled_start_at"], msg="must be in the future", type="past")
        ],
    )


async def _lock_bot(session: AsyncSession, auth: AuthContext, bot_id: uuid.UUID) -> Meeting:
    meeting = await lock_meeting(session, bot_id=bot_id)
    if meeting is None or meeting.workspace_id != auth.workspace_id:
        raise bot_not_found()
    return meeting


async def find_bot(
    session: AsyncSession, workspace_id: uuid.UUID | None, bot_id: uuid.UUID
) -> Meeting:
    """The bot ``bot_id`` of ``workspace_id``.

    Raises:
        NotFound: 404 ``bot_not_found`` (also for another workspace's bot).
    """
    meeting = (
        await session.execute(select(Meeting).where(Meeting.bot_id == bot_id))
    ).scalar_one_or_none()
    if meeting is None or workspace_id is None or meeting.workspace_id != workspace_id:
        raise bot_not_found()
    return meeting


@dataclass(frozen=True, slots=True)
class ZoomLaunch:
    """What a zoom bot's launch mints or opens its OBF token from (both None for other bots).

    Attributes:
        connection_id: The stored Zoom connection to mint from (no token was given).
        sealed_token: The given ``zoom_obf_token``, sealed by the token cipher.
    """

    connection_id: int | None = None
    sealed_token: str | None = None


@dataclass
class BotService:
    """What the bot routes and the creation of scheduled bots do; built once per app.

    Args:
        database: Where the bots live.
        settings: The process's settings (meeting hosts, transcription models).
        launcher: Terminates the VM of a bot stopped with no agent to stop it.
        status_hooks: In-transaction status hooks (the app's live list).
        zoom_connections: The Zoom integration's stored connections and token sealing.
        agent_commands: Sends a command to a bot's agent, or None without an agent link.
        recording_url: Finds the URL of a bot's main recording, or None without artifact
            storage.
        live_commands: Sends typed commands and waits for their results (PATCH of a launched
            bot), or None without an agent link.
    """

    database: Database
    settings: Settings
    launcher: BotLauncher
    zoom_connections: ZoomTokenSource
    status_hooks: Sequence[StatusHook] = ()
    agent_commands: AgentCommander | None = None
    recording_url: RecordingUrl | None = None
    live_commands: LiveCommands | None = None

    async def require_zoom_token(
        self, auth: AuthContext, body: BotCreate | ScheduledBotCreate
    ) -> ZoomLaunch:
        """What a zoom bot's launch gets its OBF token from: the given one, sealed, or a connection.

        docs/api.md Part 1 requires a ``zoom_obf_token`` or a usable stored connection; a given
        token is sealed here (it is never stored in plain text) and ``zoom_connection_id`` is then
        not looked at; without one, the launch mints a token from the connection returned
        (docs/api.md 2.3, "Zoom"). Call it before opening the creation transaction: the Zoom part
        reads its own tables.

        Raises:
            Validation: 400 ``zoom_token_required`` when there is neither.
        """
        if body.platform is not Platform.ZOOM:
            return ZoomLaunch()
        if body.zoom_obf_token:
            return ZoomLaunch(sealed_token=self.zoom_connections.seal(body.zoom_obf_token))
        connection = await self.zoom_connections.usable_connection(
            auth.require_workspace(), auth.user_id, body.zoom_connection_id
        )
        if connection is None:
            raise Validation.of_field(
                "zoom_obf_token",
                "a zoom bot needs zoom_obf_token or a usable stored Zoom connection",
                code="zoom_token_required",
                msg="required for zoom without a usable stored Zoom connection",
                status=400,
            )
        return ZoomLaunch(connection_id=connection)

    async def create_meeting(
        self,
        session: AsyncSession,
        auth: AuthContext,
        body: BotCreate | ScheduledBotCreate,
        zoom: ZoomLaunch | None = None,
    ) -> Meeting:
        """Validate and store a new bot in ``session``'s transaction (the caller commits).

        ``zoom`` comes from :meth:`require_zoom_token`, called before the transaction: the
        chosen connection id and the given token, sealed (the plain ``zoom_obf_token`` is never
        stored); the launch opens the token or mints one from the connection.

        A :class:`ScheduledBotCreate`, or a :class:`BotCreate` whose ``scheduled_at`` is in the
        future, becomes ``scheduled``; anything else ``requested`` with ``launch_at`` = now.

        Raises:
            KeyNotBound: 403, the key has no workspace.
            Validation: 400 missing/invalid meeting id, ``scheduled_start_in_past``; 422 malformed
                meeting URL, options the bot cannot serve
                (:func:`~control_plane.bots.launch_checks.check_bot_options`).
        """
        workspace_id = auth.require_workspace()
        workspace = await session.get(Workspace, workspace_id)
        if workspace is None:
            raise bot_not_found()
        settings = self.settings
        ref = meeting_reference(
            body.platform,
            meeting_url=body.meeting_url,
            native_meeting_id=body.native_meeting_id,
            passcode=body.passcode,
            extra_hosts=settings.extra_meeting_hosts,
        )
        bot_settings = _settings_from(body, workspace)
        check_bot_options(settings, bot_settings, body.model_fields_set)
        if body.prompt_version_id is not None and (
            await version_of_workspace(session, workspace_id, body.prompt_version_id) is None
        ):
            raise Validation.of_field(
                "prompt_version_id",
                "prompt_version_id names no action prompt version of this workspace",
                code="prompt_version_not_found",
                msg="unknown prompt version",
            )
        now = datetime.now(UTC)
        if isinstance(body, ScheduledBotCreate):
            if body.scheduled_start_at <= now:
                raise start_in_past()
            start: datetime | None = body.scheduled_start_at
            offset = body.join_offset_seconds
        else:
            start = body.scheduled_at if body.scheduled_at and body.scheduled_at > now else None
            offset = 0
        scheduled = start is not None
        meeting = Meeting(
            bot_id=uuid.uuid4(),
            workspace_id=workspace_id,
            user_id=auth.user_id,
            platform=body.platform.value,
            native_meeting_id=ref.native_meeting_id,
            constructed_meeting_url=ref.constructed_meeting_url,
            passcode=ref.passcode,
            zoom_connection_id=zoom.connection_id if zoom is not None else None,
            zoom_obf_token_sealed=zoom.sealed_token if zoom is not None else None,
            status=(BotStatus.SCHEDULED if scheduled else BotStatus.REQUESTED).value,
            settings=bot_settings.model_dump(mode="json"),
            scheduled_start_at=start,
            join_offset_seconds=offset,
            launch_at=(start + timedelta(seconds=offset)) if start is not None else now,
            participants=[],
            redacted=False,
            created_at=now,
            updated_at=now,
        )
        reason = None if scheduled else StatusReason.LAUNCHED.value
        hooks = self.status_hooks
        await record_creation(session, meeting, reason, hooks=hooks, at=now)
        return meeting

    async def recording_url_of(self, session: AsyncSession, meeting: Meeting) -> str | None:
        """Presigned URL of the bot's main (first) recording, when the artifact part is present."""
        if self.recording_url is None:
            return None
        return await self.recording_url(session, meeting)

    async def update_bot(
        self, auth: AuthContext, bot_id: uuid.UUID, update: BotUpdate
    ) -> BotRecord:
        """Apply a PATCH to a ``requested`` or ``scheduled`` bot.

        A bot not launched yet only has the change stored (used at launch). A launched one (the
        scheduler claimed it) gets it live: the agent applies all of it or none, and the change
        is stored only once the agent confirmed (:mod:`control_plane.bots.live_settings`).

        Raises:
            NotFound: 404 ``bot_not_found``.
            Conflict: 409 ``bot_not_updatable`` in any other status (or the bot is leaving).
            SettingNotLive: 409 ``setting_not_live``; ``errors[0].loc`` names the field.
            Validation: 422 for options the bot cannot serve
                (:func:`~control_plane.bots.launch_checks.check_bot_options`).
            AgentUnavailable: 503. AgentTimeout: 504. AgentCommandFailed: 502.
        """
        async with self.database.sessions.begin() as session:
            meeting = await _lock_bot(session, auth, bot_id)
            if BotStatus(meeting.status) not in UPDATABLE_STATUSES:
                raise not_updatable(
                    f"a bot can be updated only while requested or scheduled, not {meeting.status}"
                )
            merged = merged_settings(self.settings, meeting, update)
            if not is_launched(meeting):
                meeting.settings = merged
                meeting.updated_at = datetime.now(UTC)
                return to_record(meeting)
            change = settings_change(
                BotSettings.model_validate(meeting.settings), BotSettings.model_validate(merged)
            )
            if change is None:
                return to_record(meeting)
        # Outside the transaction: the row is not held locked while the agent answers.
        if self.live_commands is None:
            raise AgentUnavailable("this control plane has no agent link")
        return await apply_live(
            self.live_commands,
            self.database,
            bot_id,
            change,
            to_record,
            wait_seconds=self.settings.agent_command_timeout_seconds,
        )

    async def _send(self, bot_id: uuid.UUID, command: AgentCommand) -> bool:
        """Deliver ``command`` without waiting for its result; whether it went out."""
        sender = self.agent_commands
        if sender is None:
            return False
        try:
            return await sender(bot_id, Command(command=command))
        except Exception:  # a broken link must not fail the API call that caused the command
            log.exception(
                "agent command failed",
                extra={"bot_id": str(bot_id), "command": command.name.value},
            )
            return False

    async def stop_bot(self, auth: AuthContext, bot_id: uuid.UUID) -> tuple[int, BotRecord]:
        """``DELETE /api/v1/bots/{bot_id}``: stop a bot.

        Returns:
            ``(202, record)`` with status ``stopping`` (``cancelled`` for a scheduled bot), or
            ``(200, record)`` unchanged when it is already stopping.

        Raises:
            NotFound: 404 ``bot_not_found``.
            Conflict: 409 ``bot_finished`` when the bot is in a final status.
        """
        hooks = self.status_hooks
        async with self.database.sessions.begin() as session:
            meeting = await _lock_bot(session, auth, bot_id)
            status = BotStatus(meeting.status)
            if status in FINAL_STATUSES:
                raise Conflict(f"the bot has already {status.value}", code="bot_finished")
            if status is BotStatus.STOPPING:
                return 200, to_record(meeting)
            if status is BotStatus.SCHEDULED:
                await change_status(
                    session,
                    meeting,
                    BotStatus.CANCELLED,
                    StatusReason.CANCELLED_BY_API.value,
                    hooks=hooks,
                )
                return 202, to_record(meeting)
            await change_status(
                session, meeting, BotStatus.STOPPING, StatusReason.STOPPED_BY_API.value, hooks=hooks
            )
            record = to_record(meeting)
            container = meeting.bot_container_id
        if await self._send(bot_id, StopCommand()):
            return 202, record
        # No agent to stop gracefully: tear its VM down (if it got one) and finish the bot here.
        if container is not None:
            await self.launcher.terminate(LaunchHandle(id=container))
        async with self.database.sessions.begin() as session:
            stopping = await lock_meeting(session, bot_id=bot_id)
            if stopping is not None and stopping.status == BotStatus.STOPPING.value:
                await change_status(
                    session,
                    stopping,
                    BotStatus.COMPLETED,
                    StatusReason.STOPPED_BY_API.value,
                    hooks=hooks,
                )
        return 202, record


BOT_SERVICE = web.AppKey("bot_service", BotService)
"""The application's :class:`BotService` (route handlers call it)."""
