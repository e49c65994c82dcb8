"""The owned background loop: graceful stop after the step in progress, never a cancellation
inside a step, a failed step logged and the loop going on, wake-ups and "again" steps."""

from __future__ import annotations

import asyncio
import logging

import pytest

from control_plane.background import BackgroundLoop

pytestmark = pytest.mark.unit


async def test_stop_waits_for_the_step_in_progress_and_never_cancels_it() -> None:
    entered = asyncio.Event()
    release = asyncio.Event()
    outcomes: list[str] = []

    async def step() -> None:
        entered.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            outcomes.append("cancelled")
            raise
        await asyncio.sleep(0)  # the rest of the "transaction" after the wait
        outcomes.append("finished")

    loop = BackgroundLoop("test", step, interval=10.0)
    loop.start()
    await asyncio.wait_for(entered.wait(), 5)
    stopping = asyncio.create_task(loop.stop())
    await asyncio.sleep(0.2)
    assert not stopping.done(), "stop returned while a step was still running"
    release.set()
    await asyncio.wait_for(stopping, 5)
    assert outcomes == ["finished"]


async def test_stop_between_steps_returns_at_once_and_runs_no_further_step() -> None:
    steps = 0

    async def step() -> None:
        nonlocal steps
        steps += 1

    loop = BackgroundLoop("test", step, interval=3600.0)
    async with loop.running():
        while steps == 0:  # noqa: ASYNC110 - waits for the loop's first step
            await asyncio.sleep(0.01)
    # The pause of an hour was cut short by stop; no second step ran.
    assert steps == 1


async def test_a_failing_step_is_logged_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = 0
    second = asyncio.Event()

    async def step() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("database hiccup")
        second.set()

    loop = BackgroundLoop("flaky", step, interval=0.01)
    with caplog.at_level(logging.ERROR, logger="control_plane.background"):
        async with loop.running():
            await asyncio.wait_for(second.wait(), 5)
    failures = [r for r in caplog.records if r.getMessage() == "background step failed"]
    assert len(failures) == 1
    assert failures[0].exc_info is not None and "database hiccup" in str(failures[0].exc_info[1])
    assert getattr(failures[0], "loop", None) == "flaky"


async def test_wake_and_a_step_returning_true_skip_the_pause() -> None:
    calls = 0
    woken = asyncio.Event()

    async def step() -> bool:
        nonlocal calls
        calls += 1
        if calls == 3:
            woken.set()
        return calls == 1  # the first step says "more is due now"

    loop = BackgroundLoop("test", step, interval=3600.0)
    async with loop.running():
        while calls < 2:  # noqa: ASYNC110 - the second step follows the first at once
            await asyncio.sleep(0.01)
        loop.wake()
        await asyncio.wait_for(woken.wait(), 5)
    assert calls == 3


async def test_a_step_hung_past_the_grace_is_cancelled_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entered = asyncio.Event()

    async def step() -> None:
        entered.set()
        await asyncio.Event().wait()  # never returns

    loop = BackgroundLoop("hung", step, interval=1.0, stop_grace=0.1)
    loop.start()
    await asyncio.wait_for(entered.wait(), 5)
    with caplog.at_level(logging.WARNING, logger="control_plane.background"):
        await asyncio.wait_for(loop.stop(), 5)
    assert any("did not finish in time" in r.getMessage() for r in caplog.records)


async def test_starting_twice_is_refused() -> None:
    async def step() -> None:
        return None

    loop = BackgroundLoop("test", step, interval=1.0)
    async with loop.running():
        with pytest.raises(RuntimeError):
            loop.start()
