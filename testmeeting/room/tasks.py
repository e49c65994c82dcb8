"""The background tasks one room owns: scripted actions and pending lobby decisions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

log = logging.getLogger(__name__)


class RoomTasks:
    """Tasks started for a room; :meth:`close` cancels and awaits every one still running.

    A task that fails is logged (``room task failed``) and forgotten.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Awaitable[None], name: str) -> None:
        """Run ``coro`` in a task named ``testmeeting:<name>`` owned by the room."""

        async def run() -> None:
            await coro

        task = asyncio.get_running_loop().create_task(run(), name=f"testmeeting:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def cancel_others(self) -> None:
        """Cancel every task but the one calling (which may be a scripted ``end``)."""
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()

    async def close(self) -> None:
        """Cancel and await every task."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "room task failed", exc_info=task.exception(), extra={"task": task.get_name()}
            )
