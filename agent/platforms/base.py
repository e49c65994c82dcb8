"""The platform adapter seam and a base that drives a page from a selector table.

The seam is docs/architecture.md §4.

An adapter knows one platform's web client: how to get from its meeting URL into the meeting,
how to tell which screen the page shows (:class:`MeetingState`), who is there, who speaks, the
chat, the hand, and how to leave. Timeouts, retries and the status machine are the caller's
(``agent/bot.py``); adapters do the one thing. A capability a platform lacks raises
:class:`~agent.errors.CapabilityNotSupported`.

:class:`SelectorAdapter` implements the protocol from a :class:`PlatformSelectors` table. State
probes run as one page evaluation over visible texts and CSS selectors (cheap enough to poll
four times a second); actions use role and label locators first, CSS after, as the tables list.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator, Page

from agent.contracts.bot_config import Platform
from agent.errors import BrowserError, CapabilityNotSupported

log = logging.getLogger(__name__)


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
class Probe:
    """Evidence of one state, any one candidate suffices.

    Attributes:
        texts: Case-insensitive substrings of the page's visible text (full page, banner,
            dialog or modal alike; the chat and people lists excluded, see
            :attr:`PlatformSelectors.quoted`), or of a visible dialog's/alert's ``aria-label``.
        css: CSS selectors of which one visible match suffices.
        scoped: ``(css, text)`` pairs: a visible element matching ``css`` whose text or
            ``aria-label`` contains ``text`` (a short text such as "Meeting ended" counts only
            in a heading, dialog or button, never in a sentence elsewhere).
        urls: Substrings of the page's URL (a redirect to a sign-in host).
    """

    texts: tuple[str, ...] = ()
    css: tuple[str, ...] = ()
    scoped: tuple[tuple[str, str], ...] = ()
    urls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Target:
    """Candidates for one element, tried in order: role+name pairs, labels, then CSS."""

    roles: tuple[tuple[str, str], ...] = ()
    labels: tuple[str, ...] = ()
    css: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.roles or self.labels or self.css)


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


@dataclass(frozen=True)
class PlatformSelectors:
    """One platform's elements and texts. Sources are cited beside each entry in the modules."""

    # States, checked in :data:`STATE_ORDER`.
    probes: dict[MeetingState, Probe]
    # Pre-join screens: buttons clicked when present, in order (launcher, permission dialogs).
    prejoin_dismiss: tuple[Target, ...]
    name_input: Target
    mic_off: Target
    join: Target
    leave: Target
    leave_confirm: Target = field(default_factory=Target)
    # The in-meeting microphone button in each state: unmute shows while muted, mute while on.
    mic_unmute: Target = field(default_factory=Target)
    mic_mute: Target = field(default_factory=Target)
    chat_open: Target = field(default_factory=Target)
    chat_input: Target = field(default_factory=Target)
    chat_send: Target = field(default_factory=Target)
    hand_raise: Target = field(default_factory=Target)
    hand_lower: Target = field(default_factory=Target)
    # The camera toggle while the camera is off ("Turn on camera"), clicked before joining, and
    # the share control and its stop while sharing (issue 14).
    camera_on: Target = field(default_factory=Target)
    share_start: Target = field(default_factory=Target)
    share_stop: Target = field(default_factory=Target)
    # Where participants' own words appear (chat messages, names): excluded from text probes,
    # so a chat line "the meeting has ended" never ends the bot.
    quoted: tuple[str, ...] = ()
    # Passcode prompts: the passcode input and its submit button (and a meeting-ID input for
    # forms that ask for both).
    passcode_input: Target = field(default_factory=Target)
    meeting_id_input: Target = field(default_factory=Target)
    passcode_submit: Target = field(default_factory=Target)
    # The meeting's title as the page shows it once joined (first non-empty match wins).
    title_css: tuple[str, ...] = ()
    # Visible texts meaning nobody else is in the meeting ("You're the only one here").
    alone_texts: tuple[str, ...] = ()
    # The button that shows the participants list (read by ``SelectorAdapter.roster_js``).
    roster_open: Target = field(default_factory=Target)
    # Notices over the meeting that every participant must accept to stay and receive media
    # (another notetaker's "Your call audio and video will be shared with …"): clicked while
    # the bot is in the meeting, in order.
    meeting_notices: tuple[Target, ...] = ()
    # Why this platform may hold a bot in its lobby whatever the meeting's own lobby settings
    # (a bot-detection policy), logged once when the bot enters the lobby so an operator knows
    # whom to ask; empty where the platform has no such hold.
    lobby_hold: str = ""


