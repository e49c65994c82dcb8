"""The status machine follows docs/architecture.md §3; the meeting timers fire exactly."""

from __future__ import annotations

import asyncio

import pytest

from agent.contracts.bot_config import BotSettings
from agent.contracts.status import BotStatus, StatusReason
from agent.link.events import BotEvents
from agent.meeting.lifecycle import MeetingTimers, StatusMachine, Timeouts, bounded_step
from agent.sse.log import EventLog

pytestmark = pytest.mark.unit


async def test_status_machine_reports_legal_moves_and_refuses_illegal_ones() -> None:
    seen: list[tuple[str, dict[str, object]]] = []
    log = EventLog()
    machine = StatusMachine(BotEvents(log, observer=lambda n, p: seen.append((n, p))))
    assert await machine.move(BotStatus.JOINING, StatusReason.JOIN_STARTED)
    assert not await machine.move(BotStatus.COMPLETED, StatusReason.LEFT_ALONE)
    assert await machine.move(BotStatus.ACTIVE, StatusReason.JOINED)
    assert await machine.move(BotStatus.STOPPING, StatusReason.LEFT_ALONE)
    assert await machine.move(BotStatus.COMPLETED, StatusReason.LEFT_ALONE)
    assert machine.final
    assert [s for s, _ in machine.history] == [
        BotStatus.JOINING,
        BotStatus.ACTIVE,
        BotStatus.STOPPING,
        BotStatus.COMPLETED,
    ]
    events = log.snapshot()
    assert [e.id for e in events] == [1, 2, 3, 4]
    assert all(e.event == "bot_status" for e in events)
    assert '"status": "completed"' in events[-1].data
    assert seen[-1][1]["status_reason"] == "left_alone"


def test_timeouts_scale_only_downwards_from_the_bot_settings() -> None:
    settings = BotSettings(admission_timeout_seconds=30, left_alone_timeout_seconds=10)
    timeouts = Timeouts.from_settings(settings, scale=0.1)
    assert timeouts.admission == pytest.approx(3.0)
    assert timeouts.left_alone == pytest.approx(1.0)
    assert timeouts.startup_alone == pytest.approx(120.0)


def test_admission_times_out_exactly_after_entering_the_lobby() -> None:
    timers = MeetingTimers(Timeouts(admission=30, startup_alone=60, left_alone=10))
    timers.entered_lobby(100.0)
    timers.entered_lobby(105.0)  # the clock starts once
    assert timers.next_deadline() == 130.0
    assert timers.expired(129.999) is None
    assert timers.expired(130.0) is StatusReason.ADMISSION_TIMEOUT
    timers.admitted(120.0)
    assert timers.expired(200.0) is not StatusReason.ADMISSION_TIMEOUT


def test_startup_alone_when_nobody_ever_came() -> None:
    timers = MeetingTimers(Timeouts(admission=30, startup_alone=60, left_alone=10))
    timers.admitted(10.0)
    timers.observe(0, 11.0)
    assert timers.expired(69.9) is None
    assert timers.expired(70.0) is StatusReason.STARTUP_ALONE


def test_left_alone_counts_from_when_the_last_other_participant_left() -> None:
    timers = MeetingTimers(Timeouts(admission=30, startup_alone=60, left_alone=10))
    timers.admitted(0.0)
    timers.observe(2, 1.0)
    assert timers.alone_deadline() is None
    assert timers.expired(500.0) is None
    timers.observe(0, 50.0)
    timers.observe(0, 55.0)  # still alone: the clock keeps its start
    assert timers.next_deadline() == 60.0
    assert timers.expired(59.9) is None
    timers.observe(1, 59.9)  # someone came back
    assert timers.expired(70.0) is None
    timers.observe(0, 80.0)
    assert timers.expired(90.0) is StatusReason.LEFT_ALONE


def test_max_duration_caps_the_meeting_even_with_others_present() -> None:
    timers = MeetingTimers(Timeouts(admission=30, startup_alone=60, left_alone=10, max_duration=90))
    assert timers.max_duration_deadline() is None  # not admitted yet: no cap running
    timers.admitted(100.0)
    timers.observe(2, 101.0)
    assert timers.next_deadline() == 190.0
    assert timers.expired(189.9) is None
    assert timers.expired(190.0) is StatusReason.MAX_DURATION


def test_max_duration_comes_from_the_bot_settings() -> None:
    settings = BotSettings(max_meeting_duration_seconds=3600)
    assert Timeouts.from_settings(settings, 0.5).max_duration == 1800
    assert BotSettings().max_meeting_duration_seconds == 14400
    with pytest.raises(ValueError):
        BotSettings(max_meeting_duration_seconds=59)


async def test_a_stuck_leaving_step_is_given_up_and_the_next_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    took: dict[str, float] = {}
    stuck = asyncio.Event()  # never set: a page or a browser that never answers
    ran: list[str] = []

    async def close_browser() -> None:
        ran.append("browser")

    await bounded_step("speaker", stuck.wait(), 0.05, took)
    await bounded_step("browser", close_browser(), 5.0, took)
    assert ran == ["browser"]
    assert set(took) == {"speaker", "browser"}
    assert took["speaker"] >= 0.05
    warned = [r for r in caplog.records if r.getMessage() == "leaving step timed out"]
    assert [getattr(r, "step", None) for r in warned] == ["speaker"]


async def test_a_failing_leaving_step_raises_and_still_counts_its_time() -> None:
    took: dict[str, float] = {}

    async def broken() -> None:
        raise RuntimeError("the page went away")

    with pytest.raises(RuntimeError):
        await bounded_step("leave", broken(), 5.0, took)
    assert "leave" in took
