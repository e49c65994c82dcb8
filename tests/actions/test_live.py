"""Live action detection as the bot wires it: segments through ``BotEvents``, actions back.

The detector is the ``openai`` provider talking to a real OpenAI-compatible HTTP server on
loopback (tests/actions/llm_server.py) that counts every request: with ``enable_actions``
false it receives none, ever; with it on, a failing server costs the transcript nothing and a
fixed answer becomes ``action_detected`` events resting on the segments sent.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from agent.actions.settings import ActionSettings
from agent.contracts.bot_config import ActionPrompt, BotSettings
from agent.contracts.link import AgentFrame, Segment
from agent.events import BotEvents
from agent.live_actions import LiveActions
from agent.sse.log import EventLog
from tests.actions.llm_server import ChatServer, serve

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
LINES = (
    ("Dana", "So we decided to launch on March 3rd."),
    ("Eli", "I'll send the launch email to customers by Friday."),
    ("Dana", "Who owns the pricing page?"),
)


def _segment(i: int, speaker: str, text: str, *, completed: bool = True) -> Segment:
    start = 3.0 * i
    return Segment(
        id=f"bot-{i}",
        start=start,
        end=start + 2.5,
        absolute_start_time=T0 + timedelta(seconds=start),
        absolute_end_time=T0 + timedelta(seconds=start + 2.5),
        text=text,
        speaker=speaker,
        completed=completed,
    )


def _settings(server: ChatServer, **overrides: object) -> ActionSettings:
    values: dict[str, object] = {
        "provider": "openai",
        "llm_base_url": server.base_url,
        "llm_api_key": "k",
        "window_pause_seconds": 1.0,
        "max_attempts": 2,
        "retry_base_seconds": 0.05,
        **overrides,
    }
    return ActionSettings.model_validate(values)


async def _meeting(
    enable: bool, settings: ActionSettings, prompt: ActionPrompt | None = None
) -> tuple[EventLog, list[AgentFrame], LiveActions]:
    """Run a short meeting's transcript through the bot's wiring; return what came out."""
    stream = EventLog()
    frames: list[AgentFrame] = []

    async def link(frame: AgentFrame) -> None:
        frames.append(frame)

    def final(segment: Segment) -> None:
        actions.submit(segment)

    events = BotEvents(stream, link, None, final)
    actions = LiveActions(BotSettings(enable_actions=enable), settings, prompt, events)
    actions.start()
    for i, (speaker, text) in enumerate(LINES):
        await events.segment(_segment(i, speaker, text, completed=False))
        await events.segment(_segment(i, speaker, text))
    await actions.finish(30.0)
    await actions.aclose()
    return stream, frames, actions


async def test_enable_actions_false_makes_no_call_whatever_the_transcript() -> None:
    async with serve(None) as server:
        stream, frames, actions = await _meeting(False, _settings(server))
        assert server.requests == []
        # The same meeting with actions on does reach this server (it counts what it gets).
        await _meeting(True, _settings(server))
        assert len(server.requests) >= 1
    assert actions.metrics is None and actions.reported == 0
    names = [event.event for event in stream.snapshot()]
    assert names == ["transcript_segment"] * 6
    assert [f.type for f in frames] == ["transcript_segment"] * 3


async def test_a_failing_model_costs_the_transcript_nothing_and_is_reported_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with serve(None) as server:  # no model: every request answers 503
        stream, frames, actions = await _meeting(True, _settings(server))
    # Every segment reached the stream and the link; one window, tried twice, failed.
    assert [event.event for event in stream.snapshot()] == ["transcript_segment"] * 6
    assert [f.type for f in frames] == ["transcript_segment"] * 3
    assert len(server.requests) == 2
    assert actions.metrics is not None and actions.metrics.failures_reported == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "503" in warnings[0].getMessage()


async def test_answers_become_action_events_on_the_stream_and_the_link() -> None:
    answer = {
        "actions": [
            {"type": "decision", "text": "Launch on March 3rd", "owner": None, "due": None,
             "lines": [1]},
            {"type": "action_item", "text": "Send the launch email to customers",
             "owner": "Eli", "due": "Friday", "lines": [2]},
            {"type": "question", "text": "Who owns the pricing page?", "owner": None,
             "due": None, "lines": [3, 9]},
            {"type": "decision", "text": "Launch on March 3rd!", "owner": None, "due": None,
             "lines": [1]},
        ]
    }  # fmt: skip
    prompt = ActionPrompt(id="p1", instructions="Only list what matters for sales.")
    async with serve(None) as server:
        server.answer = json.dumps(answer)
        stream, frames, actions = await _meeting(True, _settings(server), prompt)
    assert len(server.requests) == 1
    system = server.requests[0]["messages"][0]["content"]
    assert system.startswith("Only list what matters for sales.")
    detected = [json.loads(e.data) for e in stream.snapshot() if e.event == "action_detected"]
    assert [(d["type"], d["owner"], d["due"], d["segment_ids"]) for d in detected] == [
        ("decision", None, None, ["bot-0"]),
        ("action_item", "Eli", "Friday", ["bot-1"]),
        ("question", None, None, ["bot-2"]),
    ]
    assert set(detected[1]) == {"id", "type", "text", "owner", "due", "segment_ids", "timestamp"}
    sent = [f for f in frames if f.type == "action"]
    assert [f.id for f in sent] == [d["id"] for d in detected]
    assert actions.reported == 3
    assert actions.metrics is not None and actions.metrics.duplicates_dropped == 1


async def test_a_meeting_where_nobody_spoke_opens_no_detector() -> None:
    async with serve(None) as server:
        actions = LiveActions(
            BotSettings(enable_actions=True), _settings(server), None, BotEvents(EventLog())
        )
        actions.start()
        # A partial is not a completed segment: still nothing to detect.
        actions.submit(_segment(0, "Dana", "so we", completed=False))
        await actions.finish(5.0)
    assert server.requests == [] and actions.metrics is None
