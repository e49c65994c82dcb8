"""Commands from the control plane, each answered with a ``command_result``.

The link protocol is docs/architecture.md §5.

:class:`CommandHandler` dispatches over the typed union ``AgentCommand``
(``agent/contracts/link.py``): one handler per command model.

- ``stop``: the bot leaves with the command's ``reason``; result ``{}``.
- ``screenshot`` (``artifact_id``, ``upload``: an ``UploadSlot``; see ``agent/link/artifacts.py``):
  result
  ``{artifact_id, storage_key, content_type, size_bytes, width, height, captured_at}`` and an
  ``artifact`` event.
- ``chat`` (``text``, 1 to 4096 characters): result ``{}``; the message is reported as a
  ``chat_message`` with ``from_bot`` true.
- ``hand`` (``raised``: bool, default true): result ``{raised}``.
- ``avatar`` (``image_url``: http(s) or ``data:image/`` URL; absent resets to the bot's
  ``default_avatar_url`` or the service logo): result ``{}``; ``avatar_unavailable`` when the
  image is refused by the SSRF rules, cannot be fetched, is over 5 MiB or does not decode (the
  camera keeps its previous image).
- ``screen_share`` (``image_url``, ``url`` or ``video_url``; see
  ``agent/media_out/screen_share.py``): result ``{source, width, height}`` (a video adds ``audio``,
  ``duration``); ``screen_source_unavailable`` for a source that cannot be used.
  ``stop_screen_share``: result ``{was_sharing}``.
- ``update_settings`` (``changes``): all or nothing, see ``agent/meeting/live_settings.py``; result
  ``{settings}``; error ``setting_not_live`` with the ``field`` that cannot change now.
- ``speak`` (``text`` + ``voice`` or ``audio_url``, ``speech_id``, ``interrupt``): queued on the
  bot's :class:`~agent.voice.speaker.Speaker` (or played at once after an interrupt); result
  ``{speech_id, ahead}``; ``speak_started`` / ``speak_finished`` follow on the stream. Error
  ``voice_agent_disabled`` when the bot's ``voice_agent_enabled`` is false, ``invalid_arguments``
  (``field`` ``voice``) for a voice the bot does not have.
- ``stop_speaking``: silences the bot at once, drops its queue; result ``{stopped}``.
- ``chat`` is refused with ``voice_agent_disabled`` like ``speak``.
- ``screen_share`` is refused with ``voice_agent_disabled`` too; ``stop_screen_share`` never is.

Errors are :class:`~agent.contracts.link.CommandErrorCode` values: ``bot_not_active`` (not in
the meeting yet or any more), ``capability_not_supported``, ``setting_not_live``,
``upload_failed``, ``avatar_unavailable``, ``screen_source_unavailable``,
``voice_agent_disabled``, ``browser_error``
(and, from the link client for a command that does not parse, ``unknown_command`` and
``invalid_arguments``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from agent.browser.session import BrowserSession
from agent.contracts.link import (
    AgentCommand,
    AnnounceActionCommand,
    ArtifactEvent,
    ArtifactKind,
    AvatarCommand,
    ChatCommand,
    ChatMessageEvent,
    Command,
    CommandErrorCode,
    CommandResult,
    HandCommand,
    ScreenShareCommand,
    ScreenshotCommand,
    SpeakCommand,
    StopCommand,
    StopScreenShareCommand,
    StopSpeakingCommand,
    UpdateSettingsCommand,
    UploadSlot,
)
from agent.contracts.status import BotStatus, StatusReason
from agent.contracts.timestamps import format_utc
from agent.link.artifacts import ArtifactUploader, StoredArtifact, png_size
from agent.link.events import BotEvents
from agent.media_out.remote_media import image_data_url
from agent.media_out.screen_share import ScreenShare
from agent.meeting.live_settings import SettingsApplier
from agent.platforms.base import PlatformAdapter
from agent.process.errors import BrowserError, CapabilityNotSupported, CommandError
from agent.voice.speaker import Speaker, Speech
from agent.voice.synthesis import VoiceNotAvailable
from meetbot_common.ssrf import TargetPolicy

log = logging.getLogger(__name__)

_C = TypeVar("_C", bound=AgentCommand)
Handler = Callable[[Any], Awaitable[dict[str, Any]]]


class CommandHandler:
    """Runs commands against the meeting page.

    Args:
        browser: The bot's browser (screenshots, avatar).
        adapter: The platform adapter (chat, hand).
        events: Where results and artifacts are reported.
        uploader: Where screenshots go.
        status: Returns the bot's current status.
        request_stop: Asks the bot to leave with a reason.
        settings: Applies ``update_settings``.
        bot_name: The bot's display name (sender of its own chat messages).
        default_avatar_url: The bot's ``default_avatar_url`` (reset target), if any.
        media_policy: The SSRF rules for images and pages the commands name.
        speaker: The bot's voice (``speak``, ``stop_speaking``).
        voice_enabled: Returns the bot's ``voice_agent_enabled`` now (it may change live).
    """

    def __init__(
        self,
        browser: BrowserSession,
        adapter: PlatformAdapter,
        events: BotEvents,
        uploader: ArtifactUploader,
        status: Callable[[], BotStatus],
        request_stop: Callable[[StatusReason], None],
        settings: SettingsApplier,
        bot_name: str,
        default_avatar_url: str | None = None,
        media_policy: TargetPolicy | None = None,
        *,
        speaker: Speaker,
        voice_enabled: Callable[[], bool],
    ) -> None:
        self._speaker = speaker
        self._voice_enabled = voice_enabled
        self._bot_name = bot_name
        self._browser = browser
        self._adapter = adapter
        self.events = events
        self._uploader = uploader
        self._status = status
        self._request_stop = request_stop
        self._settings = settings
        self._default_avatar_url = default_avatar_url
        self._media_policy = media_policy or TargetPolicy()
        self.screen = ScreenShare(browser, adapter, self._media_policy)
        self._handlers: dict[type[Any], Handler] = {
            StopCommand: self._stop,
            ScreenshotCommand: self._active(self._screenshot),
            ChatCommand: self._active(self._voice(self._chat)),
            HandCommand: self._active(self._hand),
            AvatarCommand: self._active(self._avatar),
            UpdateSettingsCommand: self._update_settings,
            SpeakCommand: self._active(self._voice(self._speak)),
            StopSpeakingCommand: self._stop_speaking,
            ScreenShareCommand: self._active(self._voice(self._share_screen)),
            StopScreenShareCommand: self._active(self._stop_screen),
            AnnounceActionCommand: self._announce_action,
        }

    async def handle(self, command: Command) -> CommandResult:
        """Run ``command`` and report its result (also returned)."""
        try:
            result = await self._handlers[type(command.command)](command.command)
            answer = CommandResult(ref_id=command.id, ok=True, result=result)
        except CapabilityNotSupported as exc:
            answer = CommandResult(ref_id=command.id, ok=False, error=exc.code, detail=str(exc))
        except CommandError as exc:
            answer = CommandResult(
                ref_id=command.id, ok=False, error=exc.code, field=exc.field, detail=exc.detail
            )
        except BrowserError as exc:
            answer = CommandResult(
                ref_id=command.id, ok=False, error=CommandErrorCode.BROWSER_ERROR, detail=str(exc)
            )
        log.info(
            "command handled",
            extra={"command": command.name.value, "ok": answer.ok, "error": answer.error},
        )
        await self.events.command_result(answer)
        return answer

    def _active(self, handler: Callable[[_C], Awaitable[dict[str, Any]]]) -> Handler:
        """``handler``, run only while the bot is in the meeting (else ``bot_not_active``)."""

        async def run(command: _C) -> dict[str, Any]:
            if self._status() is not BotStatus.ACTIVE:
                raise CommandError(
                    CommandErrorCode.BOT_NOT_ACTIVE, f"the bot is {self._status().value}"
                )
            return await handler(command)

        return run

    def _voice(self, handler: Callable[[_C], Awaitable[dict[str, Any]]]) -> Handler:
        """``handler``, refused with ``voice_agent_disabled`` while the bot's voice is off."""

        async def run(command: _C) -> dict[str, Any]:
            if not self._voice_enabled():
                raise CommandError(
                    CommandErrorCode.VOICE_AGENT_DISABLED, "the bot's voice_agent_enabled is false"
                )
            return await handler(command)

        return run

    async def _speak(self, command: SpeakCommand) -> dict[str, Any]:
        try:
            self._speaker.check_voice(command.voice)
        except VoiceNotAvailable as exc:
            raise CommandError(CommandErrorCode.INVALID_ARGUMENTS, str(exc), field="voice") from exc
        if command.interrupt:
            await self._speaker.interrupt()
        speech_id = command.speech_id or str(uuid.uuid4())
        ahead = self._speaker.say(Speech(speech_id, command.text, command.voice, command.audio_url))
        return {"speech_id": speech_id, "ahead": ahead}

    async def _announce_action(self, command: AnnounceActionCommand) -> dict[str, Any]:
        """``action_detected`` on the stream, in any status.

        The meeting's last window may be detected while the bot leaves.
        """
        await self.events.action_announced(
            {
                "id": command.id,
                "type": command.action_type.value,
                "text": command.text,
                "owner": command.owner,
                "due": command.due,
                "segment_ids": list(command.segment_ids),
                "timestamp": format_utc(command.timestamp),
            }
        )
        return {}

    async def _stop_speaking(self, command: StopSpeakingCommand) -> dict[str, Any]:
        return {"stopped": await self._speaker.interrupt()}

    async def _stop(self, command: StopCommand) -> dict[str, Any]:
        self._request_stop(command.reason)
        return {}

    async def _update_settings(self, command: UpdateSettingsCommand) -> dict[str, Any]:
        result = await self._settings.apply(command.changes)
        if not self._voice_enabled():
            await self._speaker.interrupt()  # switched off mid-speech: silent and muted now
        return result

    async def _chat(self, command: ChatCommand) -> dict[str, Any]:
        await self._adapter.send_chat(self._browser.page, command.text)
        await self.events.chat(
            ChatMessageEvent(
                message_id=str(uuid.uuid4()),
                sender=self._bot_name,
                text=command.text,
                timestamp=datetime.now(UTC),
                from_bot=True,
            )
        )
        return {}

    async def _hand(self, command: HandCommand) -> dict[str, Any]:
        await self._adapter.set_hand(self._browser.page, command.raised)
        return {"raised": command.raised}

    async def _avatar(self, command: AvatarCommand) -> dict[str, Any]:
        url = command.image_url or self._default_avatar_url
        code = CommandErrorCode.AVATAR_UNAVAILABLE
        data_url = await image_data_url(url, self._media_policy, code) if url else None
        if not await self._browser.set_avatar(data_url):
            raise CommandError(code, "image_url does not decode as an image", field="image_url")
        return {}

    async def _share_screen(self, command: ScreenShareCommand) -> dict[str, Any]:
        return await self.screen.start(command)

    async def _stop_screen(self, command: StopScreenShareCommand) -> dict[str, Any]:
        return await self.screen.stop()

    async def store_screenshot(
        self, png: bytes, captured_at: datetime, artifact_id: str, upload: UploadSlot | None
    ) -> tuple[ArtifactEvent, StoredArtifact]:
        """Store a page screenshot (in ``upload`` when given) and report the artifact.

        Used by the ``screenshot`` command and by the bot's report of a screen it does not know.

        Args:
            png: The screenshot's PNG bytes.
            captured_at: When it was taken.
            artifact_id: The artifact's id; the file is ``{artifact_id}.png``.
            upload: Where to upload it; None: the uploader's own storage.
        """
        width, height = png_size(png)
        stored = await self._uploader.store(png, "image/png", f"{artifact_id}.png", upload)
        event = ArtifactEvent(
            kind=ArtifactKind.SCREENSHOT,
            artifact_id=artifact_id,
            storage_key=stored.storage_key,
            content_type="image/png",
            size_bytes=len(png),
            width=width,
            height=height,
            captured_at=captured_at,
        )
        await self.events.artifact(event)
        return event, stored

    async def _screenshot(self, command: ScreenshotCommand) -> dict[str, Any]:
        captured_at = datetime.now(UTC)
        png = await self._browser.screenshot()
        artifact_id = command.artifact_id or str(uuid.uuid4())
        event, stored = await self.store_screenshot(png, captured_at, artifact_id, command.upload)
        result: dict[str, Any] = {
            "artifact_id": artifact_id,
            "storage_key": stored.storage_key,
            "content_type": "image/png",
            "size_bytes": event.size_bytes,
            "width": event.width,
            "height": event.height,
            "captured_at": captured_at.isoformat(),
        }
        if stored.local_path is not None:
            result["path"] = str(stored.local_path)
        return result
