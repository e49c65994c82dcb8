"""``meetbot demo``: the whole product on this machine, on real recorded speech.

Modules, each importing only those listed before it:

- ``errors``: :class:`~meetbot.demo.errors.DemoError` and ``ApiError``.
- ``scenario``: the demo's meeting (three people taking turns) and where its speech comes from.
- ``services``: the control plane as child processes (``meetbot admin bootstrap``, ``serve``).
- ``client``: REST calls with ``X-API-Key`` and the bot's SSE stream.
- ``webhooks``: a local receiver checking each delivery's Standard Webhooks signature.
- ``display``: the live status line and transcript in the terminal.
- ``report``: the summary (statuses, WER, latency, deliveries) and its rendering.
- ``run``: one run — start everything, send the bot, watch it, summarise, stop.
- ``cli``: the ``meetbot demo`` command line (:func:`meetbot.demo.cli.main`).
"""
