"""Zoom's web client (``https://app.zoom.us/wc/<id>/join``).

Selectors and texts are public facts from meeting-bot code that drives the real Zoom web
client (digest: ``../shared/research/platforms.md``). Source abbreviations beside each entry:

- VH: Vexa-ai/vexa HEAD ``services/vexa-bot/core/src/platforms/zoom/web/selectors.ts``
  ("verified from live DOM"), which replaced the native SDK (Vexa #1289, PR #1290)
- PF: the digest's Zoom section

Zoom's web client has no public source for raise/lower hand in these bots (PF: "Not in Vexa");
the labels used here are the web client's toolbar labels as the testmeeting README records
them, marked "not confirmed".
"""

from __future__ import annotations

import re
from typing import ClassVar
from urllib.parse import parse_qs, urlencode, urlsplit

from agent.contracts.bot_config import Platform
from agent.platforms.base import MeetingState
from agent.platforms.selector_adapter import SelectorAdapter
from agent.platforms.table import PlatformSelectors, Probe, Target

# Zoom's modals put their message in .zm-modal-body-title (VH, PF "ended modal"); a dialog or
# heading elsewhere counts too.
_MODAL = '.zm-modal-body-title, [role="dialog"], [role="alertdialog"], h1, h2'

SELECTORS = PlatformSelectors(
    probes={
        MeetingState.REMOVED: Probe(
            texts=("You have been removed",),  # VH (.zm-modal-body-title)
        ),
        MeetingState.ENDED: Probe(
            texts=("This meeting has been ended by host",),  # VH (.zm-modal-body-title)
            scoped=((_MODAL, "meeting has been ended"),),  # PF (ended modal)
        ),
        MeetingState.DENIED: Probe(
            texts=("removed you from the waiting room",),  # not confirmed (testmeeting README)
        ),
        MeetingState.NOT_FOUND: Probe(
            texts=(
                "This meeting link is invalid",  # VH ("(3,001)")
            ),
            scoped=(
                (_MODAL, "Invalid meeting ID"),  # issue #13 (the modal a user met)
                (_MODAL, "meeting ID is not valid"),  # not confirmed
                (_MODAL, "Meeting does not exist"),  # not confirmed
            ),
        ),
        # Zoom's web client refusing automated clients (2026): only Zoom's RTMS apps may reach
        # the meeting's content. VH fails fast on it with zoom_requires_rtms; screenappai/
        # meeting-bot #45 and Vexa #345/#706 report it.
        MeetingState.RTMS_REQUIRED: Probe(
            texts=(
                "detected you may be a bot",  # VH anti-bot wall
                "must use Zoom RTMS",  # VH anti-bot wall
            ),
        ),
        MeetingState.LOGIN_REQUIRED: Probe(
            scoped=(
                (_MODAL, "Sign in to join"),  # not confirmed (Vexa #1289 auth_session_missing)
                (_MODAL, "authorized attendees only"),  # not confirmed
            ),
        ),
        # Public Zoom-web automation code types the passcode into #input-for-pwd, on the
        # pre-join form beside #input-for-name or on a prompt after it (issue 33).
        MeetingState.PASSCODE: Probe(
            css=("#input-for-pwd", 'input[type="password"][placeholder*="passcode" i]'),
        ),
        MeetingState.LOBBY: Probe(
            texts=("Please wait, the meeting host will let you in soon",),  # VH
        ),
        MeetingState.IN_MEETING: Probe(
            css=(".meeting-app", 'button[aria-label="Leave"]'),  # VH
        ),
        MeetingState.PREJOIN: Probe(
            css=("#input-for-name", "#inputname", "button.preview-join-button", "#joinBtn"),  # VH
        ),
    },
    # Chat messages and video-tile name footers (VH) hold participants' own words.
    quoted=(".new-chat-message__container", ".video-avatar__avatar-footer"),
    passcode_input=Target(
        css=("#input-for-pwd", 'input[type="password"][placeholder*="passcode" i]'),
    ),
    passcode_submit=Target(
        css=("button.preview-join-button", "#joinBtn"),  # VH (the same join button)
        roles=(("button", "Join"),),
    ),
    title_css=(".meeting-info-container__topic", ".meeting-topic"),  # not confirmed
    # Public Zoom-web bot code opens the participants panel with this label (with or without
    # the "[N] particpants" count appended).
    roster_open=Target(css=('button[aria-label*="open the participants list pane" i]',)),
    prejoin_dismiss=(
        Target(
            roles=(("button", "Continue without microphone and camera"),),  # VH
            css=('button:has-text("Continue without microphone and camera")',),
        ),
    ),
    name_input=Target(
        css=("#input-for-name", "#inputname", 'input[placeholder="Your Name" i]'),  # VH
    ),
    mic_off=Target(
        css=('#preview-audio-control-button[aria-label="Mute"]',),  # VH
    ),
    join=Target(
        roles=(("button", "Join"),),
        css=("button.preview-join-button", "#joinBtn"),  # VH
    ),
    leave=Target(
        roles=(("button", "Leave"),),
        css=('button[aria-label="Leave"]',),  # VH
    ),
    leave_confirm=Target(
        css=("button.leave-meeting-options__btn--danger",),  # VH
    ),
    # The footer's audio button (VH class); labels from public Zoom-web automation code.
    mic_unmute=Target(
        css=('button.join-audio-container__btn[aria-label="unmute my microphone"]',),
    ),
    mic_mute=Target(
        css=('button.join-audio-container__btn[aria-label="mute my microphone"]',),
    ),
    chat_open=Target(
        css=('button[aria-label*="chat panel" i]',),  # VH ("chat panel")
    ),
    chat_input=Target(
        css=('.chat-rtf-box__editor-outer [contenteditable="true"]',),  # VH
    ),
    chat_send=Target(
        css=('button[aria-label="send" i]',),  # VH
    ),
    hand_raise=Target(
        roles=(("button", "Raise Hand"),),  # not confirmed
    ),
    hand_lower=Target(
        roles=(("button", "Lower Hand"),),  # not confirmed
    ),
    # VH: the preview video button; the footer video and share labels are not confirmed.
    camera_on=Target(
        css=(
            '#preview-video-control-button[aria-label="Start Video"]',
            'button.send-video-container__btn[aria-label="start my video"]',
        ),
    ),
    share_start=Target(roles=(("button", "Share Screen"),)),
    share_stop=Target(roles=(("button", "Stop Share"),)),
)

