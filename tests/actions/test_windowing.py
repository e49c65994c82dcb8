"""Windowing, one call in flight, budget, retries, dedupe (in-memory detector)."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime

import pytest

from agent.actions.base import ActionDetector
from agent.actions.errors import AnswerInvalid, DetectorUnavailable
from agent.actions.model import DetectedAction, Detection, DetectionRequest, WindowLine
from agent.actions.settings import ActionSettings
from agent.actions.windowing import ActionWindower, normalise_text
from agent.contracts.link import ActionType, Segment
from tests.actions.scripted import ScriptedDetector, keyword_actions

pytestmark = pytest.mark.unit


def settings(**overrides: object) -> ActionSettings:
    base: dict[str, object] = {
        "window_pause_seconds": 0.3,
        "window_max_speech_seconds": 30.0,
        "retry_base_seconds": 0.01,
        "retry_max_seconds": 0.05,
        "llm_request_timeout_seconds": 5.0,
        "calls_per_minute": 100,
        "max_output_tokens": 64,
    }
    base.update(overrides)
    return ActionSettings.model_validate(base)


class Lines:
    """Consecutive window lines, 3 s of speech each, 0.2 s apart."""

    def __init__(self) -> None:
        self.t = 0.0
        self.n = 0

    def __call__(
        self, speaker: str, text: str, gap: float = 0.2, length: float = 3.0
    ) -> WindowLine:
        self.n += 1
        self.t += gap
        line = WindowLine(f"seg-{self.n}", speaker, f"id-{speaker}", self.t, self.t + length, text)
        self.t += length
        return line


async def collect(windower: ActionWindower) -> list[DetectedAction]:
    return [action async for action in windower.actions()]


def test_protocol_is_satisfied() -> None:
    assert isinstance(ScriptedDetector(), ActionDetector)


async def test_window_closes_after_a_pause_with_previous_window_as_context() -> None:
    detector = ScriptedDetector()
    line = Lines()
    async with ActionWindower(detector, settings(), instructions="custom") as windower:
        reader = asyncio.create_task(collect(windower))
        first = [line("Ann", "hi all"), line("Bob", "I'll send the notes tomorrow")]
        for x in first:
            assert windower.submit(x)
        await asyncio.sleep(0.6)  # > pause: the first window goes out on its own
        assert len(detector.requests) == 1
        second = [line("Cid", "did we book the room?")]
        windower.submit(second[0])
    actions = await reader
    assert len(detector.requests) == 2
    assert [x.segment_id for x in detector.requests[0].lines] == ["seg-1", "seg-2"]
    assert detector.requests[0].instructions == "custom"
    assert detector.requests[1].context == tuple(first)
    assert [(a.action_type, a.owner, a.segment_ids) for a in actions] == [
        (ActionType.ACTION_ITEM, "Bob", ("seg-2",)),
        (ActionType.QUESTION, None, ("seg-3",)),
    ]
    assert windower.metrics.windows == 2 and windower.metrics.actions_reported == 2


async def test_window_closes_after_max_speech_and_on_a_timestamp_gap() -> None:
    detector = ScriptedDetector()
    line = Lines()
    cfg = settings(window_pause_seconds=5.0, window_max_speech_seconds=10.0)
    async with ActionWindower(detector, cfg) as windower:
        reader = asyncio.create_task(collect(windower))
        for i in range(4):  # 12 s of speech: the window closes at the 4th line
            windower.submit(line("Ann", f"point {i}"))
        windower.submit(line("Bob", "after lunch", gap=6.0))  # gap ≥ pause: own window
        windower.submit(line("Bob", "more", gap=0.1))
        await asyncio.sleep(0.2)
        assert [len(r.lines) for r in detector.requests] == [4]
    await reader
    assert [len(r.lines) for r in detector.requests] == [4, 2]


async def test_submit_never_blocks_and_one_call_is_in_flight() -> None:
    detector = ScriptedDetector(delay=0.3)
    line = Lines()
    cfg = settings(window_pause_seconds=0.05, window_max_speech_seconds=3.0, queue_size=5)
    async with ActionWindower(detector, cfg) as windower:
        reader = asyncio.create_task(collect(windower))
        started = time.perf_counter()
        for i in range(8):
            windower.submit(line("Ann", f"I'll do task {i}"))
            await asyncio.sleep(0)
        assert time.perf_counter() - started < 0.05  # submit returned at once
        windower.submit(
            Segment(
                id="partial",
                start=0,
                end=1,
                absolute_start_time=datetime.now(UTC),
                absolute_end_time=datetime.now(UTC),
                text="I'll wait",
                completed=False,
            )
        )
    await reader
    assert detector.max_in_flight == 1
    # 8 segments, buffer of 5 while the first call ran: the oldest were dropped, not waited on.
    assert windower.metrics.segments_in == 8
    assert windower.metrics.segments_dropped >= 1
    assert windower.metrics.segments_in - windower.metrics.segments_dropped == sum(
        len(r.lines) for r in detector.requests
    )


async def test_duplicates_of_reported_actions_are_dropped() -> None:
    detector = ScriptedDetector()
    line = Lines()
    async with ActionWindower(detector, settings(window_pause_seconds=0.05)) as windower:
        reader = asyncio.create_task(collect(windower))
        windower.submit(line("Ann", "I'll send the deck to the client by Friday."))
        await asyncio.sleep(0.2)
        windower.submit(line("Ann", "OK so I'll send the deck to the client by friday"))
        windower.submit(line("Bob", "Is the budget approved?"))
        await asyncio.sleep(0.2)
        windower.submit(line("Bob", "I'll send the invoice to finance"))
    actions = await reader
    assert [a.text for a in actions] == [
        "I'll send the deck to the client by Friday.",
        "Is the budget approved?",
        "I'll send the invoice to finance",
    ]
    assert windower.metrics.duplicates_dropped == 1
    assert normalise_text("  Ça  va, Zoë?!") == "ca va zoe"


async def test_budget_delays_calls_instead_of_dropping_them() -> None:
    detector = ScriptedDetector()
    line = Lines()
    cfg = settings(window_pause_seconds=0.05, calls_per_minute=2)
    async with ActionWindower(detector, cfg, budget_period=0.8) as windower:
        reader = asyncio.create_task(collect(windower))
        for task in ("book the venue", "email the printer", "call the caterer"):
            windower.submit(line("Ann", f"I'll {task}"))
            await asyncio.sleep(0.15)
        await asyncio.sleep(0.1)
        assert len(detector.requests) == 2  # third window waits for the budget
    actions = await reader
    assert len(detector.requests) == 3 and len(actions) == 3
    assert windower.metrics.budget_waits >= 1 and windower.metrics.budget_wait_seconds > 0.3


async def test_token_budget_counts_server_tokens() -> None:
    def heavy(request: DetectionRequest) -> Detection:
        return Detection(keyword_actions(request).actions, prompt_tokens=900, completion_tokens=50)

    detector = ScriptedDetector(heavy)
    line = Lines()
    cfg = settings(window_pause_seconds=0.05, tokens_per_minute=1000)
    async with ActionWindower(detector, cfg, budget_period=0.6) as windower:
        reader = asyncio.create_task(collect(windower))
        windower.submit(line("Ann", "I'll book the venue"))
        await asyncio.sleep(0.15)
        windower.submit(line("Ann", "I'll email the printer"))
        await asyncio.sleep(0.2)
        assert len(detector.requests) == 1
    await reader
    assert len(detector.requests) == 2 and windower.metrics.tokens == 1900


async def test_transient_errors_are_retried_then_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    healthy = False

    def flaky(request: DetectionRequest) -> Detection:
        if not healthy:
            raise DetectorUnavailable("HTTP 503")
        return keyword_actions(request)

    detector = ScriptedDetector(flaky)
    line = Lines()
    cfg = settings(window_pause_seconds=0.05, max_attempts=3)
    caplog.set_level(logging.INFO, logger="agent.actions.windowing")
    async with ActionWindower(detector, cfg) as windower:
        reader = asyncio.create_task(collect(windower))
        for i in range(3):
            windower.submit(line("Ann", f"I'll fail {i}"))
            await asyncio.sleep(0.3)
        assert windower.metrics.windows_failed == 3
        # Three tries for the first window, then one try a window while failing.
        assert windower.metrics.calls == 3 + 1 + 1 and windower.metrics.retries == 2
        healthy = True
        windower.submit(line("Ann", "I'll work now"))
    actions = await reader
    assert [a.text for a in actions] == ["I'll work now"]
    assert windower.metrics.failures_reported == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "HTTP 503" in warnings[0].getMessage()
    assert any("works again" in r.getMessage() for r in caplog.records)


async def test_slow_detector_times_out_and_transcription_side_is_not_held() -> None:
    detector = ScriptedDetector(delay=2.0)
    line = Lines()
    cfg = settings(window_pause_seconds=0.05, llm_request_timeout_seconds=0.2, max_attempts=2)
    async with ActionWindower(detector, cfg) as windower:
        reader = asyncio.create_task(collect(windower))
        windower.submit(line("Ann", "I'll be slow"))
        await asyncio.sleep(0.1)
        started = time.perf_counter()
        for i in range(50):
            assert windower.submit(line("Bob", f"still talking {i}"))
        assert time.perf_counter() - started < 0.05
    assert await reader == []
    assert windower.metrics.windows_failed >= 1 and windower.metrics.failures_reported == 1


async def test_invalid_answers_are_counted_not_retried() -> None:
    def garbage(request: DetectionRequest) -> Detection:
        raise AnswerInvalid("not json")

    detector = ScriptedDetector(garbage)
    async with ActionWindower(detector, settings(window_pause_seconds=0.05)) as windower:
        windower.submit(Lines()("Ann", "I'll try"))
    assert windower.metrics.answers_invalid == 1 and windower.metrics.calls == 1
    assert windower.metrics.failures_reported == 0


async def test_abort_ends_the_iterator_without_detecting() -> None:
    detector = ScriptedDetector()
    windower = ActionWindower(detector, settings(window_pause_seconds=10))
    windower.start()
    reader = asyncio.create_task(collect(windower))
    windower.submit(Lines()("Ann", "I'll never be seen"))
    await windower.abort()
    assert await reader == [] and detector.requests == []
    assert not windower.submit(Lines()("Ann", "late"))
