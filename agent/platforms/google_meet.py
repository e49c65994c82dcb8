"""Google Meet's web client.

Selectors and texts are public facts from meeting-bot code that drives the real Meet (digest:
``../shared/research/platforms.md``). Source abbreviations beside each entry:

- V09: Vexa-ai/vexa v0.9 ``platforms/googlemeet/{selectors,join,admission}.ts``
- VH: Vexa-ai/vexa HEAD ``modules/join/src/googlemeet/selectors.ts``
- VC: Vexa-ai/vexa v0.9 ``services/chat.ts``
- AT: attendee-labs/attendee ``google_meet_ui_methods.py``
"""

from __future__ import annotations

from typing import ClassVar

from agent.contracts.bot_config import Platform
from agent.platforms.base import MeetingState
from agent.platforms.selector_adapter import SelectorAdapter
from agent.platforms.table import PlatformSelectors, Probe, Target

# Where short terminal texts count: headings, dialogs, alerts and banners (not a sentence in the
# middle of the meeting page).
_HEADS = 'h1, h2, [role="heading"], [role="dialog"], [role="alertdialog"], [role="alert"]'

SELECTORS = PlatformSelectors(
    probes={
        MeetingState.REMOVED: Probe(
            texts=(
                "You've been removed from the meeting",  # AT (.roSPhc text)
                "You were removed from the meeting",  # V09
            ),
        ),
        MeetingState.ENDED: Probe(
            texts=("Your host ended the meeting for everyone",),  # AT
            css=('[role="dialog"][aria-label*="Meeting has ended"]',),  # V09 (dialog, by label)
            scoped=(
                ('[role="dialog"]', "Meeting has ended"),  # V09 [role="dialog"]:has-text(...)
                (_HEADS, "Meeting has ended"),  # V09, as a banner or full page
                (_HEADS, "Meeting ended"),  # V09 removal check text="Meeting ended"
            ),
        ),
        MeetingState.DENIED: Probe(
            texts=(
                "denied your request",  # VH; AT "Someone in the call denied your request to join"
            ),
            scoped=(("button", "Ask to join again"),),  # VH rejection indicator
        ),
        MeetingState.NO_ANSWER: Probe(
            texts=("No one responded to your request to join the call",),  # AT
        ),
        MeetingState.NOT_FOUND: Probe(
            texts=(
                "Meeting not found",  # V09
                "Can't join the meeting",  # V09
                "Check your meeting code",  # not confirmed (testmeeting's unknown-code page)
            ),
        ),
        MeetingState.CANT_JOIN: Probe(
            texts=(
                "You can't join this video call",  # AT (blocked; PF §5.1 reports)
                # screenappai/meeting-bot #46 (2026-06): after "Ask to join", a flat page "You
                # can't join this meeting" (bots kept out since Meet screens joiners it judges
                # risky, see lobby_hold); attendee PR#156: "You cannot join this meeting" for a
                # meeting that already denied the bot.
                "You can't join this meeting",
                "You cannot join this meeting",
            ),
            css=('iframe[src*="recaptcha"]',),  # VH (needs_human_help)
        ),
        MeetingState.LOGIN_REQUIRED: Probe(
            scoped=(("h1", "Sign in"),),  # AT (a Sign-in h1: login required)
            urls=("accounts.google.com/",),  # not confirmed (Google's sign-in host)
        ),
        MeetingState.LOBBY: Probe(
            texts=(
                "Asking to be let in",  # V09, AT
                "You'll join the call when someone lets you in",  # V09
                "Please wait until a meeting host brings you into the call",  # V09
                # Meeting-BaaS/meet-teams-bot PR#198 (2026-06): this wording, over a lobby that
                # shows the call controls (Leave call included), made bots think they were in.
                "Please wait until a meeting host admits you to the call",
                "Waiting for the host to join",  # AT (host-wait)
            ),
            css=('[aria-label*="waiting room"]',),  # V09
        ),
        MeetingState.IN_MEETING: Probe(
            css=(
                'button[aria-label="Leave call"]',  # V09 admission indicator / leave
                'button[aria-label="Turn on captions"]',  # AT admission indicator
                'button[aria-label*="Chat with everyone"]',  # VC
            ),
        ),
        MeetingState.PREJOIN: Probe(
            css=('input[type="text"][aria-label="Your name"]',),  # V09
            texts=("Ask to join", "Join now"),  # V09, VH, AT
        ),
    },
    # Chat messages (VC) and participant tiles (V09) hold participants' own words.
    quoted=("[data-message-id]", "[data-participant-id]"),
    alone_texts=("You're the only one here",),  # not confirmed (Meet's empty-call text)
    # Google Workspace's "safeguarded guest admit flow" (2026-03, as cloud-captains.com and the
    # press retell it): Meet sorts requests to join into two queues of the host's People panel;
    # the second, for joiners it judges risky (bots, unverified identities), is high-scrutiny
    # and its default action is deny. The knocking joiner's own screen is not recorded as
    # different from the ordinary "Asking to be let in" one.
    lobby_hold=(
        "Meet may list the bot among requests it judges risky, a second queue of the host's "
        "People panel whose default action is deny (Google Workspace, 2026-03); a host must "
        "admit it from there"
    ),
    title_css=("[data-meeting-title]",),  # not confirmed (the call's title, bottom left)
    prejoin_dismiss=(),
    # MB: the People button (nav button[aria-label="People"]) shows the participants list.
    roster_open=Target(css=('button[aria-label="People"]',)),
    # Vexa #1727 (2026-09): with another notetaker in the call (Read AI), Meet shows every
    # participant a dialog "Your call audio and video will be shared with <notetaker>" with
    # "Leave" and "Join now", and hands out no media until "Join now" is clicked; every human
    # clicks it to stay, and the host already admitted the notetaker.
    meeting_notices=(
        Target(
            css=(
                '[role="dialog"]:has-text("audio and video will be shared with") '
                'button:has-text("Join now")',
            ),
        ),
    ),
    name_input=Target(
        labels=("Your name",),  # V09: input[type="text"][aria-label="Your name"]
        css=(
            'input[type="text"][aria-label="Your name"]',  # V09
            "input[jsname][type='text']",  # VH structural fallback
            "div[jscontroller] input[type='text']",  # VH structural fallback
        ),
    ),
    mic_off=Target(
        roles=(("button", "Turn off microphone"),),
        css=('[aria-label*="Turn off microphone"]',),  # V09
    ),
    join=Target(
        # VH races every candidate (bug #380: open meetings show "Join now"); AT's list adds the
        # "anyway"/"here too" variants.
        roles=(
            ("button", "Ask to join"),
            ("button", "Join now"),
            ("button", "Ask to join anyway"),
            ("button", "Join anyway"),
            ("button", "Join the call now"),
            ("button", "Join here too"),
        ),
        css=('button:has-text("Ask to join")', 'button:has-text("Join now")'),  # V09
    ),
    leave=Target(
        roles=(("button", "Leave call"),),
        css=('button[aria-label="Leave call"]',),  # V09
    ),
    leave_confirm=Target(
        roles=(("button", "Just leave the meeting"),),
        css=('button:has-text("Just leave the meeting")',),  # V09
    ),
    # In the call's toolbar; the labels name the action (V09 clicks "Turn off microphone").
    mic_unmute=Target(
        css=('[role="toolbar"] button[aria-label="Turn on microphone"]',),  # V09 (label)
    ),
    mic_mute=Target(
        css=('[role="toolbar"] button[aria-label="Turn off microphone"]',),  # V09
    ),
    chat_open=Target(
        roles=(("button", "Chat with everyone"),),
        css=('button[aria-label*="Chat with everyone"]',),  # VC
    ),
    chat_input=Target(
        labels=("Send a message",),
        css=('textarea[aria-label*="Send a message"]',),  # VC
    ),
    chat_send=Target(
        css=('button[aria-label*="Send"]',),  # VC
    ),
    hand_raise=Target(
        roles=(("button", "Raise hand"),),
        css=('button[aria-label="Raise hand"]',),  # Meet toolbar label (VH lists toolbar buttons)
    ),
    hand_lower=Target(
        roles=(("button", "Lower hand"),),
        css=('button[aria-label="Lower hand"]',),
    ),
    # V09 camera labels; VH: button[aria-label*="Share screen"] ("Present now" in older
    # clients); the stop label "Stop presenting" is not confirmed.
    camera_on=Target(
        roles=(("button", "Turn on camera"),),
        css=('[aria-label="Turn on camera"]',),
    ),
    share_start=Target(
        roles=(("button", "Share screen"), ("button", "Present now")),
        css=('button[aria-label*="Share screen"]',),
    ),
    share_stop=Target(roles=(("button", "Stop presenting"),)),
)

