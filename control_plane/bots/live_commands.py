"""Commands for a running bot's agent, and what the API answers when the agent refuses one.

:class:`LiveCommands` sends a typed command (``agent.contracts.link.AgentCommand``) over the
bot's agent link and waits for its result; a refusal becomes the API's error
(:func:`refusal_error`):

| agent error (``CommandErrorCode``) | HTTP | problem ``code`` |
|---|---|---|
| ``capability_not_supported`` | 422 | ``capability_not_supported`` |
| ``bot_not_active`` | 404 | ``bot_not_active`` (docs/api.md 2.5) |
| ``setting_not_live`` | 409 | ``setting_not_live``; ``errors[0].loc`` = ``["body", <field>]`` |
| ``avatar_unavailable``, ``screen_source_unavailable`` | 422 | the same; ``errors`` names it |
| ``voice_agent_disabled`` | 409 | ``voice_agent_disabled`` |
| ``invalid_arguments`` on ``voice`` | 422 | ``voice_not_available``; ``errors`` names it |
| any other (``invalid_arguments``, ``unknown_command``, …) | 502 | ``agent_command_failed`` |

and, before any answer: no link → 503 ``agent_unavailable``, no answer in
``agent_command_timeout_seconds`` → 504 ``agent_timeout``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.contracts.link import (
    AgentCommand,
    CommandErrorCode,
    CommandName,
    CommandResult,
    ScreenshotCommand,
    UploadSlot,
)
from control_plane.agent_hub.artifacts import record_artifact
from control_plane.agent_hub.errors import AgentCommandFailed, AgentTimeout, AgentUnavailable
from control_plane.agent_hub.hub import AgentHub, AgentNotConnected, CommandTimedOut
from control_plane.db.engine import Database
from control_plane.db.models.bot import Meeting
from control_plane.errors import (
    CapabilityNotSupported,
    Conflict,
    DomainError,
    ErrorItem,
    NotFound,
    Validation,
)
from control_plane.settings import Settings
from control_plane.storage.base import ArtifactStorage, PresignedUrl, artifact_key


class SettingNotLive(DomainError):
    """409: a setting of a PATCH cannot change while the bot runs; ``errors`` names it."""

    status = 409
    default_code = "setting_not_live"
    title = "Setting cannot change while the bot runs"

    def __init__(self, field: str, detail: str | None = None) -> None:
        super().__init__(
            detail or f"{field} cannot change while the bot runs",
            errors=[
                ErrorItem(
                    loc=["body", field],
                    msg=detail or "cannot change while the bot runs",
                    type="setting_not_live",
                )
            ],
        )
        self.field = field


class MediaUnavailable(DomainError):
    """422: an image or page a command names cannot be used; ``errors`` names the argument.

    The code is the agent's: ``avatar_unavailable`` or ``screen_source_unavailable`` (refused by
    the SSRF rules, not fetched, not an image, over 5 MiB, or not decodable).
    """

    status = 422
    default_code = "avatar_unavailable"
    title = "Media could not be used"

    def __init__(self, code: str, field: str, detail: str) -> None:
        super().__init__(
            detail,
            code=code,
            errors=[ErrorItem(loc=["body", field], msg=detail, type=code)],
        )


_MEDIA_ERRORS = (CommandErrorCode.AVATAR_UNAVAILABLE, CommandErrorCode.SCREEN_SOURCE_UNAVAILABLE)


def refusal_error(result: CommandResult, name: CommandName) -> DomainError:
    """The API error for the command ``name`` the agent did not carry out (module table)."""
    detail = result.detail
    if result.error is CommandErrorCode.CAPABILITY_NOT_SUPPORTED:
        return CapabilityNotSupported(detail or f"the bot's platform cannot {name.value}")
    if result.error is CommandErrorCode.BOT_NOT_ACTIVE:
        return NotFound(detail or "the bot is not in the meeting", code="bot_not_active")
    if result.error is CommandErrorCode.SETTING_NOT_LIVE:
        return SettingNotLive(result.field or "settings", detail)
    if result.error is not None and result.error in _MEDIA_ERRORS:
        field = result.field or "image_url"
        return MediaUnavailable(result.error.value, field, detail or f"{field} cannot be used")
    if result.error is CommandErrorCode.INVALID_ARGUMENTS and result.field == "voice":
        # The agent's synthesizer knows its voices (agent.voice: Piper's packaged one); a name
        # it lacks is the caller's to change, not a failure of the bot.
        return Validation.of_field(
            "voice",
            detail or "the bot has no such voice",
            code="voice_not_available",
            msg=detail or "no such voice",
        )
    if result.error is CommandErrorCode.VOICE_AGENT_DISABLED:
        return Conflict(
            detail or "the bot's voice_agent_enabled is false", code="voice_agent_disabled"
        )
    code = result.error.value if result.error is not None else "unknown"
    return AgentCommandFailed(detail or f"the {name.value} command failed ({code})")


class _ScreenshotResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    artifact_id: str
    storage_key: str
    size_bytes: int = Field(ge=1)
    width: int = Field(ge=1)
    height: int = Field(ge=1)
    captured_at: datetime


@dataclass(frozen=True, slots=True)
class TakenScreenshot:
    """A screenshot the agent uploaded and the control plane recorded (pixels, UTC)."""

    url: PresignedUrl
    captured_at: datetime
    width: int
    height: int


class LiveCommands:
    """Sends commands to bots' agents and waits for their results.

    Args:
        hub: The agent links (and the relay to other replicas).
        storage: Artifact storage (screenshot upload slots).
        db: The database (artifact rows).
        settings: ``agent_command_timeout_seconds``, upload and presign lifetimes.
    """

    def __init__(
        self, hub: AgentHub, storage: ArtifactStorage, db: Database, settings: Settings
    ) -> None:
        self._hub = hub
        self._storage = storage
        self._db = db
        self._settings = settings

    async def run(self, bot_id: uuid.UUID, command: AgentCommand) -> CommandResult:
        """Send ``command`` and return the agent's result, whether it succeeded or not.

        Raises:
            AgentUnavailable: 503, no link to the bot's agent.
            AgentTimeout: 504, no result in time.
        """
        try:
            return await self._hub.command(
                bot_id, command, within_seconds=self._settings.agent_command_timeout_seconds
            )
        except AgentNotConnected as exc:
            raise AgentUnavailable("the bot's agent is not connected; retry shortly") from exc
        except CommandTimedOut as exc:
            raise AgentTimeout(
                f"the bot did not answer the {command.name.value} command in time"
            ) from exc

    async def carry_out(self, bot_id: uuid.UUID, command: AgentCommand) -> CommandResult:
        """Send ``command`` and return its successful result.

        Raises:
            AgentUnavailable: 503. AgentTimeout: 504.
            DomainError: the agent's refusal mapped by :func:`refusal_error`.
        """
        result = await self.run(bot_id, command)
        if not result.ok:
            raise refusal_error(result, command.name)
        return result

    async def wait_for_agent(self, bot_id: uuid.UUID, within_seconds: float) -> bool:
        """Wait up to ``within_seconds`` for the bot's agent to register; return success."""
        return await self._hub.wait_registered(bot_id, within_seconds)

    async def screenshot(self, meeting: Meeting) -> TakenScreenshot:
        """Have the agent capture its view, upload it, record it, and presign its URL.

        Raises:
            AgentCommandFailed: 502 when the agent answered without uploading.
            AgentUnavailable, AgentTimeout, DomainError: as :meth:`carry_out`.
        """
        settings = self._settings
        artifact_id = uuid.uuid4().hex
        key = artifact_key(meeting.bot_id, "screenshots", f"{artifact_id}.png")
        target = await self._storage.upload_target(
            key, "image/png", settings.upload_url_ttl_seconds
        )
        slot = UploadSlot(
            storage_key=key,
            url=target.url,
            headers=target.headers,
            agent_auth=target.agent_auth,
            expires_at=target.expires_at,
        )
        result = await self.carry_out(
            meeting.bot_id, ScreenshotCommand(artifact_id=artifact_id, upload=slot)
        )
        try:
            shot = _ScreenshotResult.model_validate(result.result)
        except ValidationError as exc:
            raise AgentCommandFailed("the bot answered the screenshot without its details") from exc
        stored = await self._storage.size(key) if shot.storage_key == key else None
        if stored is None:
            raise AgentCommandFailed("the bot did not upload the screenshot")
        if stored > settings.max_upload_bytes:
            # Only S3 gets here: its presigned URL cannot bound a screenshot of unknown size,
            # so the cap is applied once the bytes are there (local storage refuses them early).
            await self._storage.delete_prefix(key)
            raise AgentCommandFailed("the bot's screenshot is over max_upload_bytes")
        await record_artifact(
            self._db,
            meeting.id,
            artifact_id=artifact_id,
            kind="screenshot",
            storage_key=key,
            content_type="image/png",
            size_bytes=shot.size_bytes,
            width=shot.width,
            height=shot.height,
            captured_at=shot.captured_at,
        )
        signed = await self._storage.presign_get(key, settings.presigned_url_ttl_seconds)
        return TakenScreenshot(
            url=signed, captured_at=shot.captured_at, width=shot.width, height=shot.height
        )


LIVE_COMMANDS = web.AppKey("live_commands", LiveCommands)
