"""PSS of the agent's process tree, by role (``/proc/<pid>/smaps_rollup`` through psutil).

PSS (proportional set size) counts each shared page once across the tree, so the parts add up
to what the tree costs the machine. A process that ends between listing and reading is
skipped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

ROLES = ("agent", "driver", "browser", "renderer", "chromium_other", "other")
MIB = 2**20


@dataclass(frozen=True, slots=True)
class TreeMemory:
    """One reading: PSS in MiB per role (keys of :data:`ROLES` that had a process)."""

    parts: dict[str, float]

    @property
    def total_mb(self) -> float:
        """PSS of the whole tree in MiB."""
        return sum(self.parts.values())

    def rounded(self) -> dict[str, float]:
        """``parts`` rounded to 0.1 MiB (for logs and reports)."""
        return {role: round(mb, 1) for role, mb in sorted(self.parts.items())}


def role(process: psutil.Process, root_pid: int) -> str:
    """Which part of the bot ``process`` is (one of :data:`ROLES`).

    Raises:
        psutil.Error: The process ended or cannot be read.
    """
    if process.pid == root_pid:
        return "agent"
    name = process.name().lower()
    if "chrom" in name:
        command = process.cmdline()
        if "--type=renderer" in command:
            return "renderer"
        return "chromium_other" if any(a.startswith("--type=") for a in command) else "browser"
    if "node" in name:
        return "driver"
    return "other"


def read_tree(root_pid: int | None = None) -> TreeMemory:
    """PSS of ``root_pid`` (this process by default) and all its descendants, by role.

    Blocking (reads one small procfs file per process); call it through ``asyncio.to_thread``.

    Raises:
        psutil.NoSuchProcess: ``root_pid`` does not exist.
    """
    pid = os.getpid() if root_pid is None else root_pid
    root = psutil.Process(pid)
    parts: dict[str, float] = {}
    for process in [root, *root.children(recursive=True)]:
        try:
            kind = role(process, pid)
            pss = process.memory_full_info().pss
        except psutil.Error:
            continue
        parts[kind] = parts.get(kind, 0.0) + pss / MIB
    return TreeMemory(parts)