# Tiles: div[data-participant-id], name in span.notranslate or the data-self-name attribute
# (V09). The people panel, when open, lists role=listitem entries labelled by name.
_PARTICIPANTS_JS = """
() => {
  const names = [];
  for (const tile of document.querySelectorAll('div[data-participant-id]')) {
    const label = tile.querySelector('span.notranslate');
    const name = (label && label.textContent) || tile.getAttribute('data-self-name') || '';
    if (name.trim()) names.push(name.trim());
  }
  const list = document.querySelector('[role="list"][aria-label="Participants"]');
  if (list) {
    for (const item of list.querySelectorAll('[role="listitem"]')) {
      const label = item.querySelector('span.notranslate');
      const name = (label && label.textContent) || item.getAttribute('aria-label') || '';
      if (name.trim()) names.push(name.trim());
    }
  }
  return names;
}
"""

# The people panel's list (MB: [role="list"][aria-label="Participants"] of role=listitem entries
# labelled by name; V09: the name in span.notranslate); null while it is not shown.
_ROSTER_JS = """
() => {
  const list = document.querySelector('[role="list"][aria-label="Participants"]');
  if (!list) return null;
  const names = [];
  for (const item of list.querySelectorAll('[role="listitem"]')) {
    const label = item.querySelector('span.notranslate');
    const name = (label && label.textContent) || item.getAttribute('aria-label') || '';
    if (name.trim()) names.push(name.trim());
  }
  return names;
}
"""

