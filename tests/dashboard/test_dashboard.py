"""The web dashboard in Chromium against a real control plane, testmeeting and agent.

One stack serves every test of the module (the added test time stays near a minute and a
half): ``meetbot serve`` (SQLite, the local launcher, started with the demo's own helpers in
:mod:`meetbot.demo.services`), the testmeeting room of the demo scenario (three people speaking
real recorded speech, :func:`meetbot.demo.scenario.build_scenario`, but a meeting that lasts
until the bot is stopped), two workspaces (``meetbot admin bootstrap`` twice) and Debian's
Chromium driven by Playwright. Everything the user does goes through the page: sign in, the
launch form, the bot's page (live transcript with names, screenshot, speak, stop, then the
meeting summary from the stream's ``summary_ready``), the meeting's page (recording played,
transcript downloaded, the summary); the control plane's language model is a real
OpenAI-compatible server on loopback answering by script (:mod:`tests.intelligence.chat_server`);
a read key finds edit controls disabled with a
reason; another workspace's bot is "not found"; axe-core finds no serious or critical issue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from axe_playwright_python.async_playwright import Axe
from playwright.async_api import Browser, Page, async_playwright, expect

from meetbot.demo.scenario import MEETING_IDS, build_scenario
from meetbot.demo.services import ControlPlane, bootstrap, control_plane_env, free_port
from testmeeting import TestMeetingServer
from tests.intelligence.chat_server import serve as chat_server

pytestmark = [pytest.mark.browser, pytest.mark.asyncio(loop_scope="module")]

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required"]
PLATFORM = "google_meet"
LIVE_WAIT_MS = 120_000
"""Launch to ``active`` and to the first transcript lines on a loaded 2-core machine."""
SPEAKERS = ("Alice", "Bob", "Carol")
PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A 1x1 PNG: the avatar and the shared image (data: URLs need no server)."""
SUMMARY = "The team walked through the demo and agreed on the next steps."
"""What the scripted model answers for the meeting summary."""
SHOTS_ENV = "MEETBOT_DASHBOARD_SHOTS"
"""A folder to save screenshots of the pages in (docs/dashboard/ holds the committed ones)."""


async def _snap(page: Page, name: str) -> None:
    """Save a 1280x800 screenshot of ``page`` as ``name``.png when ``SHOTS_ENV`` names a folder."""
    folder = os.environ.get(SHOTS_ENV)
    if folder:
        await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(path=str(Path(folder) / f"{name}.png"))


