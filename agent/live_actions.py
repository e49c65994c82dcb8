"""Live action detection of one meeting: completed segments in, ``action`` frames out.

:class:`LiveActions` is what the bot wires between its transcript and its events. With
``enable_actions`` false it does nothing at all: no detector is built, no model loaded, no
connection opened, no call made (docs/api.md 2.9). With it on, :meth:`LiveActions.start` (the
bot was admitted) starts its task, which opens the detector in the background once the first
completed segment arrives (so the model never loads while the transcriber does, nor in a
meeting where nobody spoke), and completed segments handed to
:meth:`LiveActions.submit` (``BotEvents``' final-segment sink) go to an
:class:`~agent.actions.windowing.ActionWindower`; each action it yields becomes an
:class:`~agent.contracts.link.ActionEvent` through :meth:`agent.events.BotEvents.action`
(``action_detected`` on the stream, the ``action`` frame to the control plane).

:meth:`submit` never blocks and never fails, so a slow, failing or absent model cannot delay
the transcript: segments wait in the windower's bounded buffer, one call is in flight at a
time, and errors are retried and reported by the windower (once, not per window). Segments
that arrive while the model loads are kept (up to ``queue_size``) and handed over once it is
open. :meth:`finish` detects the last window within a time limit; :meth:`aclose` stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from agent.actions.base import ActionDetector
from agent.actions.errors import DetectorError
from agent.actions.factory import open_detector
from agent.actions.settings import ActionSettings
from agent.actions.windowing import ActionMetrics, ActionWindower
from agent.contracts.bot_config import ActionPrompt, BotSettings
from agent.contracts.link import ActionEvent, Segment
from agent.events import BotEvents

log = logging.getLogger(__name__)

# Time a closing detector gets to release its client or model on the way out.
_DETECTOR_CLOSE_S = 2.0


class LiveActions:
    """One bot's action detection (see the module docstring).

    Args:
        bot: The bot's options at launch; only ``enable_actions`` is read.
        settings: The agent host's action settings (provider, model, windowing, budget).
        prompt: The bot's resolved prompt (``BotConfig.action_prompt``), or None for the
            system default.
        events: Where actions go (replace with ``events`` when the bot's events change).
    """

    def __init__(
        self,
        bot: BotSettings,
        settings: ActionSettings,
        prompt: ActionPrompt | None,
        events: BotEvents,
    ) -> None:
        self._bot = bot
        self._settings = settings
        self._prompt = prompt
        self.events = events
        self._early: list[Segment] = []
        self._windower: ActionWindower | None = None
        self._closing = asyncio.Event()
        self._spoken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.metrics: ActionMetrics | None = None
        self.reported = 0

    @property
    def enabled(self) -> bool:
        """Whether the bot detects actions (``enable_actions``)."""
        return self._bot.enable_actions

    def start(self) -> None:
        """Open the detector in the background and start detecting (no-op when disabled)."""
        if self.enabled and self._task is None and not self._closing.is_set():
            self._task = asyncio.create_task(self._run(), name="live-actions")

    def submit(self, segment: Segment) -> None:
        """Hand over one completed segment; returns at once, whatever the model is doing."""
        if not self.enabled or self._closing.is_set() or not segment.completed:
            return
        if self._windower is not None:
            self._windower.submit(segment)
            return
        self._spoken.set()
        self._early.append(segment)
        if len(self._early) > self._settings.queue_size:
            del self._early[0]

    async def _run(self) -> None:
        await self._first_segment_or_close()
        if not self._spoken.is_set():
            return  # nothing was said: no model loaded, no call made
        try:
            detector = await open_detector(self._bot, self._settings, self._prompt)
        except DetectorError as exc:
            log.error("action detection unavailable", extra={"error": str(exc)})
            return
        if detector is None:
            return
        try:
            await self._detect(detector)
        finally:
            self._windower = None
            with contextlib.suppress(TimeoutError, DetectorError):
                await asyncio.wait_for(detector.aclose(), _DETECTOR_CLOSE_S)

    async def _first_segment_or_close(self) -> None:
        waits = [
            asyncio.create_task(self._spoken.wait(), name="live-actions-spoken"),
            asyncio.create_task(self._closing.wait(), name="live-actions-closing"),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
            await asyncio.gather(*waits, return_exceptions=True)

    async def _detect(self, detector: ActionDetector) -> None:
        instructions = self._prompt.instructions if self._prompt is not None else None
        windower = ActionWindower(detector, self._settings, instructions=instructions)
        self.metrics = windower.metrics
        windower.start()
        pump = asyncio.create_task(self._pump(windower), name="live-actions-pump")
        try:
            self._windower = windower
            for segment in self._early:
                windower.submit(segment)
            self._early.clear()
            log.info("action detection started", extra={"detector": detector.name})
            await self._closing.wait()
            self._windower = None
            await windower.close()
            await pump
        finally:
            await windower.abort()
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            log.info(
                "action detection ended",
                extra={"detector": detector.name, **windower.metrics.snapshot()},
            )

    async def _pump(self, windower: ActionWindower) -> None:
        async for action in windower.actions():
            await self.events.action(
                ActionEvent(
                    action_type=action.action_type,
                    text=action.text,
                    owner=action.owner,
                    due=action.due,
                    segment_ids=list(action.segment_ids),
                )
            )
            self.reported += 1

    async def finish(self, within_seconds: float) -> None:
        """Detect the last window and deliver its actions; give up after ``within_seconds``.

        Segments submitted afterwards are ignored. A model still loading or answering when
        the time is up is abandoned (:meth:`aclose`).
        """
        self._closing.set()
        task = self._task
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), within_seconds)
        except TimeoutError:
            log.warning("action detection not finished in time", extra={"within": within_seconds})
            await self.aclose()
        except Exception:
            # Actions are an extra; the bot still reports its transcript and final status.
            log.exception("action detection failed")

    async def aclose(self) -> None:
        """Stop at once (pending windows are not detected); idempotent."""
        self._closing.set()
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
