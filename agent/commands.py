"""Commands from the control plane (DESIGN.md §5), each answered with a ``command_result``.

- ``stop``: the bot leaves with ``stopped_by_api``; result ``{}``.
- ``screenshot`` (``artifact_id``, ``upload``: an ``UploadSlot``; see ``agent/artifacts.py``):
  result
  ``{artifact_id, storage_key, content_type, size_bytes, width, height, captured_at}`` and an
  ``artifact`` event.
- ``chat`` (``text``, 1 to 4096 characters): result ``{}``; the message is reported as a
  ``chat_message`` with ``from_bot`` true.
- ``hand`` (``raised``: bool, default true): result ``{raised}``.
- ``avatar`` (``image_url``: http(s) or ``data:image/`` URL; absent resets to the bot's
  ``default_avatar_url`` or the built-in image): result ``{}``.
- ``speak``, ``stop_speaking``, ``screen_share``, ``stop_screen_share``, ``update_settings``:
  error ``capability_not_supported`` (speech output and screen share are a later issue).

Errors are stable codes: ``bot_not_active`` (not in the meeting yet or any more),
``invalid_arguments``, ``capability_not_supported``, ``upload_failed``, ``avatar_unavailable``,
``browser_error``.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp

from agent.artifacts import ArtifactUploader, png_size
from agent.browser.session import BrowserSession
from agent.contracts.link import (
    ArtifactEvent,
    ArtifactKind,
    ChatMessageEvent,
    Command,
    CommandName,
    CommandResult,
)
from agent.contracts.status import BotStatus, StatusReason
from agent.errors import BrowserError, CapabilityNotSupported, CommandError
from agent.events import BotEvents
from agent.platforms.base import PlatformAdapter

log = logging.getLogger(__name__)

MAX_AVATAR_BYTES = 5 * 1024 * 1024
MAX_CHAT_CHARS = 4096
_NOT_YET = frozenset(
    {
        CommandName.SPEAK,
        CommandName.STOP_SPEAKING,
        CommandName.SCREEN_SHARE,
        CommandName.STOP_SCREEN_SHARE,
        CommandName.UPDATE_SETTINGS,
    }
)


class CommandHandler:
    """Runs commands against the meeting page.

    Args:
        browser: The bot's browser (screenshots, avatar).
        adapter: The platform adapter (chat, hand).
        events: Where results and artifacts are reported.
        uploader: Where screenshots go.
        status: Returns the bot's current status.
        request_stop: Asks the bot to leave with a reason.
        bot_name: The bot's display name (sender of its own chat messages).
        default_avatar_url: The bot's ``default_avatar_url`` (reset target), if any.
    """

    def __init__(
        self,
        browser: BrowserSession,
        adapter: PlatformAdapter,
        events: BotEvents,
        uploader: ArtifactUploader,
        status: Callable[[], BotStatus],
        request_stop: Callable[[StatusReason], None],
        bot_name: str,
        default_avatar_url: str | None = None,
    ) -> None:
        self._bot_name = bot_name
        self._browser = browser
        self._adapter = adapter
        self._events = events
        self._uploader = uploader
        self._status = status
        self._request_stop = request_stop
        self._default_avatar_url = default_avatar_url

    async def handle(self, command: Command) -> CommandResult:
        """Run ``command`` and report its result (also returned)."""
        try:
            result = await self._run(command)
            answer = CommandResult(ref_id=command.id, ok=True, result=result)
        except CapabilityNotSupported as exc:
            answer = CommandResult(
                ref_id=command.id, ok=False, error=exc.code, detail=str(exc)
            )
        except CommandError as exc:
            answer = CommandResult(ref_id=command.id, ok=False, error=exc.code, detail=exc.detail)
        except BrowserError as exc:
            answer = CommandResult(
                ref_id=command.id, ok=False, error="browser_error", detail=str(exc)
            )
        log.info(
            "command handled",
            extra={"command": command.command.value, "ok": answer.ok, "error": answer.error},
        )
        await self._events.command_result(answer)
        return answer

    def _require_active(self) -> None:
        if self._status() is not BotStatus.ACTIVE:
            raise CommandError("bot_not_active", f"the bot is {self._status().value}")

    async def _run(self, command: Command) -> dict[str, Any]:
        name, args = command.command, command.args
        if name is CommandName.STOP:
            reason = args.get("reason")
            known = {r.value for r in StatusReason}
            self._request_stop(
                StatusReason(reason) if reason in known else StatusReason.STOPPED_BY_API
            )
            return {}
        if name in _NOT_YET:
            raise CapabilityNotSupported(self._adapter.platform.value, name.value)
        self._require_active()
        page = self._browser.page
        if name is CommandName.SCREENSHOT:
            return await self._screenshot(args)
        if name is CommandName.CHAT:
            text = args.get("text")
            if not isinstance(text, str) or not 1 <= len(text) <= MAX_CHAT_CHARS:
                raise CommandError("invalid_arguments", "text must be 1 to 4096 characters")
            await self._adapter.send_chat(page, text)
            await self._events.chat(
                ChatMessageEvent(
                    message_id=str(uuid.uuid4()),
                    sender=self._bot_name,
                    text=text,
                    timestamp=datetime.now(UTC),
                    from_bot=True,
                )
            )
            return {}
        if name is CommandName.HAND:
            raised = args.get("raised", True)
            if not isinstance(raised, bool):
                raise CommandError("invalid_arguments", "raised must be a boolean")
            await self._adapter.set_hand(page, raised)
            return {"raised": raised}
        if name is CommandName.AVATAR:
            url = args.get("image_url") or self._default_avatar_url
            await self._browser.set_avatar(await self._data_url(url) if url else None)
            return {}
        raise CapabilityNotSupported(self._adapter.platform.value, name.value)

    async def _screenshot(self, args: dict[str, Any]) -> dict[str, Any]:
        captured_at = datetime.now(UTC)
        png = await self._browser.screenshot()
        width, height = png_size(png)
        artifact_id = str(args.get("artifact_id") or uuid.uuid4())
        stored = await self._uploader.store(png, "image/png", f"{artifact_id}.png", args)
        await self._events.artifact(
            ArtifactEvent(
                kind=ArtifactKind.SCREENSHOT,
                artifact_id=artifact_id,
                storage_key=stored.storage_key,
                content_type="image/png",
                size_bytes=len(png),
                width=width,
                height=height,
                captured_at=captured_at,
            )
        )
        result: dict[str, Any] = {
            "artifact_id": artifact_id,
            "storage_key": stored.storage_key,
            "content_type": "image/png",
            "size_bytes": len(png),
            "width": width,
            "height": height,
            "captured_at": captured_at.isoformat(),
        }
        if stored.local_path is not None:
            result["path"] = str(stored.local_path)
        return result

    @staticmethod
    async def _data_url(url: str) -> str:
        """An image URL as a ``data:`` URL (keeps the camera canvas origin-clean)."""
        if url.startswith("data:image/"):
            return url
        if not url.startswith(("http://", "https://")):
            raise CommandError("invalid_arguments", "image_url must be http(s) or data:image/")
        timeout = aiohttp.ClientTimeout(total=15)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(url) as resp,
            ):
                kind = resp.headers.get("Content-Type", "").split(";")[0].strip()
                if resp.status != 200 or not kind.startswith("image/"):
                    raise CommandError("avatar_unavailable", "image_url is not an image")
                body = await resp.content.read(MAX_AVATAR_BYTES + 1)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CommandError("avatar_unavailable", "image_url could not be fetched") from exc
        if len(body) > MAX_AVATAR_BYTES:
            raise CommandError("avatar_unavailable", "image is larger than 5 MiB")
        return f"data:{kind};base64,{base64.b64encode(body).decode()}"