# Names in the footers of the speaker bar's thumbnails (VH, PF), one per participant shown.
# Never the main active-speaker frame: its footer keeps the last speaker after they stop, and
# after they leave (issue 33: a roster that never emptied).
_PARTICIPANTS_JS = """
() => {
  const names = [];
  for (const frame of document.querySelectorAll('.speaker-bar-container__video-frame')) {
    const footer = frame.querySelector('.video-avatar__avatar-footer');
    const name = footer ? footer.textContent : '';
    if (name && name.trim()) names.push(name.trim());
  }
  return names;
}
"""

# The participants panel, Zoom's own list of who is in the meeting: public Zoom-web bot code
# opens it with button[aria-label*="open the participants list pane"] and reads
# .participants-item__display-name in .participants-li rows (null while it is not shown).
_ROSTER_JS = """
() => {
  const rows = document.querySelectorAll('.participants-li');
  const list = document.querySelector('.participants-ul, #participants-ul');
  if (!rows.length && !list) return null;
  const names = [];
  for (const row of rows) {
    const label = row.querySelector('.participants-item__display-name');
    const name = label ? label.textContent : (row.getAttribute('aria-label') || '').split(',')[0];
    if (name && name.trim()) names.push(name.trim());
  }
  return names;
}
"""

# Active speaker, polled (VH every ~250 ms): the --active speaker-bar frame. The main
# active-speaker frame keeps showing the last speaker after they stop, so it names no one
# speaking now.
_SPEAKERS_JS = """
() => {
  const names = [];
  const lit = document.querySelectorAll('.speaker-bar-container__video-frame--active');
  for (const frame of lit) {
    const footer = frame.querySelector('.video-avatar__avatar-footer');
    if (footer && footer.textContent.trim()) names.push(footer.textContent.trim());
  }
  return names;
}
"""

# Messages: .new-chat-message__container with .chat-item__sender and the text box (VH). A
# message without its own sender line continues the previous sender's group.
_CHAT_JS = """
() => {
  const rows = [];
  let sender = '';
  let index = 0;
  for (const el of document.querySelectorAll('.new-chat-message__container')) {
    const who = el.querySelector('.chat-item__sender');
    if (who && who.textContent.trim()) sender = who.textContent.trim();
    const box = el.querySelector('.new-chat-message__text-box');
    const text = box ? box.innerText : el.innerText;
    const id = el.getAttribute('id') || el.getAttribute('data-id') || ('z' + index);
    rows.push([id, sender, (text || '').trim()]);
    index += 1;
  }
  return rows;
}
"""

# The participants button's label carries the count, bot included: VH selects
# button[aria-label*="participants list"]; public Zoom-web automation code records the label
# "open the participants list pane,[2] particpants" (testmeeting README, Zoom's spelling).
_COUNT_JS = """
() => {
  const button = document.querySelector('button[aria-label*="participants list" i]');
  const match = button && /\\[(\\d+)\\]/.exec(button.getAttribute('aria-label') || '');
  return match ? Number(match[1]) : null;
}
"""

_JOIN_PATH = re.compile(r"^/j/(\d{9,11})/?$")


class ZoomAdapter(SelectorAdapter):
    """Zoom web client. ``/j/<id>`` links open as ``/wc/<id>/join`` (VH's join URL)."""

    platform: ClassVar[Platform] = Platform.ZOOM
    selectors: ClassVar[PlatformSelectors] = SELECTORS
    participants_js: ClassVar[str] = _PARTICIPANTS_JS
    speakers_js: ClassVar[str] = _SPEAKERS_JS
    chat_js: ClassVar[str] = _CHAT_JS
    count_js: ClassVar[str] = _COUNT_JS
    roster_js: ClassVar[str] = _ROSTER_JS
    # The speaker bar may be hidden or paged and the main frame shows one (the last) speaker.
    tiles_name_everyone: ClassVar[bool] = False

    passcode_param: ClassVar[str | None] = "pwd"

    def meeting_url(self, url: str, passcode: str | None = None) -> str:
        """``https://<sub>.zoom.us/j/<id>?pwd=…`` → ``https://app.zoom.us/wc/<id>/join?pwd=…``."""
        url = super().meeting_url(url, passcode)
        parts = urlsplit(url)
        match = _JOIN_PATH.match(parts.path)
        if not match or not (parts.hostname or "").endswith("zoom.us"):
            return url
        query = parse_qs(parts.query)
        kept = {"pwd": query["pwd"][0]} if "pwd" in query else {}
        suffix = f"?{urlencode(kept)}" if kept else ""
        return f"https://app.zoom.us/wc/{match.group(1)}/join{suffix}"