# Terminal screens first: a removal dialog can sit on top of the meeting's toolbar.
STATE_ORDER: tuple[MeetingState, ...] = (
    MeetingState.REMOVED,
    MeetingState.ENDED,
    MeetingState.DENIED,
    MeetingState.NO_ANSWER,
    MeetingState.NOT_FOUND,
    MeetingState.RTMS_REQUIRED,
    MeetingState.BOTS_BLOCKED,
    MeetingState.CANT_JOIN,
    MeetingState.LOGIN_REQUIRED,
    MeetingState.PASSCODE,
    MeetingState.LOBBY,
    MeetingState.IN_MEETING,
    MeetingState.PREJOIN,
)

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

ROSTER_CONFIRM_QUIET_S = 3.0
"""Seconds of nobody seen speaking or heard after which tiles that name someone are checked
against the participants list (a tile can stay behind someone who left)."""

ROSTER_RECHECK_S = 3.0
"""Least seconds between two openings of a participants list that the tiles need (a stale
view's names are then corrected within this, plus a read)."""

EVALUATE_TIMEOUT_S = 20.0
"""Default longest a page evaluation may take before the page counts as hung, in seconds
(``MEETBOT_AGENT_PAGE_TIMEOUT_SECONDS``; a bot VM under software emulation needs more)."""

# A post-call screen by its shape, in any wording (issue 33): no in-meeting control (the
# IN_MEETING probe, checked before), and a control to rejoin, go home or give feedback, or a
# heading / dialog saying the call is over or that you left. Wordings the platforms use (public
# bot code: Meet "Return to home screen" (VH), "You left the meeting" (AT), "Meeting ended"
# (V09); Teams "Rejoin" (PF removal)) and their close variants. "Removed" in a heading or
# dialog of such a screen makes it a removal.
POST_CALL_CONTROL = (
    r"\bre-?join\b|\b(return|back|go( back)?) to (the )?home|\bhome ?(screen|page)\b"
    r"|feedback|\brate (the|this|your)\b|how was (the|this|your)\b"
)
POST_CALL_HEADING = (
    r"\byou( have|'ve|’ve)? left\b|\bleft the (call|meeting)\b"
    r"|\b(call|meeting)( has| is| was)? (ended|over|finished)\b|\bended (the|this) (call|meeting)\b"
    r"|\bthanks? (you )?for (joining|attending)\b"
)
POST_CALL_REMOVED = r"\bremoved\b|\bkicked\b"

_PROBE_JS = """
([texts, selectors, scoped, urls, quoted, shape]) => {
  const visible = (el) => {
    if (!el.getClientRects().length) return false;
    const style = getComputedStyle(el);
    return style.visibility !== 'hidden' && style.display !== 'none';
  };
  const all = (s) => {
    try { return Array.from(document.querySelectorAll(s)).filter(visible); }
    catch (err) { return []; }
  };
  let body = document.body ? document.body.innerText : '';
  for (const s of quoted) {
    for (const el of all(s)) {
      const said = el.innerText || '';
      if (said) body = body.split(said).join(' ');
    }
  }
  const labels = all('[role="dialog"], [role="alertdialog"], [role="alert"]')
    .map((el) => el.getAttribute('aria-label') || '');
  const corpus = (body + '\\n' + labels.join('\\n')).toLowerCase();
  const own = (el) => ((el.innerText || '') + ' ' + (el.getAttribute('aria-label') || ''))
    .toLowerCase();
  const href = location.href.toLowerCase();
  let post = null;
  if (shape) {
    const [control, heading, removed] = shape.map((r) => new RegExp(r, 'i'));
    const controls = all('button, a[href], [role="button"], [role="link"]').map(own);
    const heads = all('h1, h2, h3, [role="heading"], [role="dialog"], [role="alertdialog"], '
      + '[role="alert"], [role="status"]').map(own);
    const said = heads.some((h) => removed.test(h));
    if (said || controls.some((c) => control.test(c)) || heads.some((h) => heading.test(h))) {
      post = said ? 'removed' : 'ended';
    }
  }
  return {
    texts: texts.map((t) => corpus.includes(t.toLowerCase())),
    css: selectors.map((s) => all(s).length > 0),
    scoped: scoped.map(([s, t]) => all(s).some((el) => own(el).includes(t.toLowerCase()))),
    urls: urls.map((u) => href.includes(u.toLowerCase())),
    post,
  };
}
"""


