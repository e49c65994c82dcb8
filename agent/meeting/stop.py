"""Why one bot's attendance ends early: a stop request, or an exit found beside its loops.

:class:`StopSignal` is shared by the bot's loops, the command handler (``stop``), the signal
handlers (SIGTERM) and the page watchdog; the first cause wins. The loops pause on it, so a
stop takes effect within their current pause, and :meth:`StopSignal.run_until_stopped` cancels
an attendance stuck in a long browser call (a page load, a join click) the moment it comes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from agent.contracts.status import StatusReason
from agent.process.errors import MeetingExit, MeetingLeft
from meetbot_common.tasks import cancel_and_wait


class StopSignal:
    """The first cause to end one attendance: a stop request or another exit."""

    def __init__(self) -> None:
        self._set = asyncio.Event()
        self._reason: StatusReason = StatusReason.STOPPED_BY_API
        # An exit found outside the attendance's own loops (the watchdog), if any.
        self._exit: MeetingExit | None = None

    def request(self, reason: StatusReason = StatusReason.STOPPED_BY_API) -> None:
        """Ask the bot to leave (stop command, SIGTERM); the first cause wins."""
        if not self._set.is_set():
            self._reason = reason
            self._set.set()

    def end(self, exit_: MeetingExit) -> None:
        """End the attendance with ``exit_`` (the watchdog's verdict); the first cause wins."""
        if not self._set.is_set():
            self._exit = exit_
            self._set.set()

    def is_set(self) -> bool:
        """Whether a cause came."""
        return self._set.is_set()

    def exit(self) -> MeetingExit:
        """The exit of a stopped attendance: the ended one's, else the stop request's."""
        return self._exit if self._exit is not None else MeetingLeft(self._reason)

    async def pause(self, seconds: float) -> None:
        """Sleep up to ``seconds`` (>= 0); leave at once when a cause comes.

        Raises:
            MeetingExit: :meth:`exit`, when a cause came before or during the pause.
        """
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._set.wait(), timeout=seconds)
        if self._set.is_set():
            raise self.exit()

    async def run_until_stopped(self, attendance: Coroutine[Any, Any, None]) -> None:
        """Run ``attendance``, cut short the moment a cause comes.

        The attendance may be inside a long browser call (a page load, a join click) when the
        cause comes; it is cancelled there rather than at its next pause, so a SIGTERM or stop
        command takes effect at once.

        Raises:
            MeetingExit: How the bot left: :meth:`exit` when cut short, else the attendance's.
        """
        attend = asyncio.create_task(attendance, name="attend")
        stopped = asyncio.create_task(self._set.wait(), name="stop-wait")
        cut_short = False
        try:
            await asyncio.wait({attend, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(stopped)
            if not attend.done():
                cut_short = True
                # Its own outcome is moot once a stop (or the owner) cut it short.
                await cancel_and_wait(attend, Exception)
        if cut_short:
            raise self.exit()
        attend.result()
