"""Answering a platform's passcode prompt while the bot joins.

The passcode is the API's ``passcode``, else the one the meeting link carries (Zoom's ``pwd=``,
Teams' ``p=``). A name box beside the prompt is filled first. The prompt is answered again when
it still shows :data:`PASSCODE_RETRY_S` after an answer, up to :data:`PASSCODE_TRIES` answers;
then the passcode was refused. Logs name the prompt and where the passcode came from, never the
passcode.
"""

from __future__ import annotations

import asyncio
import logging

from playwright.async_api import Page

from agent.contracts.bot_config import BotConfig
from agent.contracts.status import StatusReason
from agent.platforms.base import PlatformAdapter
from agent.process.errors import BrowserError, JoinFailed

log = logging.getLogger(__name__)

# A passcode prompt still showing this long after an answer is answered again, up to
# PASSCODE_TRIES answers; then the passcode was refused (join_error).
PASSCODE_RETRY_S = 3.0
PASSCODE_TRIES = 2


class PasscodeAnswer:
    """Answers one bot's passcode prompts (see the module docstring).

    Args:
        adapter: The platform adapter that fills the prompt.
        config: The bot's config (``passcode``, ``meeting_url``, ``native_meeting_id``, name).
    """

    def __init__(self, adapter: PlatformAdapter, config: BotConfig) -> None:
        self._adapter = adapter
        self._config = config
        self._answered_at: float | None = None
        self._tries = 0

    async def answer(self, page: Page) -> None:
        """Answer the prompt ``page`` shows, unless the last answer is still being checked.

        Raises:
            JoinFailed: ``join_error`` at once when the bot has no passcode to give, and when
                the prompt still shows after the last answer (the passcode was refused).
        """
        passcode, source = self._config.passcode, "passcode"
        if not passcode:
            passcode = self._adapter.link_passcode(self._config.meeting_url)
            source = "the meeting link"
        if not passcode:
            log.warning("passcode prompt, and the bot has no passcode")
            raise JoinFailed(StatusReason.JOIN_ERROR, "the meeting asks for a passcode")
        now = asyncio.get_running_loop().time()
        if self._answered_at is not None and now - self._answered_at < PASSCODE_RETRY_S:
            return  # the page is still checking the last answer
        if self._tries >= PASSCODE_TRIES:
            log.warning(
                "the passcode prompt refused the passcode",
                extra={"passcode_source": source, "tries": self._tries},
            )
            raise JoinFailed(
                StatusReason.JOIN_ERROR, f"the passcode prompt refused the passcode ({source})"
            )
        self._answered_at = now
        self._tries += 1
        await self._adapter.prepare(page, self._config.settings.bot_name)
        try:
            await self._adapter.enter_passcode(page, self._config.native_meeting_id or "", passcode)
        except BrowserError as exc:
            log.warning("passcode prompt not usable", extra={"error": str(exc)})
            return
        log.info(
            "passcode prompt answered", extra={"passcode_source": source, "tries": self._tries}
        )
