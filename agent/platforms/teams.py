"""Microsoft Teams' web client (``https://teams.live.com/meet/<id>?p=…`` and legacy links).

Selectors and texts are public facts from meeting-bot code that drives the real Teams web
client (digest: ``../shared/research/platforms.md``). Source abbreviations beside each entry:

- V09: Vexa-ai/vexa v0.9 ``platforms/msteams/*``
- VH: Vexa-ai/vexa HEAD ``modules/join/src/msteams/*``
- AT: attendee-labs/attendee ``teams_ui_methods.py``
"""

from __future__ import annotations

from typing import ClassVar

from agent.contracts.bot_config import Platform
from agent.platforms.base import MeetingState
from agent.platforms.selector_adapter import SelectorAdapter
from agent.platforms.table import PlatformSelectors, Probe, Target

SELECTORS = PlatformSelectors(
    probes={
        MeetingState.REMOVED: Probe(
            texts=(
                "You've been removed from this meeting",  # AT (#calling-retry-screen-title), V09
            ),
            scoped=(("#calling-retry-screen-title", "removed"),),  # AT
        ),
        MeetingState.ENDED: Probe(
            texts=("The meeting has ended",),  # not confirmed (testmeeting README)
            scoped=(("#calling-retry-screen-title", "meeting has ended"),),  # not confirmed
        ),
        MeetingState.DENIED: Probe(
            texts=(
                "you were denied access to the meeting",  # AT
                "Your request to join was declined",  # AT
                "Sorry, but you were denied",  # V09
                "You were denied entry",  # V09
            ),
        ),
        MeetingState.NOT_FOUND: Probe(
            texts=("we couldn't connect you",),  # AT
        ),
        MeetingState.CANT_JOIN: Probe(
            texts=("Verify you're a real person",),  # AT (captcha; attendee#741)
        ),
        # The organizer's tenant blocks detected external bots (meeting policy
        # ExternalBotAccessMode = BlockDetectedBots, Microsoft Learn "Manage external bots and
        # their access to meetings", 2026). The words the bot is shown are not confirmed.
        MeetingState.BOTS_BLOCKED: Probe(
            texts=(
                "doesn't allow external bots",  # not confirmed
                "external bots can't join",  # not confirmed
                "bots are blocked from joining",  # not confirmed
            ),
        ),
        MeetingState.LOGIN_REQUIRED: Probe(
            css=('input[name="loginfmt"]',),  # AT (the loginfmt sign-in form)
            urls=("login.microsoftonline.com",),  # Vexa #915 (redirect to sign-in)
        ),
        MeetingState.PASSCODE: Probe(
            css=(
                'input[aria-label="Meeting ID"]',  # not confirmed (Join with an ID form)
                'input[aria-label="Meeting passcode"]',  # not confirmed
            ),
        ),
        MeetingState.LOBBY: Probe(
            texts=(
                "Someone will let you in soon",  # AT
                "Someone will let you in shortly",  # V09
                "You're in the lobby",  # V09
                # Meeting-BaaS/meet-teams-bot PR#291 (2026-08): "Hi, <name>. Someone will let you
                # in when the meeting starts." (61 % of one customer's failed Teams bots sat there)
                "Someone will let you in when the meeting starts",
            ),
            css=('[data-tid*="lobby"]',),  # V09
        ),
        MeetingState.IN_MEETING: Probe(
            css=(
                "button#hangup-button",  # V09
                'button[data-tid="hangup-main-btn"]',  # V09
                'button[aria-label="Leave"]',  # V09
            ),
        ),
        MeetingState.PREJOIN: Probe(
            css=(
                '[data-tid="prejoin-join-button"]',  # AT
                '[data-tid="prejoin-display-name-input"]',  # AT
            ),
            texts=("Continue on this browser",),  # V09
        ),
    },
    # Chat messages (V09) and video tiles named in data-tid (VH) hold participants' own words.
    quoted=('[data-tid="chat-pane-message"]', "[data-stream-type][data-tid]"),
    alone_texts=("Waiting for others to join",),  # not confirmed (Teams' empty-call text)
    # Microsoft Learn "Manage external bots and their access to meetings" (2026): with meeting
    # policy ExternalBotAccessMode = RequireApprovalWhenDetected (the default), a participant
    # Teams detects as an external bot is placed in the lobby whatever the meeting's lobby
    # settings and must be admitted explicitly, one at a time, by an organizer (Teams lists it
    # under "Suspected threats", marked "Unverified"; topedia, MC1251206). No public record says
    # the bot's own lobby screen differs from the ordinary one, so the bot cannot tell this hold
    # from a host who has not looked yet: it says so when it enters the lobby.
    lobby_hold=(
        "Teams holds a detected external bot in the lobby whatever the meeting's lobby "
        "settings until an organizer admits it explicitly (meeting policy "
        "ExternalBotAccessMode = RequireApprovalWhenDetected, the default since 2026-06; "
        "listed to the organizer under 'Suspected threats')"
    ),
    meeting_id_input=Target(
        css=('input[aria-label="Meeting ID"]',),  # not confirmed
    ),
    passcode_input=Target(
        css=('input[aria-label="Meeting passcode"]',),  # not confirmed
    ),
    passcode_submit=Target(
        roles=(("button", "Join meeting"),),  # not confirmed
    ),
    title_css=('[data-tid="call-title"]', '[data-tid="meeting-title"]'),  # not confirmed
    # The People button shows the roster; its id appears in public Teams UI-automation code
    # (testmeeting README), not confirmed.
    roster_open=Target(css=("button#roster-button",), roles=(("button", "People"),)),
    prejoin_dismiss=(
        Target(
            roles=(("button", "Continue on this browser"),),
            css=('button:has-text("Continue on this browser")',),  # V09 ("Continue")
        ),
        Target(
            roles=(("button", "Continue without audio or video"),),
            css=('button:has-text("Continue without audio or video")',),  # VH (#226)
        ),
        Target(
            # Force computer audio so remote audio plays in the page (V09).
            css=('[role="radio"][aria-label*="Computer audio"][aria-checked="false"]',),
        ),
    ),
    name_input=Target(
        css=(
            'input[data-tid="prejoin-display-name-input"]',  # AT
            'input[placeholder*="name" i]',  # V09
        ),
    ),
    mic_off=Target(
        css=('[data-tid="toggle-mute"][aria-label="Mute mic"]',),  # AT (toggle-mute)
    ),
    join=Target(
        css=(
            'button[data-tid="prejoin-join-button"]',  # AT
            'button:has-text("Join now")',  # V09
        ),
    ),
    leave=Target(
        css=(
            "button#hangup-button",  # V09
            'button[data-tid="hangup-main-btn"]',  # V09
        ),
        roles=(("button", "Leave"),),  # V09 button[aria-label="Leave"]
    ),
    # The toolbar's microphone button (id from public Teams UI-automation code; the labels
    # are those of the pre-join toggle, AT): not confirmed.
    mic_unmute=Target(
        css=('button#microphone-button[aria-label="Unmute mic"]',),
    ),
    mic_mute=Target(
        css=('button#microphone-button[aria-label="Mute mic"]',),
    ),
    chat_open=Target(
        roles=(("button", "Chat"),),
        css=("button#chat-button",),  # not confirmed
    ),
    chat_input=Target(
        css=('[contenteditable="true"][data-tid*="message"]',),  # V09
    ),
    chat_send=Target(
        css=('button[data-tid="newMessageCommands-send"]',),  # not confirmed
    ),
    hand_raise=Target(
        roles=(("button", "Raise"),),
        css=('button#raisehands-button[aria-label="Raise"]',),  # not confirmed
    ),
    hand_lower=Target(
        roles=(("button", "Lower your hand"),),
        css=('button#raisehands-button[aria-label="Lower your hand"]',),  # not confirmed
    ),
    # AT/VH: toggle-video and "Turn on camera"; #share-button and its labels are not confirmed.
    camera_on=Target(
        css=(
            '[data-tid="toggle-video"][aria-label="Turn on camera"]',
            'button#video-button[aria-label="Turn on camera"]',
        ),
    ),
    share_start=Target(css=('button#share-button[aria-label="Share"]',)),
    share_stop=Target(css=('button#share-button[aria-label="Stop sharing"]',)),
)

