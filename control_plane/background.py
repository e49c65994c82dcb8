"""Owned background loops with one graceful-stop contract.

A :class:`BackgroundLoop` awaits ``step()`` again and again in one task it owns: after each
step it waits ``interval`` seconds, or less when :meth:`~BackgroundLoop.wake` is called, or not
at all when the step returned True ("more is due now"), or as long as a step that returned a
number of seconds asked. A step that raises is logged and the
loop goes on. Stopping sets an event and waits for the step in progress to finish — a step is
never cancelled in the middle (a task cancelled inside a transaction can leave a SQLite
connection holding the write lock until it is garbage-collected, and on any database it drops
work half-done) — then awaits the task. Only a step still running after ``stop_grace`` seconds
(hung on network I/O, say) is cancelled, with a warning.

Start and stop a loop from a ``cleanup_ctx``::

    async def reaper_ctx(app: web.Application) -> AsyncIterator[None]:
        loop = BackgroundLoop("reaper", reaper.sweep, interval=5.0)
        async with loop.running():
            yield
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

Step = Callable[[], Awaitable[object]]
"""``await step()``; returning ``True`` asks for the next step at once (no pause), a float for a
pause of that many seconds (0 = none), anything else for the loop's ``interval``."""

DEFAULT_STOP_GRACE_S = 30.0


class BackgroundLoop:
    """Runs ``step`` every ``interval`` seconds until stopped.

    Args:
        name: The task's name and the loop's name in logs.
        step: The work of one iteration.
        interval: Seconds to wait after a step (unless woken, or the step returned True).
        start_delay: Seconds to wait before the first step.
        stop_grace: Seconds :meth:`stop` waits for a step in progress before cancelling it.
    """

    def __init__(
        self,
        name: str,
        step: Step,
        *,
        interval: float,
        start_delay: float = 0.0,
        stop_grace: float = DEFAULT_STOP_GRACE_S,
    ) -> None:
        self.name = name
        self._step = step
        self.interval = interval
        self._start_delay = start_delay
        self._stop_grace = stop_grace
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        """Run the next step now instead of at the end of the pause."""
        self._wake.set()

    def request_stop(self) -> None:
        """Ask :meth:`run` to return once the step in progress (if any) has finished."""
        self._stopping.set()
        self._wake.set()

    async def _pause(self, seconds: float) -> None:
        if seconds <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)

    async def run(self) -> None:
        """The loop itself, until :meth:`request_stop`; :meth:`start` runs it in a task."""
        await self._pause(self._start_delay)
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                again = await self._step()
            except asyncio.CancelledError:
                raise
            except Exception:  # the loop must outlive one failed step (a database hiccup)
                log.exception("background step failed", extra={"loop": self.name})
                again = None
            if self._stopping.is_set():
                break
            await self._pause(_pause_after(again, self.interval))

    def start(self) -> None:
        """Run the loop in a task owned by this object.

        Raises:
            RuntimeError: It is running already.
        """
        if self._task is not None:
            raise RuntimeError(f"background loop {self.name} started twice")
        self._stopping.clear()
        self._task = asyncio.create_task(self.run(), name=self.name)

    async def stop(self) -> None:
        """Stop after the step in progress and await the task (see the module docstring)."""
        task, self._task = self._task, None
        self.request_stop()
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=self._stop_grace)
        if not done:
            log.warning(
                "background step did not finish in time; cancelling it", extra={"loop": self.name}
            )
        await cancel_and_wait(task)  # cancels only a step still running after the grace

    @property
    def stopping(self) -> bool:
        """Whether a stop was requested."""
        return self._stopping.is_set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[BackgroundLoop]:
        """Start the loop for the body of the ``async with``, stop it on the way out."""
        self.start()
        try:
            yield self
        finally:
            await self.stop()


def _pause_after(outcome: object, interval: float) -> float:
    if outcome is True:
        return 0.0
    if isinstance(outcome, float | int) and not isinstance(outcome, bool):
        return max(0.0, float(outcome))
    return interval
