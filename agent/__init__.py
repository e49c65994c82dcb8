"""The meetbot agent: one bot in one meeting, on its own VM (``python -m agent``).

Modules, in the order a bot uses them:

- ``settings``: the host's ``MEETBOT_AGENT_*`` settings (browser, ports, intervals).
- ``bot``: :class:`agent.bot.Bot`, the life of one bot from launch to exit.
- ``browser``: Chromium through Playwright, with ``inject.js`` (capture and bot media).
- ``platforms``: the ``PlatformAdapter`` seam and the Meet, Zoom and Teams adapters.
- ``capture``: the page's PCM blocks as :class:`agent.audio.AudioFrame` with levels.
- ``transcription``: frames → ``agent.transcribe`` → transcript segments.
- ``lifecycle``: the status machine and the admission/alone timers.
- ``commands``: stop, screenshot, chat, hand, avatar from the control plane.
- ``events``: one fan-out to the link's stored frames and the stream log.
- ``link``: the WebSocket to the control plane and its durable outbox.
- ``sse``: the bot's stream log (numbered events, the whole meeting), fed over the link.
- ``cli`` / ``__main__``: ``meetbot agent`` and ``python -m agent --config bot.json``.
"""

__version__ = "0.1.0"