def _model_answer(body: dict[str, Any]) -> str:
    """The scripted model: no live actions; the summary cites the transcript's first line."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if schema == "meeting_summary":
        decision = {"text": "Share the notes after the demo", "lines": [1]}
        return json.dumps({"summary": SUMMARY, "decisions": [decision], "action_items": []})
    if schema == "meeting_summary_merge":
        return json.dumps({"summary": SUMMARY})
    return json.dumps({"actions": []})


async def _assert_accessible(page: Page) -> None:
    """axe-core (bundled by axe-playwright-python) finds no serious or critical violation."""
    results = await Axe().run(page)
    serious = [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert not serious, serious


@dataclass
class Stack:
    """The running services and the keys the tests sign in with."""

    url: str
    meeting_url: str
    owner_key: str
    other_key: str
    browser: Browser
    data_dir: Path

    def agent_logs(self, lines: int = 40) -> str:
        """The last ``lines`` lines of each agent's log, for a failure's message."""
        tails = []
        for log in sorted(self.data_dir.glob("bots/*/agent.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            tails.append(f"--- {log.parent.name}/agent.log\n" + "\n".join(tail))
        return "\n".join(tails) or "(no agent log)"

    async def call(self, method: str, path: str, key: str, body: Any = None) -> Any:
        """One API call with ``key``; the parsed JSON answer (asserts a 2xx)."""
        async with (
            aiohttp.ClientSession() as http,
            http.request(
                method, f"{self.url}/api/v1{path}", json=body, headers={"X-API-Key": key}
            ) as answer,
        ):
            assert answer.status < 300, await answer.text()
            return await answer.json()

    async def page(self, key: str | None = None) -> Page:
        """A fresh tab (own session storage), signed in with ``key`` when given."""
        context = await self.browser.new_context(
            viewport={"width": 1280, "height": 800}, accept_downloads=True
        )
        page = await context.new_page()
        await page.goto(f"{self.url}/")
        if key is not None:
            await page.get_by_label("API key").fill(key)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("heading", name="Bots", exact=True)).to_be_visible()
        return page


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory, speech: Path) -> AsyncIterator[Stack]:
    """Control plane, meeting room, two workspaces and Chromium (module docstring)."""
    data_dir = tmp_path_factory.mktemp("dashboard")
    demo = await asyncio.to_thread(
        build_scenario, PLATFORM, audio=[], speech_dir=speech, max_speech_seconds=18
    )
    # The host never ends this meeting: the test stops the bot from the page.
    scenario = demo.scenario.model_copy(update={"end_at": None})
    async with contextlib.AsyncExitStack() as stack:
        server = TestMeetingServer(scenario, port=0, speech_dir=speech)
        await server.start()
        stack.push_async_callback(server.stop)
        model = await stack.enter_async_context(chat_server())
        model.script = _model_answer
        port = free_port()
        env = control_plane_env(data_dir, port, server.browser_args())
        env.update(
            {
                "MEETBOT_INTELLIGENCE_PROVIDER": "openai",
                "MEETBOT_INTELLIGENCE_BASE_URL": model.base_url,
                "MEETBOT_INTELLIGENCE_API_KEY": "test",
                "MEETBOT_INTELLIGENCE_MODEL": "scripted",
                "MEETBOT_INTELLIGENCE_SUMMARY_SETTLE_SECONDS": "0",
                "MEETBOT_INTELLIGENCE_SUMMARY_POLL_SECONDS": "0.5",
            }
        )
        owner_key = await bootstrap(env, "owner@example.org")
        other_key = await bootstrap(env, "stranger@example.org")
        control_plane = ControlPlane(data_dir, env, port)
        stack.push_async_callback(control_plane.stop)
        await control_plane.start()
        playwright = await stack.enter_async_context(async_playwright())
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        stack.push_async_callback(browser.close)
        yield Stack(
            url=control_plane.url,
            meeting_url=server.meeting_url(PLATFORM, MEETING_IDS[PLATFORM], None),
            owner_key=owner_key,
            other_key=other_key,
            browser=browser,
            data_dir=data_dir,
        )


async def test_launch_watch_speak_stop_then_replay_the_meeting(stack: Stack) -> None:
    page = await stack.page(stack.owner_key)

    # Launch from the form into the simulator: a bad timeout first shows the API's message.
    await page.get_by_text("Launch a bot").click()  # the form folds away under the list
    launch = page.locator("#launch")
    await launch.get_by_label("Meeting URL").fill(stack.meeting_url)
    await launch.get_by_label("Bot name").fill("Dashbot")
    await launch.get_by_label("Recording", exact=True).select_option("true")
    await launch.get_by_label("Left-alone timeout (s)").fill("5")
    await launch.get_by_label("Detect actions").check()
    await launch.get_by_role("button", name="Launch bot").click()
    problem = launch.locator('[data-error-for="left_alone_timeout_seconds"]')
    await expect(problem).to_contain_text("validation_error")
    await expect(launch.get_by_label("Left-alone timeout (s)")).to_have_attribute(
        "aria-invalid", "true"
    )
    await launch.get_by_label("Left-alone timeout (s)").fill("")
    await launch.get_by_role("button", name="Launch bot").click()

    # The bot's page: it goes active and the transcript shows names as people speak.
    await expect(page.locator("h1")).to_contain_text("Dashbot")
    await expect(page.locator("h1 .status")).to_have_text("active", timeout=LIVE_WAIT_MS)
    meeting_summary = page.locator("#meeting-summary")
    await expect(meeting_summary).to_contain_text("Written after the meeting ends")
    await expect(page.locator("#timeline")).to_contain_text("joined")
    lines = page.locator("#transcript .line:not(.partial) .who")
    await expect(lines.first).to_be_visible(timeout=LIVE_WAIT_MS)
    await expect(page.locator("#participants")).to_contain_text("Alice")

    # Screenshot, shown inline.
    await page.get_by_role("button", name="Take screenshot").click()
    shot = page.locator("#screenshot img")
    await expect(shot).to_be_visible(timeout=30_000)
    # The <img> has its width and height, so it is visible before its bytes arrive:
    # decode() waits for them, and rejects if the picture's URL does not serve an image.
    assert await shot.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0

    # By now two people have spoken: the lines name them (the speaker the platform showed;
    # "Unknown speaker" where it showed none).
    await expect(lines.filter(has_text="Bob")).not_to_have_count(0, timeout=LIVE_WAIT_MS)
    names = {name.rstrip(": ") for name in await lines.all_inner_texts()}
    assert {"Alice", "Bob"} <= names, names

    # The user scrolls the transcript up: new lines no longer pull it down until "Jump".
    box = page.locator("#transcript")
    await box.evaluate("b => { b.style.height = '10px'; b.scrollTop = 0; }")
    await box.dispatch_event("scroll")
    jump = page.get_by_role("button", name="Jump to latest")
    await expect(jump).to_be_visible()

    # Speak: accepted by the bot, then its audio reaches the meeting (speak_started).
    speak = page.locator("#speak")
    await speak.get_by_label("Text to say").fill("Hello everyone, I am taking notes.")
    await speak.get_by_role("button", name="Speak", exact=True).click()
    await expect(speak.locator(".form-message")).to_have_text("Done.", timeout=30_000)
    await expect(box).to_contain_text("The bot started speaking", timeout=60_000)
    assert await box.evaluate("b => b.scrollTop") == 0
    await jump.click()
    await expect(jump).to_be_hidden()
    assert await box.evaluate("b => b.scrollTop + b.clientHeight >= b.scrollHeight - 40")
    await box.evaluate("b => { b.style.height = ''; }")

    # Hand, avatar and screen share, each answered by the bot.
    notice = page.locator("#bot-notice")
    await page.get_by_role("button", name="Raise hand").click()
    await expect(notice).to_have_text("Hand raised.")
    await page.get_by_role("button", name="Lower hand").click()
    await expect(notice).to_have_text("Hand lowered.")
    avatar = page.locator("#avatar")
    await avatar.get_by_label("Image URL").fill(PIXEL)
    await avatar.get_by_role("button", name="Set avatar").click()
    await expect(avatar.locator(".form-message")).to_have_text("Done.", timeout=30_000)
    share = page.locator("#share")
    await share.get_by_label("Source", exact=True).select_option("image_url")
    await share.get_by_label("Source URL").fill(PIXEL)
    await share.get_by_role("button", name="Share").click()
    await expect(share.locator(".form-message")).to_have_text("Done.", timeout=30_000)
    await page.get_by_role("button", name="Stop sharing").click()
    await expect(notice).to_have_text("Stopped sharing.", timeout=30_000)

    # Chat: sent from the page, read back as the bot's own message.
    chat = page.locator("#chat-send")
    await chat.get_by_label("Message").fill("Notes will follow by e-mail.")
    await chat.get_by_role("button", name="Send").click()
    await expect(page.locator("#chat-list")).to_contain_text("Notes will follow by e-mail.")

    await _snap(page, "bot-live")
    await _assert_accessible(page)  # the live page, with transcript, screenshot and chat

    # Stop from the page; the bot finishes and the controls say why they are off.
    await page.get_by_role("button", name="Stop bot").click()
    try:
        await expect(page.locator("h1 .status")).to_have_text("completed", timeout=LIVE_WAIT_MS)
    except AssertionError as exc:  # what the agent was doing: the page only says "stopping"
        raise AssertionError(f"{exc}\n{stack.agent_logs()}") from None
    await expect(page.locator("#timeline")).to_contain_text("stopped_by_api")
    screenshot_button = page.get_by_role("button", name="Take screenshot")
    await expect(screenshot_button).to_be_disabled()
    await expect(page.locator("#controls")).to_contain_text("this needs it active")
    # Partials were replaced by their finals in place: one line per segment id, none partial.
    ids = await page.locator("#transcript .line[data-id]").evaluate_all(
        "lines => lines.map((line) => line.dataset.id)"
    )
    assert ids and len(ids) == len(set(ids)), ids
    await expect(page.locator("#transcript .line.partial")).to_have_count(0)
    # The meeting summary comes on the stream (summary_ready) once written, with its link.
    await expect(meeting_summary).to_contain_text(SUMMARY, timeout=LIVE_WAIT_MS)
    await expect(meeting_summary).to_contain_text("Share the notes after the demo")
    await expect(page.locator("#summary-link")).to_have_attribute(
        "href", re.compile(r"^#/meetings/\d+$")
    )

    # The meeting: its recording plays in the page and the transcript downloads.
    await expect(page.locator("#meeting-link")).to_have_attribute(
        "href", re.compile(r"^#/meetings/")
    )
    # Find the meeting by its title and status on the meetings page, and open it.
    await page.get_by_role("link", name="Meetings").click()
    search = page.locator("#meetings-filters")
    await search.get_by_label("Meeting name").fill("DEMO")
    await search.get_by_label("Status").select_option("completed")
    await search.get_by_role("button", name="Filter").click()
    found = page.locator("#meeting-list tbody tr")
    await expect(found).to_have_count(1)
    await expect(found).to_contain_text("meetbot demo")
    await found.get_by_role("link").click()
    await expect(page.locator("h1")).to_contain_text("Meeting #")
    player = page.locator(".recording audio, .recording video").first
    await expect(player).to_be_attached(timeout=30_000)
    played = await player.evaluate(
        """async (media) => {
            media.muted = true;
            await media.play();
            await new Promise((done) => setTimeout(done, 1500));
            return {time: media.currentTime, error: media.error && media.error.code};
        }"""
    )
    assert played["error"] is None and played["time"] > 0.5, played
    await expect(page.locator("#stored-transcript .who").first).to_be_visible()
    await expect(page.locator("#stored-summary")).to_contain_text(SUMMARY)
    stored_shot = page.locator("img.shot").first  # the screenshot taken above
    await expect(stored_shot).to_be_visible()
    assert await stored_shot.evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    async with page.expect_download() as waiting:
        await page.get_by_role("button", name="txt", exact=True).click()
    download = await waiting.value
    text = await asyncio.to_thread(Path(await download.path()).read_text)
    assert download.suggested_filename.endswith(".txt")
    assert any(f"] {name}: " in text for name in SPEAKERS), text
    async with page.expect_download() as waiting:
        await page.get_by_role("button", name="json", exact=True).click()
    saved = Path(await (await waiting.value).path())
    segments = json.loads(await asyncio.to_thread(saved.read_text))["segments"]
    assert {"Alice", "Bob"} <= {s["speaker"] for s in segments}, segments
    await _snap(page, "meeting")
    await _assert_accessible(page)  # with the recording's player and the stored transcript

    # Purge asks first, then leaves the anonymised row.
    await page.get_by_role("button", name="Purge meeting…").click()
    await expect(page.locator("#purge")).to_contain_text("for good?")
    await page.get_by_role("button", name="Yes, purge").click()
    await expect(page.locator("h1 + p")).to_contain_text("purged")
    await expect(page.locator("#stored-transcript .line")).to_have_count(0)
    await expect(page.get_by_role("button", name="Purge meeting…")).to_be_disabled()
    await page.context.close()


async def _scheduled_bot(stack: Stack, key: str) -> dict[str, Any]:
    """A bot scheduled a day ahead (no agent runs for it)."""
    when = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    body = {"platform": PLATFORM, "meeting_url": stack.meeting_url, "scheduled_at": when}
    bot: dict[str, Any] = await stack.call("POST", "/bots", key, body)
    assert bot["status"] == "scheduled"
    return bot


async def test_a_read_key_sees_everything_but_cannot_press_edit_controls(stack: Stack) -> None:
    bot = await _scheduled_bot(stack, stack.owner_key)
    made = await stack.call(
        "POST", "/api-keys", stack.owner_key, {"name": "viewer", "permission": "read"}
    )
    page = await stack.page(made["key"])
    reason = "Needs an API key with edit permission"
    await expect(page.locator("#whoami")).to_contain_text("read only")
    await page.get_by_text("Launch a bot").click()
    await expect(page.get_by_role("button", name="Launch bot")).to_be_disabled()
    await expect(page.locator("#launch")).to_contain_text(reason)
    await expect(page.locator("#bot-list")).to_contain_text(bot["native_meeting_id"])

    await page.goto(f"{stack.url}/#/bots/{bot['bot_id']}")
    await expect(page.locator("h1 .status")).to_have_text("scheduled")
    for name in ("Take screenshot", "Stop bot", "Raise hand"):
        button = page.get_by_role("button", name=name)
        await expect(button).to_be_disabled()
        await expect(button).to_have_attribute("title", f"{reason} (this key is read-only)")
    await expect(page.get_by_label("Text to say")).to_be_disabled()

    await page.goto(f"{stack.url}/#/workspace")
    await expect(page.locator("#key-list")).to_contain_text("viewer")
    await expect(page.get_by_role("button", name="Create key")).to_be_disabled()
    await expect(page.get_by_role("button", name="Invite")).to_be_disabled()
    await expect(page.get_by_role("button", name="Add endpoint")).to_be_disabled()
    await page.context.close()


async def test_another_workspaces_bot_is_not_found(stack: Stack) -> None:
    foreign = await _scheduled_bot(stack, stack.other_key)
    page = await stack.page(stack.owner_key)
    await page.goto(f"{stack.url}/#/bots/{foreign['bot_id']}")
    await expect(page.locator("h1")).to_have_text("Not found")
    await expect(page.get_by_role("alert")).to_contain_text(f"No bot {foreign['bot_id']}")
    body = await page.locator("main").inner_text()
    assert foreign["native_meeting_id"] not in body
    await page.goto(f"{stack.url}/#/meetings/{foreign['id']}")
    await expect(page.locator("h1")).to_have_text("Not found")
    await page.context.close()


@pytest.mark.parametrize("where", ["#/signin", "#/bots", "bot", "#/meetings", "#/workspace"])
async def test_no_serious_accessibility_violations(stack: Stack, where: str) -> None:
    page = await stack.page(None if where == "#/signin" else stack.owner_key)
    if where == "bot":
        bot = await _scheduled_bot(stack, stack.owner_key)
        where = f"#/bots/{bot['bot_id']}"
    if where != "#/signin":
        await page.goto(f"{stack.url}/{where}")
        await expect(page.locator("h1")).to_be_visible()
        await page.wait_for_load_state("networkidle")
    await _snap(page, where.strip("#/").split("/")[0] if where.count("/") < 2 else "bot-scheduled")
    await _assert_accessible(page)
    await page.context.close()


async def test_the_workspace_is_managed_from_its_page(stack: Stack) -> None:
    page = await stack.page(stack.owner_key)
    await page.goto(f"{stack.url}/#/workspace")

    # API keys: the secret is shown once, with a copy button; then it can be deleted.
    keys = page.locator("#ws-keys")
    await keys.get_by_label("Name").fill("ci key")
    await keys.get_by_role("button", name="Create key").click()
    secret = keys.locator("[data-secret]")
    await expect(secret).to_have_text(re.compile(r"^mbk_"))
    await expect(keys.get_by_role("button", name="Copy")).to_be_visible()
    row = keys.locator("#key-list tr", has_text="ci key")
    await row.get_by_role("button", name="Delete").click()
    await expect(keys.locator("#key-list")).not_to_contain_text("ci key")

    # Invitations: invite (token shown once), then revoke; a bad address is shown at its field.
    invitations = page.locator("#ws-invitations")
    await invitations.get_by_label("E-mail").fill("not-an-address")
    await invitations.get_by_role("button", name="Invite").click()
    await expect(invitations.locator('[data-error-for="email"]')).not_to_be_empty()
    await invitations.get_by_label("E-mail").fill("new.colleague@example.org")
    await invitations.get_by_role("button", name="Invite").click()
    await expect(invitations.locator("[data-secret]")).to_have_text(re.compile(r"^mbi_"))
    await expect(invitations.locator("#invitation-list")).to_contain_text("new.colleague")
    await invitations.get_by_role("button", name="Revoke").click()
    await expect(invitations.locator("#invitation-list")).to_contain_text("No pending")

    # Webhook endpoints: create with a filter, edit the filter, secret, delivery log.
    hooks = page.locator("#ws-webhooks")
    await hooks.get_by_label("URL").fill("http://127.0.0.1:9/hook")
    await hooks.get_by_label("bot.status_changed").check()
    await hooks.get_by_role("button", name="Add endpoint").click()
    listed = hooks.locator("#webhook-list")
    await expect(listed).to_contain_text("bot.status_changed")
    await hooks.get_by_role("button", name="Edit").click()
    edit = hooks.locator("#webhook-edit")
    await edit.get_by_label("bot.status_changed").uncheck()
    await edit.get_by_label("recording.ready").check()
    await edit.get_by_role("button", name="Save endpoint").click()
    await expect(listed).to_contain_text("recording.ready")
    await expect(listed).not_to_contain_text("bot.status_changed")
    await hooks.get_by_role("button", name="Secret").click()
    await expect(hooks.locator("[data-secret]")).to_have_text(re.compile(r"^whsec_"))
    await hooks.get_by_role("button", name="Delivery log").click()
    await expect(hooks.locator("#delivery-log")).to_be_visible()

    # Action prompt versions and the workspace's settings.
    prompts = page.locator("#ws-prompts")
    await prompts.get_by_label("Name").fill("standup")
    await prompts.get_by_label("Instructions").fill("List the tasks people take on.")
    await prompts.get_by_role("button", name="Save version").click()
    await expect(prompts.locator("#prompt-list")).to_contain_text("standup")
    settings = page.locator("#ws-details")
    await settings.get_by_label("Default action prompt").select_option(label="standup v1")
    await settings.get_by_label("Max meeting duration (s)").fill("30")
    await settings.get_by_role("button", name="Save settings").click()
    await expect(
        settings.locator('[data-error-for="max_meeting_duration_seconds"]')
    ).not_to_be_empty()
    await settings.get_by_label("Max meeting duration (s)").fill("7200")
    await settings.get_by_role("button", name="Save settings").click()
    await expect(settings.locator(".form-message")).to_have_text("Saved.")
    await expect(page.locator("#member-list")).to_contain_text("owner@example.org")
    await page.context.close()


async def test_signing_in_and_moving_around_work_from_the_keyboard(stack: Stack) -> None:
    page = await stack.page()
    await expect(page.get_by_label("API key")).to_be_focused()
    await page.keyboard.type(stack.owner_key)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Bots", exact=True)).to_be_visible()
    await expect(page.locator("#view")).to_be_focused()  # a new view takes the focus
    await page.keyboard.press("Tab")
    await expect(page.locator("summary")).to_be_focused()  # its first control
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("button", name="Launch bot")).to_be_visible()
    for _ in range(3):  # back: Sign out, Workspace, Meetings
        await page.keyboard.press("Shift+Tab")
    await expect(page.get_by_role("link", name="Meetings")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Meetings")).to_be_visible()
    await expect(page.get_by_role("link", name="Meetings")).to_have_attribute(
        "aria-current", "page"
    )
    await page.get_by_role("link", name="Skip to content").focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#view")).to_be_focused()
    assert page.url.endswith("#/meetings")
    await page.get_by_role("button", name="Sign out").focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_label("API key")).to_be_focused()
    assert await page.evaluate("sessionStorage.length") == 0
    await page.context.close()
