"""Who else is in the meeting, by every signal a platform's page gives.

:class:`Roster` reads the participants a page shows (the tiles, or the participants list while
it is open), the platform's own participant count and its "only you" texts into a
:class:`~agent.platforms.base.Presence`. Where no count confirms the tiles and either they name
only some (a speaker view) or they name someone although nobody was seen speaking or heard for
``ROSTER_CONFIRM_QUIET_S`` (a tile left behind by someone gone), it opens the participants list
(at most every ``ROSTER_RECHECK_S``) and reads it, showing the chat panel again if opening the
list closed it; between two openings the list's last names stand, with anyone new the tiles
show.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from playwright.async_api import Page

from agent.platforms.base import Presence
from agent.platforms.driver import PageDriver
from agent.platforms.screens import ScreenReader
from agent.platforms.table import PlatformSelectors

log = logging.getLogger(__name__)

ROSTER_CONFIRM_QUIET_S = 3.0
"""Seconds of nobody seen speaking or heard after which tiles that name someone are checked
against the participants list (a tile can stay behind someone who left)."""

ROSTER_RECHECK_S = 3.0
"""Least seconds between two openings of a participants list that the tiles need (a stale
view's names are then corrected within this, plus a read)."""


class Roster:
    """Reads one platform page's participants (see the module docstring).

    Args:
        driver: Evaluates the readers and clicks the list and chat buttons.
        selectors: The platform's table (``alone_texts``, ``roster_open``, ``chat_input``,
            ``chat_open``).
        screens: Tells whether the page shows an "only you" text.
        panels: Held while the list is opened: one side panel at a time on some platforms,
            so the list check and a chat being sent must not switch it under each other.
        participants_js: ``() => [name, ...]`` of every participant the page shows, the bot
            included.
        count_js: ``() =>`` the platform's participant count (the bot included), or null; ""
            where the platform shows none.
        roster_js: ``() => [name, ...]`` of the participants list while the page shows it,
            else null; "" where there is none.
        tiles_name_everyone: Whether the tiles name everyone present (a grid of all).
        self_markers: Texts that mark the bot's own entry in lists ("(you)").
    """

    def __init__(
        self,
        driver: PageDriver,
        selectors: PlatformSelectors,
        screens: ScreenReader,
        panels: asyncio.Lock,
        *,
        participants_js: str,
        count_js: str,
        roster_js: str,
        tiles_name_everyone: bool,
        self_markers: tuple[str, ...],
    ) -> None:
        self._driver = driver
        self._selectors = selectors
        self._screens = screens
        self._panels = panels
        self._participants_js = participants_js
        self._count_js = count_js
        self._roster_js = roster_js
        self._tiles_name_everyone = tiles_name_everyone
        self._self_markers = self_markers
        # Loop time the participants list was last opened to confirm the tiles, and its names.
        self._checked_at: float | None = None
        self._last_listed: list[str] | None = None
        self._tiles_at_list: list[str] = []

    async def participants(self, page: Page, bot_name: str) -> list[str]:
        """Other participants in page order, duplicates and the bot removed."""
        return self._others(
            await self._driver.evaluate(page, self._participants_js) or [], bot_name
        )

    async def presence(self, page: Page, bot_name: str, quiet_s: float = 0.0) -> Presence:
        """Names, the platform's count and its "only you" texts (see the module docstring).

        Args:
            page: The meeting page.
            bot_name: The bot's own name (left out).
            quiet_s: Seconds nobody was seen speaking or heard.
        """
        names = await self.participants(page, bot_name)
        count: int | None = None
        if self._count_js:
            raw = await self._driver.evaluate(page, self._count_js)
            if isinstance(raw, int | float) and raw >= 0:
                count = int(raw)
        only_you = False
        if self._selectors.alone_texts:
            only_you = await self._screens.shows_text(page, self._selectors.alone_texts)
        listed = await self._listed(page, bot_name)
        confirmed = count is not None and max(count - 1, 0) == len(names)
        doubted = bool(names) and count is None and quiet_s >= ROSTER_CONFIRM_QUIET_S
        needs_list = not confirmed and (not self._tiles_name_everyone or doubted)
        if listed is None and needs_list and self._list_due():
            listed = await self._open_list(page, bot_name)
        if listed is not None:
            self._last_listed, self._tiles_at_list = listed, names
            return Presence(listed, count, only_you, "list")
        if needs_list and self._last_listed is not None:
            # The list's last word (at most ROSTER_RECHECK_S old), and whoever the tiles show
            # that they did not show then (a join is seen at once, a leave at the next check).
            seen = set(self._last_listed) | set(self._tiles_at_list)
            merged = self._last_listed + [n for n in names if n not in seen]
            return Presence(merged, count, only_you, "list")
        return Presence(names, count, only_you)

    def _is_self(self, name: str, bot_name: str) -> bool:
        lowered = name.lower()
        return lowered == bot_name.lower() or any(m in lowered for m in self._self_markers)

    def _others(self, names: list[Any], bot_name: str) -> list[str]:
        """``names`` whitespace-collapsed, without blanks, duplicates and the bot."""
        result: list[str] = []
        for raw in names:
            name = " ".join(str(raw).split())
            if name and not self._is_self(name, bot_name) and name not in result:
                result.append(name)
        return result

    async def _listed(self, page: Page, bot_name: str) -> list[str] | None:
        """The participants list's names (the bot excluded), or None when it is not shown."""
        if not self._roster_js:
            return None
        raw = await self._driver.evaluate(page, self._roster_js)
        if not isinstance(raw, list):
            return None
        return self._others(raw, bot_name)

    def _list_due(self) -> bool:
        """Whether the participants list may be opened now (see :meth:`presence`)."""
        if not self._roster_js or not self._selectors.roster_open:
            return False
        now = asyncio.get_running_loop().time()
        if self._checked_at is not None and now - self._checked_at < ROSTER_RECHECK_S:
            return False
        self._checked_at = now
        return True

    async def _open_list(self, page: Page, bot_name: str) -> list[str] | None:
        """Open the participants list, read it, and show the chat again if it went."""
        async with self._panels:
            s, driver = self._selectors, self._driver
            chat_was_open = await driver.visible(page, s.chat_input)
            if not await driver.click_if_visible(page, s.roster_open):
                return None
            listed: list[str] | None = None
            for _ in range(10):
                listed = await self._listed(page, bot_name)
                if listed is not None:
                    break
                await asyncio.sleep(0.1)
            if chat_was_open and not await driver.visible(page, s.chat_input):
                # One side panel at a time (the list replaced the chat): the chat comes back,
                # and its history with it; the list is opened again at the next check.
                await driver.click_if_visible(page, s.chat_open)
            log.debug("participants list read", extra={"participants": len(listed or [])})
            return listed
