"""How much memory the agent may use: the smaller of the machine's and its cgroup's limit.

The memory guard's thresholds default to shares of this allowance, so one agent build is
guarded sensibly in a 2 GiB bot VM, a Pod with a memory limit and a large host alike:

- ``MemTotal`` of ``/proc/meminfo`` (the VM's or host's RAM);
- the cgroup the agent runs in: ``memory.max`` (cgroup v2) or ``memory.limit_in_bytes``
  (cgroup v1), found through ``/proc/self/cgroup``; ``max`` or a v1 "no limit" (a huge
  number) is ignored.

Explicit thresholds (``MEETBOT_AGENT_MEMORY_WARN_MB`` / ``_LIMIT_MB``) override the shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MIB = 2**20
WARN_SHARE = 0.75
"""Default warn threshold as a share of the allowance: a 2 GiB VM (about 1950 MiB of
``MemTotal``) warns at about 1460 MiB of tree PSS."""
LIMIT_SHARE = 0.85
"""Default relief threshold: about 1660 MiB in a 2 GiB VM, leaving the kernel, Xvfb and
PulseAudio (about 150 MiB in the bot image) room before the out-of-memory killer."""


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """The allowance in MiB and where it came from (``meminfo`` or ``cgroup``)."""

    total_mb: float
    source: str

    def share(self, fraction: float) -> float:
        """``fraction`` of the allowance in whole MiB."""
        return float(round(self.total_mb * fraction))


def _meminfo_mb(proc: Path) -> float | None:
    try:
        text = (proc / "meminfo").read_text(encoding="ascii")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024 / MIB
    return None


def _cgroup_limit_mb(proc: Path, cgroup_root: Path) -> float | None:
    """The memory limit of this process's cgroup (v2 or v1), or None when it has none."""
    try:
        lines = (proc / "self" / "cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    candidates: list[Path] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        relative = path.lstrip("/")
        if controllers == "":  # cgroup v2's unified hierarchy
            candidates.append(cgroup_root / relative / "memory.max")
        elif "memory" in controllers.split(","):
            candidates.append(cgroup_root / "memory" / relative / "memory.limit_in_bytes")
    limits: list[float] = []
    for file in candidates:
        try:
            raw = file.read_text(encoding="ascii").strip()
        except OSError:
            continue
        if raw.isdigit() and int(raw) < 2**60:  # v1 writes ~2**63 for "no limit"
            limits.append(int(raw) / MIB)
    return min(limits) if limits else None


def read_budget(
    proc: Path = Path("/proc"), cgroup_root: Path = Path("/sys/fs/cgroup")
) -> MemoryBudget | None:
    """The agent's memory allowance, or None when neither source can be read.

    Args:
        proc: The procfs mount (a folder with ``meminfo`` and ``self/cgroup``; tests pass
            their own).
        cgroup_root: The cgroup filesystem's mount.
    """
    ram = _meminfo_mb(proc)
    group = _cgroup_limit_mb(proc, cgroup_root)
    if group is not None and (ram is None or group < ram):
        return MemoryBudget(group, "cgroup")
    return None if ram is None else MemoryBudget(ram, "meminfo")


def thresholds_mb(
    warn_mb: float | None, limit_mb: float | None, budget: MemoryBudget | None
) -> tuple[float, float]:
    """(warn, limit) in MiB: the settings where given, else shares of ``budget``.

    Without a budget (no ``/proc``) an unset threshold is off (0).
    """
    warn = warn_mb if warn_mb is not None else (budget.share(WARN_SHARE) if budget else 0.0)
    limit = limit_mb if limit_mb is not None else (budget.share(LIMIT_SHARE) if budget else 0.0)
    return warn, limit
