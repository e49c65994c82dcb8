"""The watchdog's page events in Chromium: a closed page ends the bot, unless it is leaving."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, async_playwright

from agent.contracts.bot_config import Platform
from agent.contracts.status import StatusReason
from agent.meeting.watchdog import PageWatchdog
from agent.platforms import adapter_for
from agent.process.errors import MeetingExit
from agent.process.settings import AgentSettings

pytestmark = pytest.mark.browser


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Browser]:
    settings = AgentSettings()
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=str(settings.chromium_path), args=["--no-sandbox"]
        )
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest.mark.parametrize("leaving", [False, True])
async def test_a_closed_page_ends_the_bot_only_while_it_is_not_leaving(
    browser: Browser, leaving: bool
) -> None:
    exits: list[MeetingExit] = []
    watchdog = PageWatchdog(
        adapter_for(Platform.GOOGLE_MEET),
        admitted=lambda: True,
        on_exit=exits.append,
        interval=0.5,
        lost_after=30.0,
    )
    page = await browser.new_page()
    watchdog.attach(page)
    if leaving:
        await watchdog.stop()  # the bot's first step of leaving
    await page.close()
    if leaving:
        assert exits == []
    else:
        assert [e.reason for e in exits] == [StatusReason.PAGE_LOST]
