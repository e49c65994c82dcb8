"""Windows of completed segments → one detector call at a time → deduplicated actions.

:meth:`ActionWindower.submit` takes completed segments and never blocks: it appends to a
bounded buffer (the oldest segment is dropped when it is full) that the windower's own task
drains. That task closes a window after a pause (no new segment for ``window_pause_seconds``,
or a gap that long between two segments) or once it holds ``window_max_speech_seconds`` of
speech, and sends it to the detector with the previous window as context. So at most one call
is in flight per bot, and a slow or failing model delays only the actions, never the
transcript.

Each call waits for the per-bot budget (calls and tokens per rolling minute), runs under
``llm_request_timeout_seconds`` and is retried with exponential backoff on transient errors
(timeouts, connection errors, HTTP 429/5xx), up to ``max_attempts`` tries. When a window still
fails, the failure is counted and logged once: one warning when detection starts failing, one
info line when it works again, never one per window. While failing, each window gets a single
try.

Actions come out of :meth:`ActionWindower.actions` in order; one whose normalised text is
``dedupe_similarity``-alike to an already reported action of the same type is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import unicodedata
from collections.abc import AsyncIterator
from dataclasses import dataclass
from difflib import SequenceMatcher

from agent.actions.base import ActionDetector
from agent.actions.budget import RollingBudget
from agent.actions.errors import AnswerInvalid, DetectorError, DetectorUnavailable
from agent.actions.model import DetectedAction, Detection, DetectionRequest, WindowLine
from agent.actions.prompt import build_messages, estimate_tokens
from agent.actions.settings import ActionSettings
from agent.contracts.link import Segment

log = logging.getLogger(__name__)

_CLOSE = object()
_NON_WORD = re.compile(r"[^\w\s]")


def normalise_text(text: str) -> str:
    """Lowercase, accents folded, punctuation removed, whitespace collapsed."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return " ".join(_NON_WORD.sub(" ", folded).split())


def line_from_segment(segment: Segment, speaker_id: str | None = None) -> WindowLine:
    """The detector's view of a transcript segment."""
    return WindowLine(
        segment_id=segment.id,
        speaker=segment.speaker,
        speaker_id=speaker_id,
        start=segment.start,
        end=segment.end,
        text=segment.text,
    )


@dataclass(slots=True)
class ActionMetrics:
    """What one windower did so far (plain numbers; see :meth:`snapshot`).

    Attributes:
        segments_in: Completed segments accepted.
        segments_dropped: Segments dropped because the buffer was full.
        windows: Windows closed.
        calls: Detector calls made (retries included).
        retries: Calls that were retries.
        windows_failed: Windows given up on (transient errors past ``max_attempts``, or a
            non-transient error).
        answers_invalid: Windows whose answer was not the JSON asked for.
        failures_reported: Times detection started failing (each logged once).
        actions_reported: Actions yielded.
        duplicates_dropped: Actions dropped as already reported.
        items_dropped: Answer items dropped as invalid (bad type, no segment of the window).
        budget_waits: Calls that waited for the budget.
        budget_wait_seconds: Seconds spent waiting for the budget.
        tokens: Tokens used (server counts where reported).
        detect_seconds: Wall seconds inside detector calls.
    """

    segments_in: int = 0
    segments_dropped: int = 0
    windows: int = 0
    calls: int = 0
    retries: int = 0
    windows_failed: int = 0
    answers_invalid: int = 0
    failures_reported: int = 0
    actions_reported: int = 0
    duplicates_dropped: int = 0
    items_dropped: int = 0
    budget_waits: int = 0
    budget_wait_seconds: float = 0.0
    tokens: int = 0
    detect_seconds: float = 0.0

    def snapshot(self) -> dict[str, float]:
        """Flat ``name → value`` view."""
        return {name: getattr(self, name) for name in self.__slots__}


