"""The memory guard: sample the process tree, report crossings, relieve above the limit.

One :class:`MemoryGuard` per bot, run as a task the bot owns from admission to leaving. Every
``interval`` seconds it reads the tree's PSS (:func:`agent.memory.tree.read_tree`, in a
thread) and:

- above ``warn_mb``: logs a warning and reports ``MemoryReport(level="warn")`` once per
  crossing (the level must fall below ``warn_mb`` again before the next warning);
- above ``limit_mb``: runs every relief in order (each a named coroutine returning whether it
  freed something; one that fails or takes over ``RELIEF_TIMEOUT_S`` is logged and the others
  still run), reads the tree again and reports ``MemoryReport(level="limit",
  relieved=[names], after_mb=…)``; then waits at
  least ``cooldown`` seconds before relieving again (reliefs are not free: a reloaded voice
  costs a second of CPU), still reporting each crossing.

- every ``tidy_interval`` seconds, whatever the level: runs the *routine* reliefs (those that
  lose nothing the meeting needs: Chromium's caches and garbage, Python's free heap) and logs
  what the tree held before and after, without a report. Memory that is free but kept (a
  renderer's drawn frames and garbage, glibc's arenas after a decode) then goes back to the
  machine every minute instead of only once the limit is near. Measured in a 7-minute soak
  (``bench/soak.py``, Meet skin, a guest joining): the tree went from 777–856 MB to 728–797 MB
  at each tidy, against 935–955 MB without tidying; latency p50 0.57 s against 0.59 s.

The guard never ends the meeting: a bot whose memory stays above the limit keeps attending
and keeps reporting, so the operator sees it long before the VM's out-of-memory killer would
end it silently. A threshold of 0 is off.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import psutil

from agent.contracts.link import MemoryReport
from agent.memory.tree import TreeMemory, read_tree

log = logging.getLogger(__name__)

# A relief that takes longer is given up (logged) and the next one runs: in a 20-minute soak at
# load 12 the first relief, a DevTools call to a page whose answers lagged minutes behind,
# never returned, and the guard reported nothing more for the rest of the meeting.
RELIEF_TIMEOUT_S = 30.0

Report = Callable[[MemoryReport], Awaitable[None]]
"""Sends a report (``BotEvents.memory``: the link and the log)."""


@dataclass(frozen=True, slots=True)
class Relief:
    """One thing the bot can free without leaving: ``run()`` returns whether it freed any."""

    name: str
    run: Callable[[], Awaitable[bool]]
    routine: bool = False
    """Also run at every tidy (cheap, and nothing the meeting needs is lost)."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Guard settings: MiB of tree PSS (0: off) and seconds (``tidy_interval`` 0: no tidying)."""

    warn_mb: float
    limit_mb: float
    interval: float
    cooldown: float
    tidy_interval: float = 0.0


def _machine_used_mb() -> float:
    """MiB the machine uses (``MemTotal - MemAvailable``)."""
    memory = psutil.virtual_memory()
    return float(memory.total - memory.available) / 2**20


