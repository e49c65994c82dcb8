"""Fixtures shared by the agent's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from playwright.async_api import Browser, async_playwright

from agent.process.settings import AgentSettings


@pytest_asyncio.fixture
async def chromium() -> AsyncIterator[Browser]:
    """The agent's Chromium (``AgentSettings.chromium_path``), launched for one test."""
    settings = AgentSettings()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(settings.chromium_path), args=["--no-sandbox"]
        )
        try:
            yield browser
        finally:
            await browser.close()