# Video tiles: [data-stream-type][data-tid] wrappers name their participant in data-tid (VH);
# the roster lists [data-tid*="roster-item"] entries (VH).
_PARTICIPANTS_JS = """
() => {
  const names = [];
  for (const tile of document.querySelectorAll('[data-stream-type][data-tid]')) {
    const name = tile.getAttribute('data-tid');
    if (name && name.trim()) names.push(name.trim());
  }
  for (const item of document.querySelectorAll('[data-tid*="roster-item"]')) {
    const tid = item.getAttribute('data-tid') || '';
    const name = tid.startsWith('roster-item-') ? tid.slice('roster-item-'.length) : item.innerText;
    if (name && name.trim()) names.push(name.trim());
  }
  return names;
}
"""

# The roster: [data-tid*="roster-item"] entries (VH), the name after the "roster-item-" prefix;
# null while no roster is shown.
_ROSTER_JS = """
() => {
  const items = document.querySelectorAll('[data-tid*="roster-item"]');
  if (!items.length && !document.querySelector('[data-tid="roster-list"]')) return null;
  const names = [];
  for (const item of items) {
    const tid = item.getAttribute('data-tid') || '';
    const name = tid.startsWith('roster-item-') ? tid.slice('roster-item-'.length) : item.innerText;
    if (name && name.trim()) names.push(name.trim());
  }
  return names;
}
"""

