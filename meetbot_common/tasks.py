"""Stopping a background task its owner started: cancel it, then wait until it has ended.

Every owned task (house rule: each background task is owned and awaited) ends the same way
when its owner stops early; this is that one sequence.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_and_wait(task: asyncio.Future[Any] | None, *ignore: type[BaseException]) -> None:
    """Cancel ``task`` and wait until it has finished; nothing when it is None.

    The ``CancelledError`` this wait ends with is not raised (the owner asked for it), and
    neither is one the caller itself receives while it waits. A task that had already
    finished is not cancelled: its exception, if it had one, is raised here.

    Args:
        task: The task (or future) to stop.
        ignore: Exceptions the task may end with that are not raised either, e.g.
            ``ConnectionError`` for a connection torn down by the cancel.

    Raises:
        Exception: What ``task`` ended with, unless it is one of ``ignore``.
    """
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, *ignore):
        await task