class ActionWindower:
    """Feeds one bot's completed segments to a detector in windows; yields its actions.

    Use as ``async with ActionWindower(detector, settings) as windower:``; call
    :meth:`submit` per completed segment and iterate :meth:`actions` in another task. Leaving
    the block (or :meth:`close`) detects the last window and ends :meth:`actions`.

    Args:
        detector: The detector; the windower does not close it.
        settings: Windowing, budget, timeout and retry settings.
        instructions: The bot's prompt (``ActionPrompt.instructions``), or None.
        budget_period: Seconds of the rolling budget (60; shorter only in tests).
    """

    def __init__(
        self,
        detector: ActionDetector,
        settings: ActionSettings,
        *,
        instructions: str | None = None,
        budget_period: float = 60.0,
    ) -> None:
        self._detector = detector
        self._settings = settings
        self._instructions = instructions
        self._budget = RollingBudget(
            settings.calls_per_minute, settings.tokens_per_minute, budget_period
        )
        self._queue: asyncio.Queue[WindowLine | object] = asyncio.Queue()
        self._out: asyncio.Queue[DetectedAction | None] = asyncio.Queue()
        self._reported: list[tuple[str, str]] = []
        self._failing = False
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self.metrics = ActionMetrics()

    async def __aenter__(self) -> ActionWindower:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if exc_info[0] is None:
            await self.close()
        else:
            await self.abort()

    def start(self) -> None:
        """Start the windower's task (idempotent)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="action-windower")

    def submit(self, segment: Segment | WindowLine, speaker_id: str | None = None) -> bool:
        """Queue one segment for detection; never blocks.

        Partial segments (``completed=False``), empty texts and segments after :meth:`close`
        are ignored (False). When the buffer holds ``queue_size`` segments the oldest one is
        dropped (counted in ``segments_dropped``).
        """
        if self._closed:
            return False
        if isinstance(segment, Segment):
            if not segment.completed:
                return False
            line = line_from_segment(segment, speaker_id)
        else:
            line = segment
        if not line.text.strip():
            return False
        while self._queue.qsize() >= self._settings.queue_size:
            self._queue.get_nowait()
            self.metrics.segments_dropped += 1
        self._queue.put_nowait(line)
        self.metrics.segments_in += 1
        return True

    async def actions(self) -> AsyncIterator[DetectedAction]:
        """Actions as they are detected; ends after :meth:`close` or :meth:`abort` finished."""
        while (action := await self._out.get()) is not None:
            yield action

    async def close(self) -> None:
        """Detect the pending window, then finish; :meth:`actions` ends afterwards."""
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(_CLOSE)
        if self._task is not None:
            await self._task
        else:
            self._out.put_nowait(None)

    async def abort(self) -> None:
        """Stop at once (the pending window is not detected), awaiting the task."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        # A task cancelled before it ever ran has not ended the iterator itself.
        self._out.put_nowait(None)

    async def _run(self) -> None:
        pending: list[WindowLine] = []
        context: tuple[WindowLine, ...] = ()
        pause = self._settings.window_pause_seconds
        try:
            while True:
                timeout = pause if pending else None
                try:
                    item = await asyncio.wait_for(self._queue.get(), timeout)
                except TimeoutError:
                    item = None
                closing = item is _CLOSE
                if isinstance(item, WindowLine):
                    if pending and item.start - pending[-1].end >= pause:
                        await self._window(pending, context)
                        context, pending = tuple(pending), []
                    pending.append(item)
                    speech = sum(max(0.0, x.end - x.start) for x in pending)
                    if speech < self._settings.window_max_speech_seconds:
                        continue
                if pending:
                    await self._window(pending, context)
                    context, pending = tuple(pending), []
                if closing:
                    return
        finally:
            self._out.put_nowait(None)

    async def _window(self, lines: list[WindowLine], context: tuple[WindowLine, ...]) -> None:
        self.metrics.windows += 1
        request = DetectionRequest(tuple(lines), context, self._instructions)
        detection = await self._detect(request)
        if detection is None:
            return
        self.metrics.items_dropped += detection.dropped
        for action in detection.actions:
            if self._is_duplicate(action):
                self.metrics.duplicates_dropped += 1
                continue
            self._reported.append((action.action_type.value, normalise_text(action.text)))
            self.metrics.actions_reported += 1
            self._out.put_nowait(action)

    def _is_duplicate(self, action: DetectedAction) -> bool:
        kind, text = action.action_type.value, normalise_text(action.text)
        threshold = self._settings.dedupe_similarity
        return any(
            kind == seen_kind and SequenceMatcher(None, text, seen).ratio() >= threshold
            for seen_kind, seen in self._reported
        )

    async def _detect(self, request: DetectionRequest) -> Detection | None:
        settings = self._settings
        estimate = (
            estimate_tokens("".join(m["content"] for m in build_messages(request)))
            + settings.max_output_tokens
        )
        attempts = 1 if self._failing else settings.max_attempts
        error: DetectorError | None = None
        for attempt in range(attempts):
            if attempt:
                self.metrics.retries += 1
                delay = min(
                    settings.retry_max_seconds, settings.retry_base_seconds * 2 ** (attempt - 1)
                )
                await asyncio.sleep(delay)
            await self._wait_budget(estimate)
            self._budget.spend(estimate)
            self.metrics.calls += 1
            started = time.perf_counter()
            try:
                detection = await asyncio.wait_for(
                    self._detector.detect(request), settings.llm_request_timeout_seconds
                )
            except TimeoutError:
                error = DetectorUnavailable(
                    f"no answer within {settings.llm_request_timeout_seconds} s"
                )
                continue
            except DetectorUnavailable as exc:
                error = exc
                continue
            except AnswerInvalid as exc:
                # The model answered (so the service works), just not with usable JSON.
                self._recovered()
                self.metrics.answers_invalid += 1
                log.debug("action detector answer invalid", extra={"error": str(exc)})
                return None
            except DetectorError as exc:
                error = exc
                break
            finally:
                self.metrics.detect_seconds += time.perf_counter() - started
            self._budget.adjust_last(detection.total_tokens)
            self.metrics.tokens += detection.total_tokens
            self._recovered()
            return detection
        self.metrics.windows_failed += 1
        if not self._failing:
            self._failing = True
            self.metrics.failures_reported += 1
            log.warning(
                "action detection failing: %s",
                error,
                extra={"detector": self._detector.name, "attempts": attempts},
            )
        return None

    def _recovered(self) -> None:
        if self._failing:
            self._failing = False
            log.info("action detection works again", extra={"detector": self._detector.name})

    async def _wait_budget(self, tokens: int) -> None:
        while (wait := self._budget.wait_seconds(tokens)) > 0:
            self.metrics.budget_waits += 1
            self.metrics.budget_wait_seconds += wait
            await asyncio.sleep(wait)
