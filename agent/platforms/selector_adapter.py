"""A :class:`~agent.platforms.base.PlatformAdapter` that drives a page from a selector table.

:class:`SelectorAdapter` joins, sends chat, raises the hand, shares and mutes by clicking the
targets of its platform's :class:`~agent.platforms.table.PlatformSelectors` (role and label
locators first, CSS after, as the table lists them; :class:`~agent.platforms.driver.PageDriver`),
names the page's screen with a :class:`~agent.platforms.screens.ScreenReader` (one evaluation
over visible texts and CSS selectors, cheap enough to poll four times a second) and reads who
is there with a :class:`~agent.platforms.roster.Roster`. Each platform module subclasses it
with its table and page readers, overriding what a table cannot express.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from agent.contracts.bot_config import Platform
from agent.platforms.base import EVALUATE_TIMEOUT_S, ChatLine, MeetingState, Presence
from agent.platforms.driver import PageDriver
from agent.platforms.roster import Roster
from agent.platforms.screens import ScreenReader
from agent.platforms.table import PlatformSelectors, Target
from agent.process.errors import BrowserError, CapabilityNotSupported

log = logging.getLogger(__name__)


class SelectorAdapter:
    """A :class:`PlatformAdapter` driven by :attr:`selectors`; subclasses add the page readers.

    Subclasses set :attr:`platform`, :attr:`selectors` and the JS of
    :attr:`participants_js`, :attr:`speakers_js` and :attr:`chat_js`.
    """

    platform: ClassVar[Platform]
    selectors: ClassVar[PlatformSelectors]
    # One remote audio track per participant (Google Meet), or one mixed track (Zoom, Teams).
    audio_per_participant: ClassVar[bool] = False
    # () => [name, ...] of every participant the page shows, the bot included.
    participants_js: ClassVar[str] = ""
    # () => [name, ...] of lit active-speaker indicators.
    speakers_js: ClassVar[str] = ""
    # () => [[key, sender, text], ...] oldest first.
    chat_js: ClassVar[str] = ""
    # () => the platform's participant count (the bot included), or null when not shown.
    count_js: ClassVar[str] = ""
    # () => [name, ...] of the participants list or panel while the page shows it, else null.
    roster_js: ClassVar[str] = ""
    # Whether the tiles of ``participants_js`` name everyone present (a grid of every
    # participant). False where the page shows a view of some (Zoom's speaker view): the list
    # is then opened whenever no count confirms the tiles (``selectors.roster_open``).
    tiles_name_everyone: ClassVar[bool] = True
    # Texts that mark the bot's own entry in lists ("(You)").
    self_markers: ClassVar[tuple[str, ...]] = ("(you)",)

    # Query parameter carrying the passcode in this platform's join links, if any.
    passcode_param: ClassVar[str | None] = None

    @property
    def lobby_hold(self) -> str:
        """:attr:`PlatformSelectors.lobby_hold` of this platform."""
        return self.selectors.lobby_hold

    def __init__(self, evaluate_timeout_s: float = EVALUATE_TIMEOUT_S) -> None:
        """An adapter whose page evaluations give up after ``evaluate_timeout_s`` seconds."""
        self._driver = PageDriver(evaluate_timeout_s)
        self._screens = ScreenReader(self._driver, self.selectors)
        # One side panel at a time on some platforms: the list check and a chat being sent
        # must not switch it under each other.
        self._panels = asyncio.Lock()
        self._roster = Roster(
            self._driver,
            self.selectors,
            self._screens,
            self._panels,
            participants_js=self.participants_js,
            count_js=self.count_js,
            roster_js=self.roster_js,
            tiles_name_everyone=self.tiles_name_everyone,
            self_markers=self.self_markers,
        )

    def meeting_url(self, url: str, passcode: str | None = None) -> str:
        """The meeting URL, with the passcode added where the platform wants it.

        The passcode is added when the platform carries it in the link and the link lacks it.
        """
        if not passcode or not self.passcode_param:
            return url
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        if any(key == self.passcode_param for key, _ in query):
            return url
        query.append((self.passcode_param, passcode))
        return urlunsplit(parts._replace(query=urlencode(query)))

    def link_passcode(self, url: str) -> str | None:
        """The passcode in the link's :attr:`passcode_param` query parameter, if it has one."""
        if not self.passcode_param:
            return None
        for key, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
            if key == self.passcode_param and value.strip():
                return value.strip()
        return None

    # ---- joining ----------------------------------------------------------------------

    async def prepare(self, page: Page, bot_name: str) -> bool:
        """Dismiss pre-join dialogs, fill the name, mute the mic; True when join is visible."""
        s = self.selectors
        for target in s.prejoin_dismiss:
            if await self._driver.click_if_visible(page, target):
                log.info("pre-join screen passed", extra={"platform": self.platform.value})
        if await self._driver.visible(page, s.name_input):
            field_ = self._driver.locate(page, s.name_input)
            with contextlib.suppress(PlaywrightError):
                if (await field_.input_value(timeout=1_000)) != bot_name:
                    await field_.fill(bot_name, timeout=2_000)
        await self._driver.click_if_visible(page, s.mic_off)
        await self._driver.click_if_visible(page, s.camera_on)
        return await self._driver.visible(page, s.join)

    async def click_join(self, page: Page) -> None:
        """Click the join button (it must be visible and enabled within a few seconds).

        Raises:
            BrowserError: No enabled join button.
        """
        try:
            await self._driver.locate(page, self.selectors.join).click(timeout=5_000)
        except PlaywrightError as exc:
            raise BrowserError("join button not clickable") from exc

    async def enter_passcode(self, page: Page, meeting_id: str, passcode: str | None) -> bool:
        """Type the passcode (and the meeting ID, on forms that ask for both) and submit.

        Args:
            page: The meeting page showing a passcode prompt (:attr:`MeetingState.PASSCODE`).
            meeting_id: The native meeting ID, for forms that ask for it.
            passcode: The bot's passcode.

        Returns:
            False when there is no passcode to type or the platform has no passcode prompt.

        Raises:
            BrowserError: The prompt's fields or button were not usable.
        """
        s = self.selectors
        if not passcode or not s.passcode_input:
            return False
        try:
            if s.meeting_id_input and await self._driver.visible(page, s.meeting_id_input):
                await self._driver.locate(page, s.meeting_id_input).fill(meeting_id, timeout=2_000)
            await self._driver.locate(page, s.passcode_input).fill(passcode, timeout=2_000)
            await self._driver.locate(page, s.passcode_submit).click(timeout=5_000)
        except PlaywrightError as exc:
            raise BrowserError("passcode prompt not usable") from exc
        log.info("passcode typed", extra={"platform": self.platform.value})
        return True

    async def state(self, page: Page) -> MeetingState:
        """Probe the page once (one evaluation) and name its screen."""
        return await self._screens.state(page)

    # ---- in the meeting ---------------------------------------------------------------

    async def participants(self, page: Page, bot_name: str) -> list[str]:
        """Other participants in page order, duplicates and the bot removed."""
        return await self._roster.participants(page, bot_name)

    async def meeting_title(self, page: Page) -> str | None:
        """Read the meeting's title from the page (:attr:`PlatformSelectors.title_css`)."""
        return await self._screens.title(page)

    async def presence(self, page: Page, bot_name: str, quiet_s: float = 0.0) -> Presence:
        """Names, the platform's count (:attr:`count_js`) and its "only you" texts.

        The names are the participants list's while the page shows it (:attr:`roster_js`),
        else the tiles'; see :class:`~agent.platforms.roster.Roster` for when the list is
        opened to confirm the tiles (``quiet_s``: seconds nobody was seen speaking or heard).
        """
        return await self._roster.presence(page, bot_name, quiet_s)

    async def accept_notices(self, page: Page) -> bool:
        """Click every visible notice of :attr:`PlatformSelectors.meeting_notices`."""
        accepted = False
        for target in self.selectors.meeting_notices:
            if await self._driver.click_if_visible(page, target):
                log.info("meeting notice accepted", extra={"platform": self.platform.value})
                accepted = True
        return accepted

    async def speakers(self, page: Page) -> set[str]:
        """Names whose speaking indicator is lit."""
        if not self.speakers_js:
            return set()
        names = await self._driver.evaluate(page, self.speakers_js) or []
        return {" ".join(str(n).split()) for n in names if str(n).strip()}

    async def open_chat(self, page: Page) -> None:
        """Open the chat panel unless its input is already visible."""
        s = self.selectors
        if not s.chat_open:
            raise CapabilityNotSupported(self.platform.value, "chat")
        if not await self._driver.visible(page, s.chat_input):
            await self._driver.click_if_visible(page, s.chat_open)

    async def read_chat(self, page: Page) -> list[ChatLine]:
        """Messages in the chat panel, oldest first."""
        if not self.chat_js:
            raise CapabilityNotSupported(self.platform.value, "chat")
        rows = await self._driver.evaluate(page, self.chat_js) or []
        return [ChatLine(str(k), " ".join(str(s).split()), str(t).strip()) for k, s, t in rows]

    async def send_chat(self, page: Page, text: str) -> None:
        """Type ``text`` into the chat input and send it.

        Raises:
            CapabilityNotSupported: The platform table has no chat input.
            BrowserError: The chat input did not appear.
        """
        s = self.selectors
        if not s.chat_input:
            raise CapabilityNotSupported(self.platform.value, "chat")
        async with self._panels:
            await self.open_chat(page)
            box = self._driver.locate(page, s.chat_input)
            try:
                await box.click(timeout=5_000)
                await box.fill(text, timeout=5_000)
                if s.chat_send and await self._driver.visible(page, s.chat_send):
                    await self._driver.locate(page, s.chat_send).click(timeout=5_000)
                else:
                    await box.press("Enter")
            except PlaywrightError as exc:
                raise BrowserError("chat input not usable") from exc

    async def set_hand(self, page: Page, raised: bool) -> None:
        """Click "Raise hand" or "Lower hand" (nothing to do when already in that state).

        Raises:
            CapabilityNotSupported: The platform table has no hand buttons.
            BrowserError: Neither button is visible.
        """
        s = self.selectors
        if not (s.hand_raise and s.hand_lower):
            raise CapabilityNotSupported(self.platform.value, "hand")
        await self._press(page, s.hand_raise, s.hand_lower, raised, "hand button not found")

    async def set_sharing(self, page: Page, on: bool) -> None:
        """Click the share control (or its stop) and wait until the page shows the other one.

        Raises:
            CapabilityNotSupported: The platform table has no share control.
            BrowserError: Neither control is visible, or the page did not switch after three
                clicks (2 s apart).
        """
        s = self.selectors
        if not (s.share_start and s.share_stop):
            raise CapabilityNotSupported(self.platform.value, "screen share")
        wanted, done = (s.share_start, s.share_stop) if on else (s.share_stop, s.share_start)
        driver = self._driver
        # A click while the page re-renders its toolbar (just after joining) can be lost, so
        # the control is clicked again while the page has not switched.
        for _ in range(3):
            if await driver.visible(page, done):
                return
            if not await driver.click_if_visible(page, wanted) and not await driver.visible(
                page, done
            ):
                raise BrowserError("share control not found")
            with contextlib.suppress(PlaywrightError):
                await driver.locate(page, done).wait_for(state="visible", timeout=2_000)
        if not await driver.visible(page, done):
            raise BrowserError("the page did not switch its share control")

    async def set_microphone(self, page: Page, on: bool) -> None:
        """Click the meeting's unmute (``on``) or mute button; nothing when already so.

        Raises:
            CapabilityNotSupported: The platform table has no in-meeting microphone buttons.
            BrowserError: Neither button is visible.
        """
        s = self.selectors
        if not (s.mic_unmute and s.mic_mute):
            raise CapabilityNotSupported(self.platform.value, "microphone")
        await self._press(page, s.mic_unmute, s.mic_mute, on, "microphone button not found")

    async def _press(
        self, page: Page, on: Target, off: Target, want_on: bool, missing: str
    ) -> None:
        """Click ``on`` (``want_on``) or ``off`` of a two-state button; nothing when already so.

        Raises:
            BrowserError: Neither is visible (``missing`` says which button).
        """
        wanted, other = (on, off) if want_on else (off, on)
        if await self._driver.click_if_visible(page, wanted):
            return
        if await self._driver.visible(page, other):
            return
        raise BrowserError(missing)

    async def leave(self, page: Page) -> None:
        """Click leave, confirm when the platform asks, then leave the page."""
        s = self.selectors
        if await self._driver.click_if_visible(page, s.leave) and s.leave_confirm:
            for _ in range(10):
                if await self._driver.click_if_visible(page, s.leave_confirm):
                    break
                await asyncio.sleep(0.1)
        # Unloading the page ends the call even where no leave button was reachable.
        with contextlib.suppress(PlaywrightError):
            await page.goto("about:blank", timeout=5_000)