# Speaking: an ancestor of the voice-level outline carries vdi-frame-occlusion (V09, VH).
_SPEAKERS_JS = """
() => {
  const names = [];
  for (const outline of document.querySelectorAll('[data-tid="voice-level-stream-outline"]')) {
    const lit = outline.closest('.vdi-frame-occlusion');
    if (!lit) continue;
    const tile = outline.closest('[data-stream-type][data-tid]');
    const name = tile ? tile.getAttribute('data-tid') : '';
    if (name && name.trim()) names.push(name.trim());
  }
  return names;
}
"""

# Messages: [data-tid*="chat-pane-message"] (V09). Sender and text are read from their own
# elements when the message has them, else the message's first line is taken as sender.
_CHAT_JS = """
() => {
  const rows = [];
  let index = 0;
  for (const el of document.querySelectorAll('[data-tid="chat-pane-message"]')) {
    const who = el.querySelector('[data-tid="message-author-name"]');
    const body = el.querySelector('[data-tid="chat-pane-message-body"], [id^="content-"]');
    let sender = who ? who.innerText : '';
    let text = body ? body.innerText : '';
    if (!who || !body) {
      const lines = (el.innerText || '').split('\\n').map((l) => l.trim()).filter(Boolean);
      sender = sender || lines[0] || '';
      text = text || lines.slice(1).join(' ');
    }
    const id = el.getAttribute('data-mid') || el.getAttribute('id') || ('t' + index);
    rows.push([id, sender.trim(), text.trim()]);
    index += 1;
  }
  return rows;
}
"""


class TeamsAdapter(SelectorAdapter):
    """Microsoft Teams web client (the passcode travels as ``?p=``, V09's join URL)."""

    platform: ClassVar[Platform] = Platform.TEAMS
    passcode_param: ClassVar[str | None] = "p"
    selectors: ClassVar[PlatformSelectors] = SELECTORS
    participants_js: ClassVar[str] = _PARTICIPANTS_JS
    speakers_js: ClassVar[str] = _SPEAKERS_JS
    chat_js: ClassVar[str] = _CHAT_JS
    roster_js: ClassVar[str] = _ROSTER_JS
