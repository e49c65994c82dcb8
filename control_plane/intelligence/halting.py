"""Model calls a stopping worker abandons: the detection and summary workers' one rule.

A language-model call may run for minutes; a replica that shuts down must not wait for it.
Both workers hold no transaction during a call, so abandoning it loses nothing: the window or
summary is left to the next owner of its lease.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Halted(Exception):
    """The worker is stopping; the work in progress was abandoned."""


async def unless_halted(work: Coroutine[Any, Any, T], halt: asyncio.Event, *, name: str) -> T:
    """Run ``work`` as a task until it finishes or ``halt`` is set, whichever comes first.

    Both tasks are cancelled and awaited before this returns, so nothing is left running.

    Raises:
        Halted: ``halt`` was set first (``work`` was cancelled).
        Exception: Whatever ``work`` raised.
    """
    call = asyncio.create_task(work, name=name)
    halted = asyncio.create_task(halt.wait(), name=f"{name}-halt")
    try:
        await asyncio.wait({call, halted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (call, halted):
            if not task.done():
                task.cancel()
        await asyncio.gather(call, halted, return_exceptions=True)
    if call.cancelled():
        raise Halted
    return call.result()
