"""A platform's selector table: the elements and texts that tell its screens and drive it.

Each platform module (``google_meet``, ``zoom``, ``teams``) fills one
:class:`PlatformSelectors`, citing its sources beside each entry;
:class:`~agent.platforms.selector_adapter.SelectorAdapter` drives the page from it. State probes
(:class:`Probe`) are checked in :data:`STATE_ORDER`; actions locate a :class:`Target` by role
and label first, CSS after.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.platforms.base import MeetingState


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
