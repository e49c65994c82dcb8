"""What :class:`agent.meeting.watch.MeetingWatch` reports when the meeting's screen goes.

A real Chromium page joins a testmeeting room through the real Meet adapter. The bot's loop
probes the screen, then reads the roster: when the host ends the meeting between the two, the
page has swapped the meeting for the end screen and the roster is empty although nobody left
(CI saw a ``participant_update`` with no one in it after ``room.end()``). The tests call the
roster read at exactly that moment.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Page, async_playwright

from agent.capture.audio import SpeakerActivity
from agent.contracts.bot_config import Platform
from agent.link.events import BotEvents
from agent.meeting.lifecycle import MeetingTimers, Timeouts
from agent.meeting.watch import MeetingWatch
from agent.platforms import adapter_for
from agent.platforms.base import MeetingState, PlatformAdapter
from agent.process.settings import AgentSettings
from agent.sse.log import EventLog
from testmeeting import Room, TestMeetingServer, parse_scenario

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOT_NAME = "Notetaker"


class Heard:
    """The watch's events and speaker changes, as a test reads them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.speakers: list[SpeakerActivity] = []

    def observe(self, name: str, payload: dict[str, Any]) -> None:
        self.events.append((name, payload))

    def speaker(self, activity: SpeakerActivity) -> None:
        self.speakers.append(activity)

    def rosters(self) -> list[list[str]]:
        return [p["participants"] for name, p in self.events if name == "participant_update"]


@pytest_asyncio.fixture
async def server() -> AsyncIterator[TestMeetingServer]:
    async with TestMeetingServer() as running:
        yield running


async def _joined(server: TestMeetingServer, room: Room, page: Page) -> PlatformAdapter:
    adapter = adapter_for(Platform.GOOGLE_MEET)
    await page.goto(server.meeting_url("google_meet", room.scenario.meeting_id))
    deadline = time.monotonic() + 20
    while (state := await adapter.state(page)) is not MeetingState.IN_MEETING:
        assert time.monotonic() < deadline, f"never in the meeting (last screen {state})"
        if await adapter.prepare(page, BOT_NAME):
            await adapter.click_join(page)
        await asyncio.sleep(0.2)
    return adapter


@dataclass
class Watching:
    """A page in a room and the watch reading it, its first roster read done."""

    room: Room
    adapter: PlatformAdapter
    watch: MeetingWatch
    events: BotEvents
    heard: Heard

    async def until_roster(self, page: Page, names: list[str]) -> None:
        deadline = time.monotonic() + 10
        while self.watch.participants != names:
            assert time.monotonic() < deadline, f"roster {self.watch.participants}, wanted {names}"
            await self.watch.read_participants(page, self.events, time.monotonic())
            await asyncio.sleep(0.1)


async def _watching(
    server: TestMeetingServer, page: Page, meeting_id: str, participants: str
) -> Watching:
    room = await server.create_room(
        parse_scenario(
            f"platform: google_meet\nmeeting_id: '{meeting_id}'\nlobby: false\n"
            f"participants: {participants}\n"
        )
    )
    adapter = await _joined(server, room, page)
    heard = Heard()
    timers = MeetingTimers(Timeouts(admission=60, startup_alone=60, left_alone=60))
    watching = Watching(
        room,
        adapter,
        MeetingWatch(adapter, BOT_NAME, timers, heard),
        BotEvents(EventLog(), observer=heard.observe),
        heard,
    )
    await watching.watch.read_participants(page, watching.events, time.monotonic(), initial=True)
    return watching


@pytest_asyncio.fixture
async def page(server: TestMeetingServer) -> AsyncIterator[Page]:
    settings = AgentSettings()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(settings.chromium_path),
            args=[
                "--no-sandbox",
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                *server.browser_args(),
            ],
        )
        try:
            context = await browser.new_context(ignore_https_errors=True)
            yield await context.new_page()
        finally:
            await browser.close()


async def test_a_meeting_that_ends_is_not_everyone_leaving(
    server: TestMeetingServer, page: Page
) -> None:
    w = await _watching(server, page, "abc-endw-xyz", "[{name: Alice}, {name: Bob}]")
    await w.until_roster(page, ["Alice", "Bob"])

    # The loop's probe saw the meeting; then the host ends it, and the roster is read.
    assert await w.adapter.state(page) is MeetingState.IN_MEETING
    await w.room.end()
    deadline = time.monotonic() + 10
    while await w.adapter.state(page) is MeetingState.IN_MEETING:
        assert time.monotonic() < deadline, "the page never showed the end"
        await asyncio.sleep(0.05)
    assert await w.adapter.participants(page, BOT_NAME) == []  # the roster went with the screen
    await w.watch.read_participants(page, w.events, time.monotonic())

    assert w.heard.rosters()[-1] == ["Alice", "Bob"]
    assert w.watch.participants == ["Alice", "Bob"]


async def test_everyone_leaving_a_meeting_that_goes_on_is_reported(
    server: TestMeetingServer, page: Page
) -> None:
    w = await _watching(
        server,
        page,
        "abc-left-xyz",
        "[{name: Alice}, {name: Bob, leave_at: 2.0}, {name: Carol}]",
    )
    await w.until_roster(page, ["Alice", "Carol"])
    # The two who are left walk out at the same moment: one read sees nobody, and the meeting
    # (the bot in it) is still on screen.
    for participant in list(w.room.participants.values()):
        if participant.name in ("Alice", "Carol"):
            await w.room.leave(participant.id)
    deadline = time.monotonic() + 10
    while await w.adapter.participants(page, BOT_NAME):  # the page shows both gone, then one read
        assert time.monotonic() < deadline, "the page never showed them gone"
        await asyncio.sleep(0.05)
    await w.watch.read_participants(page, w.events, time.monotonic())

    assert w.heard.rosters()[-2:] == [["Alice", "Carol"], []]
    assert await w.adapter.state(page) is MeetingState.IN_MEETING