# Speaking: the tile carries one of Meet's speaking classes (V09), or a non-zero
# data-audio-level inside it (VH).
_SPEAKERS_JS = """
() => {
  const speaking = ['Oaajhc', 'HX2H7', 'wEsLMd', 'OgVli'];
  const names = [];
  for (const tile of document.querySelectorAll('div[data-participant-id]')) {
    const lit = speaking.some((c) => tile.classList.contains(c) || tile.querySelector('.' + c))
      || !!tile.querySelector('[data-audio-level]:not([data-audio-level="0"])');
    if (!lit) continue;
    const label = tile.querySelector('span.notranslate');
    const name = (label && label.textContent) || tile.getAttribute('data-self-name') || '';
    if (name.trim()) names.push(name.trim());
  }
  return names;
}
"""

# Messages: [data-message-id] (VC). Meet shows a header line (sender, then the time) above the
# first message of a run by one sender; later messages of the run carry only their text.
_CHAT_JS = """
() => {
  const rows = [];
  let sender = '';
  for (const el of document.querySelectorAll('[data-message-id]')) {
    const lines = (el.innerText || '').split('\\n').map((l) => l.trim()).filter(Boolean);
    if (!lines.length) continue;
    let text = lines[0];
    if (lines.length > 1) {
      sender = lines[0].replace(/\\s*\\d{1,2}:\\d{2}(\\s?[AP]\\.?M\\.?)?$/i, '').trim();
      text = lines.slice(1).join('\\n');
    }
    rows.push([el.getAttribute('data-message-id'), sender, text]);
  }
  return rows;
}
"""


class GoogleMeetAdapter(SelectorAdapter):
    """Google Meet web client (``https://meet.google.com/<abc-defg-hij>``)."""

    platform: ClassVar[Platform] = Platform.GOOGLE_MEET
    # Meet sends each participant's audio on a track of its own (platforms.md, "Audio capture").
    audio_per_participant: ClassVar[bool] = True
    selectors: ClassVar[PlatformSelectors] = SELECTORS
    participants_js: ClassVar[str] = _PARTICIPANTS_JS
    speakers_js: ClassVar[str] = _SPEAKERS_JS
    chat_js: ClassVar[str] = _CHAT_JS
    roster_js: ClassVar[str] = _ROSTER_JS
