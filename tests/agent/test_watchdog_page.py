"""The watchdog's page events in Chromium: a closed page ends the bot, unless it is leaving."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser

from agent.contracts.bot_config import Platform
from agent.contracts.status import StatusReason
from agent.meeting.watchdog import PageWatchdog
from agent.platforms import adapter_for
from agent.process.errors import MeetingExit

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("leaving", [False, True])
async def test_a_closed_page_ends_the_bot_only_while_it_is_not_leaving(
    chromium: Browser, leaving: bool
) -> None:
    exits: list[MeetingExit] = []
    watchdog = PageWatchdog(
        adapter_for(Platform.GOOGLE_MEET),
        admitted=lambda: True,
        on_exit=exits.append,
        interval=0.5,
        lost_after=30.0,
    )
    page = await chromium.new_page()
    watchdog.attach(page)
    if leaving:
        await watchdog.stop()  # the bot's first step of leaving
    await page.close()
    if leaving:
        assert exits == []
    else:
        assert [e.reason for e in exits] == [StatusReason.PAGE_LOST]