_TITLE_JS = """
(selectors) => {
  for (const s of selectors) {
    let found = [];
    try { found = Array.from(document.querySelectorAll(s)); } catch (err) { continue; }
    for (const el of found) {
      const text = el.getAttribute('data-meeting-title') || el.innerText || el.textContent || '';
      if (text.trim()) return text.trim();
    }
  }
  return null;
}
"""


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
        self.evaluate_timeout_s = evaluate_timeout_s
        # Loop time the participants list was last opened to confirm the tiles, and its names.
        self._roster_checked_at: float | None = None
        self._last_roster: list[str] | None = None
        self._tiles_at_roster: list[str] = []
        # One side panel at a time on some platforms: the list check and a chat being sent
        # must not switch it under each other.
        self._panels = asyncio.Lock()

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

    # ---- locating ---------------------------------------------------------------------

    @staticmethod
    def locate(page: Page, target: Target) -> Locator:
        """One locator matching any candidate of ``target`` (first match wins)."""
        candidates: list[Locator] = [
            page.get_by_role(role, name=name, exact=True)  # type: ignore[arg-type]
            for role, name in target.roles
        ]
        candidates += [page.get_by_label(label, exact=True) for label in target.labels]
        candidates += [page.locator(css) for css in target.css]
        if not candidates:
            raise BrowserError("empty target")
        combined = candidates[0]
        for other in candidates[1:]:
            combined = combined.or_(other)
        return combined.first

    async def visible(self, page: Page, target: Target) -> bool:
        """Whether any candidate of ``target`` is visible now."""
        if not target:
            return False
        with contextlib.suppress(PlaywrightError):
            return await self.locate(page, target).is_visible()
        return False

    async def click_if_visible(self, page: Page, target: Target) -> bool:
        """Click ``target`` when it is visible; returns whether it clicked."""
        if not await self.visible(page, target):
            return False
        with contextlib.suppress(PlaywrightError):
            await self.locate(page, target).click(timeout=2_000)
            return True
        return False

    async def _evaluate(self, page: Page, script: str, arg: Any = None) -> Any:
        try:
            # page.evaluate has no timeout of its own: a hung renderer would hang the bot.
            return await asyncio.wait_for(
                page.evaluate(script, arg), timeout=self.evaluate_timeout_s
            )
        except TimeoutError as exc:
            raise BrowserError("the meeting page stopped answering") from exc
        except PlaywrightError as exc:
            # Navigations destroy the execution context mid-call; the next poll retries.
            if "context was destroyed" in str(exc) or "navigation" in str(exc).lower():
                return None
            raise

    # ---- joining ----------------------------------------------------------------------

    async def prepare(self, page: Page, bot_name: str) -> bool:
        """Dismiss pre-join dialogs, fill the name, mute the mic; True when join is visible."""
        s = self.selectors
        for target in s.prejoin_dismiss:
            if await self.click_if_visible(page, target):
                log.info("pre-join screen passed", extra={"platform": self.platform.value})
        if await self.visible(page, s.name_input):
            field_ = self.locate(page, s.name_input)
            with contextlib.suppress(PlaywrightError):
                if (await field_.input_value(timeout=1_000)) != bot_name:
                    await field_.fill(bot_name, timeout=2_000)
        await self.click_if_visible(page, s.mic_off)
        await self.click_if_visible(page, s.camera_on)
        return await self.visible(page, s.join)

    async def click_join(self, page: Page) -> None:
        """Click the join button (it must be visible and enabled within a few seconds).

        Raises:
            BrowserError: No enabled join button.
        """
        try:
            await self.locate(page, self.selectors.join).click(timeout=5_000)
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
            if s.meeting_id_input and await self.visible(page, s.meeting_id_input):
                await self.locate(page, s.meeting_id_input).fill(meeting_id, timeout=2_000)
            await self.locate(page, s.passcode_input).fill(passcode, timeout=2_000)
            await self.locate(page, s.passcode_submit).click(timeout=5_000)
        except PlaywrightError as exc:
            raise BrowserError("passcode prompt not usable") from exc
        log.info("passcode typed", extra={"platform": self.platform.value})
        return True

    async def state(self, page: Page) -> MeetingState:
        """Probe the page once (one evaluation) and name its screen."""
        probes = self.selectors.probes
        texts: list[str] = []
        css: list[str] = []
        scoped: list[tuple[str, str]] = []
        urls: list[str] = []
        for state in STATE_ORDER:
            probe = probes.get(state, Probe())
            texts += probe.texts
            css += probe.css
            scoped += probe.scoped
            urls += probe.urls
        shape = [POST_CALL_CONTROL, POST_CALL_HEADING, POST_CALL_REMOVED]
        found = await self._evaluate(
            page, _PROBE_JS, [texts, css, scoped, urls, list(self.selectors.quoted), shape]
        )
        if not found:
            return MeetingState.LOADING
        text_hits = dict(zip(texts, found["texts"], strict=True))
        css_hits = dict(zip(css, found["css"], strict=True))
        scoped_hits = dict(zip(scoped, found["scoped"], strict=True))
        url_hits = dict(zip(urls, found["urls"], strict=True))
        for state in STATE_ORDER:
            probe = probes.get(state, Probe())
            if (
                any(text_hits[t] for t in probe.texts)
                or any(css_hits[c] for c in probe.css)
                or any(scoped_hits[pair] for pair in probe.scoped)
                or any(url_hits[u] for u in probe.urls)
            ):
                return state
        # No screen of the table: a post-call screen is still known by its shape.
        if found.get("post") == "removed":
            return MeetingState.REMOVED
        if found.get("post") == "ended":
            return MeetingState.ENDED
        return MeetingState.LOADING

    # ---- in the meeting ---------------------------------------------------------------

    def _is_self(self, name: str, bot_name: str) -> bool:
        lowered = name.lower()
        return lowered == bot_name.lower() or any(m in lowered for m in self.self_markers)

    async def participants(self, page: Page, bot_name: str) -> list[str]:
        """Other participants in page order, duplicates and the bot removed."""
        return self._others(await self._evaluate(page, self.participants_js) or [], bot_name)

    def _others(self, names: list[Any], bot_name: str) -> list[str]:
        """``names`` whitespace-collapsed, without blanks, duplicates and the bot."""
        result: list[str] = []
        for raw in names:
            name = " ".join(str(raw).split())
            if name and not self._is_self(name, bot_name) and name not in result:
                result.append(name)
        return result

    async def meeting_title(self, page: Page) -> str | None:
        """Read the meeting's title from the page; None if none is shown.

        The first non-empty title of :attr:`PlatformSelectors.title_css` (an element's
        ``data-meeting-title`` attribute, else its text), whitespace collapsed.
        """
        if not self.selectors.title_css:
            return None
        raw = await self._evaluate(page, _TITLE_JS, list(self.selectors.title_css))
        title = " ".join(str(raw or "").split())[:300]
        return title or None

    async def presence(self, page: Page, bot_name: str, quiet_s: float = 0.0) -> Presence:
        """Names, the platform's count (:attr:`count_js`) and its "only you" texts.

        The names are the participants list's while the page shows it (:attr:`roster_js`),
        else the tiles'. Where no count confirms the tiles and either they name only some
        (:attr:`tiles_name_everyone` false) or they name someone although nobody was seen
        speaking or heard for :data:`ROSTER_CONFIRM_QUIET_S` (``quiet_s``: a tile left behind
        by someone gone), the list is opened (at most every :data:`ROSTER_RECHECK_S`) and
        read, the chat panel shown again if opening the list closed it, and between two
        openings the list's last names stand (with anyone new the tiles show).
        """
        names = await self.participants(page, bot_name)
        count: int | None = None
        if self.count_js:
            raw = await self._evaluate(page, self.count_js)
            if isinstance(raw, int | float) and raw >= 0:
                count = int(raw)
        only_you = False
        if self.selectors.alone_texts:
            found = await self._evaluate(
                page,
                _PROBE_JS,
                [list(self.selectors.alone_texts), [], [], [], list(self.selectors.quoted), None],
            )
            only_you = bool(found) and any(found["texts"])
        listed = await self._roster(page, bot_name)
        confirmed = count is not None and max(count - 1, 0) == len(names)
        doubted = bool(names) and count is None and quiet_s >= ROSTER_CONFIRM_QUIET_S
        needs_list = not confirmed and (not self.tiles_name_everyone or doubted)
        if listed is None and needs_list and self._roster_due():
            listed = await self._open_roster(page, bot_name)
        if listed is not None:
            self._last_roster, self._tiles_at_roster = listed, names
            return Presence(listed, count, only_you, "list")
        if needs_list and self._last_roster is not None:
            # The list's last word (at most ROSTER_RECHECK_S old), and whoever the tiles show
            # that they did not show then (a join is seen at once, a leave at the next check).
            seen = set(self._last_roster) | set(self._tiles_at_roster)
            merged = self._last_roster + [n for n in names if n not in seen]
            return Presence(merged, count, only_you, "list")
        return Presence(names, count, only_you)

    async def _roster(self, page: Page, bot_name: str) -> list[str] | None:
        """The participants list's names (the bot excluded), or None when it is not shown."""
        if not self.roster_js:
            return None
        raw = await self._evaluate(page, self.roster_js)
        if not isinstance(raw, list):
            return None
        return self._others(raw, bot_name)

    def _roster_due(self) -> bool:
        """Whether the participants list may be opened now (see :meth:`presence`)."""
        if not self.roster_js or not self.selectors.roster_open:
            return False
        now = asyncio.get_running_loop().time()
        if self._roster_checked_at is not None and now - self._roster_checked_at < ROSTER_RECHECK_S:
            return False
        self._roster_checked_at = now
        return True

    async def _open_roster(self, page: Page, bot_name: str) -> list[str] | None:
        """Open the participants list, read it, and show the chat again if it went."""
        async with self._panels:
            return await self._open_roster_unlocked(page, bot_name)

    async def _open_roster_unlocked(self, page: Page, bot_name: str) -> list[str] | None:
        s = self.selectors
        chat_was_open = await self.visible(page, s.chat_input)
        if not await self.click_if_visible(page, s.roster_open):
            return None
        listed: list[str] | None = None
        for _ in range(10):
            listed = await self._roster(page, bot_name)
            if listed is not None:
                break
            await asyncio.sleep(0.1)
        if chat_was_open and not await self.visible(page, s.chat_input):
            # One side panel at a time (the list replaced the chat): the chat comes back, and
            # its history with it; the list is opened again at the next check.
            await self.click_if_visible(page, s.chat_open)
        log.debug("participants list read", extra={"participants": len(listed or [])})
        return listed

    async def accept_notices(self, page: Page) -> bool:
        """Click every visible notice of :attr:`PlatformSelectors.meeting_notices`."""
        accepted = False
        for target in self.selectors.meeting_notices:
            if await self.click_if_visible(page, target):
                log.info("meeting notice accepted", extra={"platform": self.platform.value})
                accepted = True
        return accepted

    async def speakers(self, page: Page) -> set[str]:
        """Names whose speaking indicator is lit."""
        if not self.speakers_js:
            return set()
        names = await self._evaluate(page, self.speakers_js) or []
        return {" ".join(str(n).split()) for n in names if str(n).strip()}

    async def open_chat(self, page: Page) -> None:
        """Open the chat panel unless its input is already visible."""
        s = self.selectors
        if not s.chat_open:
            raise CapabilityNotSupported(self.platform.value, "chat")
        if not await self.visible(page, s.chat_input):
            await self.click_if_visible(page, s.chat_open)

    async def read_chat(self, page: Page) -> list[ChatLine]:
        """Messages in the chat panel, oldest first."""
        if not self.chat_js:
            raise CapabilityNotSupported(self.platform.value, "chat")
        rows = await self._evaluate(page, self.chat_js) or []
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
            box = self.locate(page, s.chat_input)
            try:
                await box.click(timeout=5_000)
                await box.fill(text, timeout=5_000)
                if s.chat_send and await self.visible(page, s.chat_send):
                    await self.locate(page, s.chat_send).click(timeout=5_000)
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
        wanted, other = (s.hand_raise, s.hand_lower) if raised else (s.hand_lower, s.hand_raise)
        if await self.click_if_visible(page, wanted):
            return
        if await self.visible(page, other):
            return
        raise BrowserError("hand button not found")

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
        # A click while the page re-renders its toolbar (just after joining) can be lost, so
        # the control is clicked again while the page has not switched.
        for _ in range(3):
            if await self.visible(page, done):
                return
            if not await self.click_if_visible(page, wanted) and not await self.visible(page, done):
                raise BrowserError("share control not found")
            with contextlib.suppress(PlaywrightError):
                await self.locate(page, done).wait_for(state="visible", timeout=2_000)
        if not await self.visible(page, done):
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
        wanted, other = (s.mic_unmute, s.mic_mute) if on else (s.mic_mute, s.mic_unmute)
        if await self.click_if_visible(page, wanted):
            return
        if await self.visible(page, other):
            return
        raise BrowserError("microphone button not found")

    async def leave(self, page: Page) -> None:
        """Click leave, confirm when the platform asks, then leave the page."""
        s = self.selectors
        if await self.click_if_visible(page, s.leave) and s.leave_confirm:
            for _ in range(10):
                if await self.click_if_visible(page, s.leave_confirm):
                    break
                await asyncio.sleep(0.1)
        # Unloading the page ends the call even where no leave button was reachable.
        with contextlib.suppress(PlaywrightError):
            await page.goto("about:blank", timeout=5_000)
