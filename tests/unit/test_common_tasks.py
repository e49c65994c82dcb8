"""Stopping an owned task (meetbot_common.tasks.cancel_and_wait): the task has ended when the
call returns, its cancellation is no error, what it failed with is, unless the owner said so."""

from __future__ import annotations

import asyncio

import pytest

from meetbot_common.tasks import cancel_and_wait

pytestmark = pytest.mark.unit


async def test_the_task_has_ended_and_ran_its_cleanup_when_the_call_returns() -> None:
    started = asyncio.Event()
    cleaned: list[str] = []

    async def work() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits
            cleaned.append("done")

    task = asyncio.create_task(work())
    await started.wait()
    await cancel_and_wait(task)
    assert task.cancelled()
    assert cleaned == ["done"]


async def test_nothing_to_stop_is_nothing_to_do() -> None:
    await cancel_and_wait(None)


async def test_a_task_that_had_failed_raises_its_error_unless_it_is_ignored() -> None:
    async def fail() -> None:
        raise ConnectionResetError("gone")

    failed = asyncio.create_task(fail())
    await asyncio.wait({failed})
    with pytest.raises(ConnectionResetError):
        await cancel_and_wait(failed)

    ignored = asyncio.create_task(fail())
    await asyncio.wait({ignored})
    await cancel_and_wait(ignored, ConnectionError)


async def test_an_error_raised_while_the_task_stops_goes_to_the_owner() -> None:
    started = asyncio.Event()

    async def stops_badly() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    task = asyncio.create_task(stops_badly())
    await started.wait()
    with pytest.raises(RuntimeError, match="cleanup failed"):
        await cancel_and_wait(task)
