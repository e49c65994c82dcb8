"""How long the agent waits for a meeting page that stopped answering (``page_timeout_seconds``).

A renderer busy in a script cannot run the adapter's probes. Each probe gives up after the
agent's page timeout with ``BrowserError`` (which the bot logs and retries; only a page silent
for ``lost_page_seconds`` ends it), so the timeout must be what the operator set: a bot VM under
software emulation answers a probe in tens of seconds where a host with KVM takes milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page

from agent.contracts.bot_config import Platform
from agent.platforms import adapter_for
from agent.platforms.base import EVALUATE_TIMEOUT_S, MeetingState
from agent.process.errors import BrowserError
from agent.process.settings import AgentSettings

pytestmark = pytest.mark.browser


@pytest_asyncio.fixture
async def page(chromium: Browser) -> AsyncIterator[Page]:
    yield await chromium.new_page()


async def test_a_busy_page_fails_a_probe_after_the_configured_timeout(page: Page) -> None:
    adapter = adapter_for(Platform.GOOGLE_MEET, evaluate_timeout_s=0.5)
    await page.set_content("<p>A page with no meeting on it</p>")
    assert await adapter.state(page) is MeetingState.LOADING
    # The renderer's main thread spins from the next task on: nothing else runs in the page.
    await page.evaluate("() => { setTimeout(() => { for (;;) {} }, 0); }")
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(BrowserError, match="stopped answering"):
        await adapter.state(page)
    # Not a speed claim: the probe gave up on the adapter's own timeout, long before the
    # default one (a browser answering would have returned a state instead).
    assert loop.time() - started < EVALUATE_TIMEOUT_S


def test_the_page_timeout_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert AgentSettings().page_timeout_seconds == EVALUATE_TIMEOUT_S
    monkeypatch.setenv("MEETBOT_AGENT_PAGE_TIMEOUT_SECONDS", "120")
    assert AgentSettings().page_timeout_seconds == 120.0
    monkeypatch.setenv("MEETBOT_AGENT_PAGE_TIMEOUT_SECONDS", "0")
    with pytest.raises(ValueError, match="greater than 0"):
        AgentSettings()
