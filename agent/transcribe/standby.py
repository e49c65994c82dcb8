"""The multilingual model of a bot without a fixed language: loaded only while it can be needed.

A bot with no ``language`` pairs the fast English ``tiny.en`` with the multilingual ``base``,
which detects a speaker's language when their try on ``tiny.en`` is unsure
(``agent.transcribe.routing``). In an English meeting ``base`` so sits idle and holds about
180 MB of the agent's memory (PSS of tiny.en + base + Silero after decodes: 395 MB; ``base``
released: 214 MB; measured with the bundled models, docs/architecture.md §5a). That is the
largest single part of a bot's 900 MB budget (issue 19).

:class:`MultilingualStandby` releases the model after ``idle_s`` seconds of meeting audio in
which it decoded nothing, while every locked speaker speaks English, and loads it again when a
decode needs it (0.3-1 s on a bot VM's core; the unsure newcomer's final waits that long).
It never releases a model it cannot load again.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Awaitable, Callable

from agent.process import heap
from agent.transcribe.engine import WhisperEngine
from agent.transcribe.errors import TranscribeError
from agent.transcribe.metrics import TranscribeMetrics

log = logging.getLogger(__name__)

Loader = Callable[[], Awaitable[WhisperEngine]]


class MultilingualStandby:
    """Holds the multilingual engine, releases it while unused, and loads it back on demand.

    Args:
        metrics: Counts ``multilingual_releases`` and ``multilingual_loads``.
        idle_s: Seconds of meeting time (by the audio's clock, not the wall's: the decoder's
            place in the meeting) without a multilingual decode after which the model may be
            released; None: never.
    """

    def __init__(self, metrics: TranscribeMetrics, idle_s: float | None) -> None:
        self._metrics = metrics
        self._idle_s = idle_s
        self._engine: WhisperEngine | None = None
        self._loader: Loader | None = None
        self._last_used = 0.0  # meeting audio clock (epoch seconds) of the last use

    @property
    def available(self) -> bool:
        """Whether detection can run: a model is loaded, or can be loaded again."""
        return self._engine is not None or self._loader is not None

    def attach(self, engine: WhisperEngine, loader: Loader | None, now: float) -> None:
        """Take ``engine``; ``loader`` brings it back after a release (None: keep it)."""
        self._engine = engine
        self._loader = loader
        self._last_used = now

    async def get(self, now: float) -> WhisperEngine | None:
        """The engine, loaded again first if it was released; None when that load failed.

        A failed load is logged and detection ends for the meeting (the English model goes on).
        """
        if self._engine is None and self._loader is not None:
            began = time.perf_counter()
            try:
                self._engine = await self._loader()
            except TranscribeError as exc:
                log.error("multilingual model unavailable", extra={"error": type(exc).__name__})
                self._loader = None
                return None
            self._metrics.multilingual_loads += 1
            log.info(
                "multilingual model loaded again",
                extra={"seconds": round(time.perf_counter() - began, 3)},
            )
        self._last_used = now
        return self._engine

    async def release_if_idle(self, now: float, english_meeting: bool) -> bool:
        """Release the model when it is idle and the meeting is English; True if released.

        Args:
            now: The decoder's place in the meeting (epoch seconds).
            english_meeting: At least two speakers are locked, all to English
                (``LanguageMemory.prior() == "en"``).
        """
        if (
            self._engine is None
            or self._loader is None
            or self._idle_s is None
            or not english_meeting
            or now - self._last_used < self._idle_s
        ):
            return False
        self._engine = None
        # The engine's encode wrapper makes a reference cycle (agent.transcribe.engine), so
        # the model's memory is freed by a collection, then handed back by a trim.
        await asyncio.to_thread(_collect)
        self._metrics.multilingual_releases += 1
        log.info("multilingual model released", extra={"idle_s": round(now - self._last_used, 1)})
        return True


def _collect() -> None:
    gc.collect()
    heap.trim()
