"""The bot's microphone in the meeting page.

Speech goes in through ``inject.js``; muting uses the platform's own button
(:meth:`~agent.platforms.base.PlatformAdapter.set_microphone`).
"""

from __future__ import annotations

from agent.browser.session import BrowserSession
from agent.platforms.base import PlatformAdapter
from agent.voice.synthesis import Pcm


class PageMicrophone:
    """:class:`~agent.voice.speaker.Microphone` of the meeting page.

    Args:
        browser: The bot's browser (the page's ``__meetbot`` microphone API).
        adapter: The platform (its microphone button).
    """

    def __init__(self, browser: BrowserSession, adapter: PlatformAdapter) -> None:
        self._browser = browser
        self._adapter = adapter

    async def play(self, pcm: Pcm) -> float:
        """Queue ``pcm`` in the page; return the seconds queued from now."""
        return await self._browser.play_microphone(pcm.data, pcm.sample_rate)

    async def queued(self) -> float:
        """Seconds the page still has to play."""
        return await self._browser.microphone_queued()

    async def silence(self) -> None:
        """Stop what the page has queued."""
        await self._browser.stop_microphone()

    async def switch(self, on: bool) -> None:
        """Click the platform's unmute (``on``) or mute button."""
        await self._adapter.set_microphone(self._browser.page, on)