class MemoryGuard:
    """Watches one bot's process tree (see the module docstring).

    Args:
        thresholds: When to warn and relieve, and how often to look.
        report: Where reports go.
        reliefs: What can be freed, in the order tried.
        read: Reads the tree (blocking; run in a thread). Defaults to this process's tree.
    """

    def __init__(
        self,
        thresholds: Thresholds,
        report: Report,
        reliefs: Sequence[Relief] = (),
        read: Callable[[], TreeMemory] = read_tree,
    ) -> None:
        self._t = thresholds
        self._report = report
        self._reliefs = tuple(reliefs)
        self._read = read
        self._warned = False
        self._relieved_at: float | None = None
        self._tidied_at = time.monotonic()
        self.last: TreeMemory | None = None
        self.reports: list[MemoryReport] = []
        self.tidies = 0

    @property
    def enabled(self) -> bool:
        """Whether any threshold or the tidying is on."""
        return self._t.warn_mb > 0 or self._t.limit_mb > 0 or self._tidying

    async def run(self) -> None:
        """Check every ``interval`` seconds until cancelled (a failed reading is logged)."""
        while True:
            try:
                await self.check()
            except Exception as exc:  # one failed reading must not end the watching
                log.warning("memory not read", extra={"error": type(exc).__name__})
            await asyncio.sleep(self._t.interval)

    async def check(self) -> MemoryReport | None:
        """Read the tree once, report and relieve as the thresholds say; return the report."""
        memory = await asyncio.to_thread(self._read)
        self.last = memory
        total = memory.total_mb
        above_limit = self._t.limit_mb > 0 and total >= self._t.limit_mb
        above_warn = self._t.warn_mb > 0 and total >= self._t.warn_mb
        if above_limit and self._may_relieve():
            return await self._relieve(memory)
        if self._tidying and time.monotonic() - self._tidied_at >= self._t.tidy_interval:
            await self._tidy(memory)
        if above_warn or above_limit:
            if self._warned:
                return None
            self._warned = True
            return await self._send(memory, "warn")
        self._warned = False
        return None

    def _may_relieve(self) -> bool:
        now = time.monotonic()
        return self._relieved_at is None or now - self._relieved_at >= self._t.cooldown

    @property
    def _tidying(self) -> bool:
        return self._t.tidy_interval > 0 and any(relief.routine for relief in self._reliefs)

    async def _run(self, reliefs: Sequence[Relief]) -> list[str]:
        """Run ``reliefs`` in order; return the names of those that freed something."""
        freed: list[str] = []
        for relief in reliefs:
            try:
                if await asyncio.wait_for(relief.run(), RELIEF_TIMEOUT_S):
                    freed.append(relief.name)
            except Exception as exc:  # the next relief may still help (timeouts included)
                log.warning(
                    "memory relief failed", extra={"relief": relief.name, "error": repr(exc)}
                )
        return freed

    async def _relieve(self, memory: TreeMemory) -> MemoryReport:
        self._relieved_at = time.monotonic()
        self._warned = True
        try:
            freed = await self._run(self._reliefs)
            after = await asyncio.to_thread(self._read)
        finally:
            self._tidied_at = time.monotonic()  # it was this interval's tidy too
        self.last = after
        return await self._send(memory, "limit", freed, after.total_mb)

    async def _tidy(self, memory: TreeMemory) -> None:
        """The routine reliefs, logged with the tree before and after (no report).

        The next tidy is due ``tidy_interval`` after this one ends: a slow tidy (a trim of a
        large heap takes hundreds of milliseconds on a busy host) is never followed at once
        by another.
        """
        try:
            freed = await self._run([relief for relief in self._reliefs if relief.routine])
            after, machine_mb = await asyncio.to_thread(lambda: (self._read(), _machine_used_mb()))
        finally:
            self._tidied_at = time.monotonic()
        self.last = after
        self.tidies += 1
        log.info(
            "memory tidied",
            extra={
                "tree_mb": round(memory.total_mb, 1),
                "parts": memory.rounded(),
                "after_mb": round(after.total_mb, 1),
                "after_parts": after.rounded(),
                "freed": freed,
                # The whole machine's (a bot VM's: with its X server and sound server).
                "machine_used_mb": round(machine_mb, 1),
            },
        )

    async def _send(
        self,
        memory: TreeMemory,
        level: Literal["warn", "limit"],
        relieved: list[str] | None = None,
        after_mb: float | None = None,
    ) -> MemoryReport:
        report = MemoryReport(
            level=level,
            tree_mb=round(memory.total_mb, 1),
            parts=memory.rounded(),
            warn_mb=self._t.warn_mb,
            limit_mb=self._t.limit_mb,
            relieved=relieved or [],
            after_mb=None if after_mb is None else round(after_mb, 1),
        )
        log.warning(
            "memory above its %s threshold",
            report.level,
            extra={
                "tree_mb": report.tree_mb,
                "parts": report.parts,
                "relieved": report.relieved,
                "after_mb": report.after_mb,
            },
        )
        self.reports.append(report)
        await self._report(report)
        return report
