"""An in-process launcher that records launches instead of starting VMs.

It is a real implementation of :class:`BotLauncher` (used by the API tests and by anyone running
the control plane without agents): each launch gets a handle ``mem-<n>``, stays "alive" until
terminated, and an optional ``capacity`` makes launches beyond it fail like a full VM pool.
Launching a bot that is already alive returns its handle (idempotent by bot id, as every
launcher must be: the scheduler relaunches a bot whose claim lapsed).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from agent.contracts.bot_config import BotConfig
from control_plane.launchers.base import LaunchError, LaunchHandle
from control_plane.settings import Settings


@dataclass
class MemoryLauncher:
    """Records every launch.

    Attributes:
        capacity: Maximum number of bots alive at once; None is unlimited.
        launches: Every config launched, in order.
        terminated: Handles terminated, in order.
    """

    capacity: int | None = None
    launches: list[BotConfig] = field(default_factory=list)
    terminated: list[LaunchHandle] = field(default_factory=list)
    _alive: dict[str, BotConfig] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _by_bot: dict[str, str] = field(default_factory=dict)

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Record ``config`` and return a fresh handle (the alive one of the same bot, if any).

        Raises:
            LaunchError: ``capacity`` bots are alive already.
        """
        running = self._by_bot.get(str(config.bot_id))
        if running is not None and running in self._alive:
            return LaunchHandle(id=running)
        if self.capacity is not None and len(self._alive) >= self.capacity:
            raise LaunchError(f"capacity of {self.capacity} bots reached")
        handle = LaunchHandle(id=f"mem-{next(self._ids)}")
        self.launches.append(config)
        self._alive[handle.id] = config
        self._by_bot[str(config.bot_id)] = handle.id
        return handle

    async def terminate(self, handle: LaunchHandle) -> None:
        """Mark ``handle`` stopped (idempotent)."""
        if self._alive.pop(handle.id, None) is not None:
            self.terminated.append(handle)

    async def is_alive(self, handle: LaunchHandle) -> bool:
        """Whether ``handle`` was launched and not terminated."""
        return handle.id in self._alive

    async def aclose(self) -> None:
        """Forget every alive bot."""
        self._alive.clear()
        self._by_bot.clear()


def create(settings: Settings) -> MemoryLauncher:
    """Factory used by ``Settings.launcher = "memory"``."""
    del settings  # nothing to configure
    return MemoryLauncher()
