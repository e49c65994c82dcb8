"""The meetbot agent: one bot in one meeting, on its own VM (``python -m agent``).

The root holds the entry points; the folders are what a bot is made of:

- ``__main__`` / ``cli`` / ``bootstrap`` / ``log_upload``: ``python -m agent --config
  bot.json``, ``meetbot agent``, and the bot machine's grant exchange and log upload.
- ``wiring``: :func:`agent.wiring.assemble`, the composition root that builds one bot's parts
  and ties them together.
- ``meeting``: the state machine of one meeting (:class:`agent.meeting.bot.Bot`), its status
  machine and timers, stop signal, passcode answer, what it watches, its page watchdog and the
  report of unknown screens, and the control plane's commands.
- ``browser``: Chromium through Playwright, with ``inject.js`` (capture and bot media).
- ``platforms``: the ``PlatformAdapter`` seam and the Meet, Zoom and Teams adapters.
- media in: ``capture`` (the page's PCM blocks as :class:`agent.capture.audio.AudioFrame`),
  ``transcribe`` (frames → transcript segments), ``recording`` (audio and screen files) and
  ``media_in`` (the three wired for one meeting).
- media out: ``voice`` (speech into the meeting) and ``media_out`` (screen share, its egress
  proxy, media fetched by URL).
- the link: ``link`` (the WebSocket, its durable outbox, the events fan-out, artifact
  uploads) and ``sse`` (the bot's stream log, fed over the link).
- the process: ``process`` (settings, logs, heap, display and sound runtime, errors) and
  ``memory`` (the memory guard rails).
- ``contracts``: the wire models the control plane shares.
"""

__version__ = "0.1.0"
