"""The platform adapter seam (docs/architecture.md §4): what the bot needs from a web client.

An adapter knows one platform's web client: how to get from its meeting URL into the meeting,
how to tell which screen the page shows (:class:`MeetingState`), who is there, who speaks, the
chat, the hand, and how to leave. Timeouts, retries and the status machine are the caller's
(``agent/meeting/bot.py``); adapters do the one thing. A capability a platform lacks raises
:class:`~agent.process.errors.CapabilityNotSupported`.

Every adapter is a :class:`~agent.platforms.selector_adapter.SelectorAdapter` driven by its
platform's table (:mod:`agent.platforms.table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from playwright.async_api import Page

from agent.contracts.bot_config import Platform


class MeetingState(StrEnum):
    """What the meeting page shows, as far as the bot is concerned."""

    LOADING = "loading"
    PREJOIN = "prejoin"
    LOBBY = "lobby"
    IN_MEETING = "in_meeting"
    DENIED = "denied"
    NO_ANSWER = "no_answer"
    NOT_FOUND = "not_found"
    REMOVED = "removed"
    ENDED = "ended"
    LOGIN_REQUIRED = "login_required"
    CANT_JOIN = "cant_join"
    RTMS_REQUIRED = "rtms_required"
    BOTS_BLOCKED = "bots_blocked"
    PASSCODE = "passcode"


@dataclass(frozen=True, slots=True)
class ChatLine:
    """A chat message read from the page: ``key`` is stable across polls."""

    key: str
    sender: str
    text: str


@dataclass(frozen=True, slots=True)
class Presence:
    """Who else is in the meeting, by every signal the page gives.

    Attributes:
        names: Other participants' names from the tiles and lists, the bot excluded.
        count: The platform's own participant count, the bot included, if it shows one.
        only_you: The page says the bot is the only one there.
        source: Where the names came from: ``list`` (the platform's participants list or
            panel, its word on who is present) or ``tiles`` (the video tiles shown).
    """

    names: list[str]
    count: int | None = None
    only_you: bool = False
    source: str = "tiles"

    def others(self) -> int:
        """Return how many others are present.

        The "only you" text wins, then the platform's count, then the names (a list can lag
        or hold stale tiles; a count or text is the platform's word).
        """
        if self.only_you:
            return 0
        if self.count is not None:
            return max(self.count - 1, 0)
        return len(self.names)


TERMINAL_STATES: frozenset[MeetingState] = frozenset(
    {
        MeetingState.REMOVED,
        MeetingState.ENDED,
        MeetingState.DENIED,
        MeetingState.NO_ANSWER,
        MeetingState.NOT_FOUND,
        MeetingState.CANT_JOIN,
        MeetingState.RTMS_REQUIRED,
        MeetingState.BOTS_BLOCKED,
        MeetingState.LOGIN_REQUIRED,
    }
)
"""Screens after which the bot cannot stay: the watchdog ends the bot on any of them."""

EVALUATE_TIMEOUT_S = 20.0
"""Default longest a page evaluation may take before the page counts as hung, in seconds
(``MEETBOT_AGENT_PAGE_TIMEOUT_SECONDS``; a bot VM under software emulation needs more)."""


class PlatformAdapter(Protocol):
    """What the bot needs from a platform's web client (docs/architecture.md §4).

    Every method takes the meeting page. Names are as the platform shows them.
    """

    @property
    def platform(self) -> Platform:
        """The platform this adapter drives."""
        ...

    @property
    def audio_per_participant(self) -> bool:
        """Whether each remote audio track carries one participant (else one mixed track)."""
        ...

    @property
    def lobby_hold(self) -> str:
        """Why the platform may hold a bot in its lobby regardless of the meeting ("" if never)."""
        ...

    def meeting_url(self, url: str, passcode: str | None = None) -> str:
        """The URL the browser opens for a meeting URL (and passcode) of this platform."""
        ...

    def link_passcode(self, url: str) -> str | None:
        """The passcode a meeting link of this platform carries (``pwd=``, ``p=``), if any."""
        ...

    async def prepare(self, page: Page, bot_name: str) -> bool:
        """Pass pre-join screens, fill the name, mute; returns whether the join button is ready."""
        ...

    async def click_join(self, page: Page) -> None:
        """Click "Join now" / "Ask to join" / "Join"."""
        ...

    async def enter_passcode(self, page: Page, meeting_id: str, passcode: str | None) -> bool:
        """Fill a passcode prompt (and its meeting-ID field) and submit; False without one."""
        ...

    async def state(self, page: Page) -> MeetingState:
        """Which screen the page shows now."""
        ...

    async def participants(self, page: Page, bot_name: str) -> list[str]:
        """Other participants' names, in page order, the bot excluded."""
        ...

    async def presence(self, page: Page, bot_name: str, quiet_s: float = 0.0) -> Presence:
        """Other participants by every signal: names, the platform's count, "only you" texts.

        ``quiet_s``: seconds nobody was seen speaking or heard; long enough, the tiles are
        checked against the participants list.
        """
        ...

    async def meeting_title(self, page: Page) -> str | None:
        """The meeting's title as the page shows it, if it shows one."""
        ...

    async def accept_notices(self, page: Page) -> bool:
        """Accept notices over the meeting that hold its media back; True when one was."""
        ...

    async def speakers(self, page: Page) -> set[str]:
        """Names whose active-speaker indicator is lit."""
        ...

    async def open_chat(self, page: Page) -> None:
        """Open the chat panel so messages can be read."""
        ...

    async def read_chat(self, page: Page) -> list[ChatLine]:
        """Chat messages in the panel, oldest first."""
        ...

    async def send_chat(self, page: Page, text: str) -> None:
        """Send a chat message to everyone."""
        ...

    async def set_hand(self, page: Page, raised: bool) -> None:
        """Raise or lower the bot's hand."""
        ...

    async def set_sharing(self, page: Page, on: bool) -> None:
        """Start (the page then calls ``getDisplayMedia``) or stop presenting the screen."""

    async def set_microphone(self, page: Page, on: bool) -> None:
        """Unmute (``on``) or mute the bot's microphone with the meeting's own button."""
        ...

    async def leave(self, page: Page) -> None:
        """Leave the meeting cleanly (and confirm when asked)."""
        ...
