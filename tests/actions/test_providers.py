"""Both providers against the real local model; the openai one over real HTTP.

The model is small and slow on a shared CPU, so windows are two lines and answers short; the
assertions are about the contract (valid actions resting on the window's segments, the
request the server saw), not about what a 0.5B model understood.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from agent.actions.errors import DetectorUnavailable
from agent.actions.factory import open_detector
from agent.actions.local_provider import LocalActionDetector
from agent.actions.model import DetectedAction, DetectionRequest, WindowLine
from agent.actions.openai_provider import OpenAIActionDetector
from agent.actions.settings import ActionSettings
from agent.actions.windowing import ActionWindower
from agent.contracts.bot_config import BotSettings
from tests.actions.llm_server import serve

pytestmark = [pytest.mark.model, pytest.mark.slow]

WINDOW = DetectionRequest(
    lines=(
        WindowLine("seg-1", "Dana", None, 0.0, 3.0, "so we decided to launch on March 3rd"),
        WindowLine("seg-2", "Eli", None, 3.5, 6.0, "I'll send the launch email to customers"),
    )
)


def _rests_on_window(actions: tuple[DetectedAction, ...]) -> bool:
    return all(set(a.segment_ids) <= {"seg-1", "seg-2"} for a in actions)


async def test_local_provider_detects_in_process(local_model: LocalActionDetector) -> None:
    detection = await local_model.detect(WINDOW)
    assert local_model.name == "local/qwen2.5-coder-0.5b-instruct"
    assert detection.prompt_tokens > 50 and detection.completion_tokens > 0
    assert _rests_on_window(detection.actions)


async def test_openai_provider_over_http_with_json_schema(
    local_model: LocalActionDetector,
) -> None:
    async with serve(local_model) as server:
        detector = OpenAIActionDetector(
            base_url=server.base_url, api_key="k", model="qwen", max_output_tokens=160
        )
        try:
            detection = await detector.detect(WINDOW)
        finally:
            await detector.aclose()
    assert len(server.requests) == 1
    sent = server.requests[0]
    assert sent["model"] == "qwen" and sent["temperature"] == 0
    assert sent["response_format"]["type"] == "json_schema"
    assert detector.mode == "json_schema"
    assert detection.prompt_tokens > 50
    assert _rests_on_window(detection.actions)


async def test_openai_provider_falls_back_to_json_object(
    local_model: LocalActionDetector,
) -> None:
    async with serve(local_model) as server:
        server.reject_json_schema = True
        detector = OpenAIActionDetector(
            base_url=server.base_url, api_key="k", model="qwen", max_output_tokens=160
        )
        try:
            detection = await detector.detect(WINDOW)
        finally:
            await detector.aclose()
    assert [r.get("response_format", {}).get("type") for r in server.requests] == [
        "json_schema",
        "json_object",
    ]
    assert detector.mode == "json_object"
    assert _rests_on_window(detection.actions)


async def test_timeout_and_5xx_are_retried_then_reported_once(
    local_model: LocalActionDetector, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agent.actions.windowing")
    settings = ActionSettings(
        provider="openai",
        window_pause_seconds=0.2,
        max_attempts=3,
        retry_base_seconds=0.05,
        llm_request_timeout_seconds=60,
        max_output_tokens=160,
    )
    async with serve(local_model) as server:
        impatient = OpenAIActionDetector(
            base_url=server.base_url, api_key="k", model="qwen", request_timeout=0.5
        )
        # A timeout is a transient error of the provider itself.
        server.delay = 1.5
        with pytest.raises(DetectorUnavailable):
            await impatient.detect(WINDOW)
        await impatient.aclose()
        server.delay = 0.0
        detector = OpenAIActionDetector(
            base_url=server.base_url, api_key="k", model="qwen", max_output_tokens=160
        )
        async with ActionWindower(detector, settings) as windower:
            reader = asyncio.create_task(_collect(windower))
            # Window 1: 503 three times (three tries); window 2: 502 once (one try while
            # failing); window 3: the server answers through the model.
            server.fail_statuses = [503, 503, 503, 502]
            windower.submit(WINDOW.lines[0])
            await _until(lambda: windower.metrics.windows_failed == 1)
            windower.submit(WindowLine("seg-3", "Dana", None, 10.0, 12.0, "hello again"))
            await _until(lambda: windower.metrics.windows_failed == 2)
            windower.submit(WindowLine("seg-4", "Eli", None, 20.0, 23.0, WINDOW.lines[1].text))
        actions = await reader
        await detector.aclose()
    assert len(server.requests) == 1 + 3 + 1 + 1
    assert windower.metrics.retries == 2 and windower.metrics.failures_reported == 1
    assert windower.metrics.windows_failed == 2 and windower.metrics.windows == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "503" in warnings[0].getMessage()
    assert any("works again" in r.getMessage() for r in caplog.records)
    assert all(a.segment_ids == ("seg-4",) for a in actions)


async def test_enable_actions_false_makes_no_call() -> None:
    async with serve(None) as server:
        settings = ActionSettings(provider="openai", llm_base_url=server.base_url, llm_api_key="k")
        assert await open_detector(BotSettings(enable_actions=False), settings) is None
        # The same settings with actions on do reach this server (it counts what it gets).
        detector = await open_detector(BotSettings(enable_actions=True), settings)
        assert isinstance(detector, OpenAIActionDetector)
        with pytest.raises(DetectorUnavailable):
            await detector.detect(WINDOW)
        await detector.aclose()
    assert len(server.requests) == 1


async def test_enable_actions_false_loads_no_local_model() -> None:
    settings = ActionSettings(provider="local", local_model="/nonexistent/model.gguf")
    assert await open_detector(BotSettings(enable_actions=False), settings) is None


async def _collect(windower: ActionWindower) -> list[DetectedAction]:
    return [action async for action in windower.actions()]


async def _until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):
        while not condition():  # noqa: ASYNC110 - polls metrics; the windower has no events
            await asyncio.sleep(0.05)
