"""A screen no adapter knows, reported for operators: its text in the log, a screenshot stored.

The page watchdog (:mod:`agent.meeting.watchdog`) hands over the visible text of a screen its
adapter does not name (once per text) before it ends the bot with ``page_lost``; the report
lets operators see the screens the adapters lack. The screenshot is an artifact like the
``screenshot`` command's (``unknown-screen-{n}``), uploaded to a slot the control plane names
when the bot is linked, else kept in the uploader's own storage.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from playwright.async_api import Error as PlaywrightError

from agent.browser.session import BrowserSession
from agent.contracts.link import ArtifactKind
from agent.link.artifacts import ArtifactUploader
from agent.meeting.commands import CommandHandler
from agent.process.errors import BrowserError, CommandError

log = logging.getLogger(__name__)

# Longest an unknown screen's screenshot and its upload may hold the watchdog.
UNKNOWN_SHOT_TIMEOUT_S = 10.0


class UnknownScreens:
    """Reports one bot's unknown screens (see the module docstring).

    Args:
        browser: The bot's browser (the page's URL and screenshot).
        commands: Stores the screenshot and reports the artifact, as for a command.
        uploader: Asks the control plane for an upload slot.
        control_plane_url: The control plane the bot is linked to; None: not linked (the
            screenshot stays in the uploader's storage).
        bot_id: The bot's id (a UUID string).
    """

    def __init__(
        self,
        browser: BrowserSession,
        commands: CommandHandler,
        uploader: ArtifactUploader,
        control_plane_url: str | None,
        bot_id: str,
    ) -> None:
        self._browser = browser
        self._commands = commands
        self._uploader = uploader
        self._control_plane_url = control_plane_url
        self._bot_id = bot_id
        self._count = 0

    async def report(self, text: str) -> None:
        """Log a screen no adapter probe knows, with its text and a screenshot artifact.

        Args:
            text: The screen's visible text. Never raises for a screenshot that fails.
        """
        self._count += 1
        artifact_id = f"unknown-screen-{self._count}"
        log.warning(
            "unknown screen",
            extra={"screen_text": text, "artifact_id": artifact_id, "url": self._page_url()},
        )
        try:
            await asyncio.wait_for(self._store_screenshot(artifact_id), UNKNOWN_SHOT_TIMEOUT_S)
        except (BrowserError, CommandError, PlaywrightError, RuntimeError, TimeoutError) as exc:
            log.warning("unknown screen not captured", extra={"error": type(exc).__name__})

    def _page_url(self) -> str:
        """The page's URL without its query (a passcode may ride in it)."""
        try:
            url = self._browser.page.url
        except RuntimeError:
            return ""
        return url.split("?", 1)[0]

    async def _store_screenshot(self, artifact_id: str) -> None:
        """Store a screenshot of the page in the bot's artifacts and report it."""
        captured_at = datetime.now(UTC)
        png = await self._browser.screenshot()
        slot = None
        if self._control_plane_url:
            slot = await self._uploader.request_slot(
                self._control_plane_url,
                self._bot_id,
                ArtifactKind.SCREENSHOT,
                f"{artifact_id}.png",
                "image/png",
                len(png),
            )
        await self._commands.store_screenshot(png, captured_at, artifact_id, slot)
