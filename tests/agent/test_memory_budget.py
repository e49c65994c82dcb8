"""The memory guard's default thresholds follow the machine: MemTotal or the cgroup's limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.memory.budget import LIMIT_SHARE, WARN_SHARE, read_budget, thresholds_mb
from agent.process.settings import AgentSettings

pytestmark = pytest.mark.unit

GIB_KB = 2**20


def _proc(tmp_path: Path, mem_kb: int, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal:       {mem_kb} kB\nMemFree: 1 kB\n")
    (proc / "self" / "cgroup").write_text(cgroup)
    return proc


def test_a_2_gib_vm_without_a_cgroup_limit_is_guarded_by_its_ram(tmp_path: Path) -> None:
    proc = _proc(tmp_path, 2 * GIB_KB - 60_000, "0::/system.slice/meetbot-agent.service\n")
    root = tmp_path / "cgroup" / "system.slice" / "meetbot-agent.service"
    root.mkdir(parents=True)
    (root / "memory.max").write_text("max\n")
    budget = read_budget(proc, tmp_path / "cgroup")
    assert budget is not None and budget.source == "meminfo"
    warn, limit = thresholds_mb(None, None, budget)
    # Below the old fixed 1700 MB limit's 85% of 2 GiB, above a bot with detection (~1.25 GB).
    assert 1400 < warn < limit < 1700
    assert warn == round(budget.total_mb * WARN_SHARE)
    assert limit == round(budget.total_mb * LIMIT_SHARE)


def test_a_cgroup_v2_limit_below_the_ram_wins(tmp_path: Path) -> None:
    proc = _proc(tmp_path, 16 * GIB_KB, "0::/kubepods/pod1/agent\n")
    group = tmp_path / "cgroup" / "kubepods" / "pod1" / "agent"
    group.mkdir(parents=True)
    (group / "memory.max").write_text(str(1536 * 2**20) + "\n")
    budget = read_budget(proc, tmp_path / "cgroup")
    assert budget is not None and (budget.source, budget.total_mb) == ("cgroup", 1536)


def test_a_cgroup_v1_limit_is_read_and_its_no_limit_ignored(tmp_path: Path) -> None:
    cgroup = "5:cpu,cpuacct:/\n4:memory:/bots/one\n0::/\n"
    proc = _proc(tmp_path, 8 * GIB_KB, cgroup)
    group = tmp_path / "cgroup" / "memory" / "bots" / "one"
    group.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text(str(1024 * 2**20))
    budget = read_budget(proc, tmp_path / "cgroup")
    assert budget is not None and budget.total_mb == 1024
    (group / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    budget = read_budget(proc, tmp_path / "cgroup")
    assert budget is not None and (budget.source, budget.total_mb) == ("meminfo", 8192)


def test_settings_override_the_shares_and_zero_stays_off(tmp_path: Path) -> None:
    proc = _proc(tmp_path, 2 * GIB_KB, "0::/\n")
    budget = read_budget(proc, tmp_path / "cgroup")
    assert thresholds_mb(1000.0, 0.0, budget) == (1000.0, 0.0)
    assert thresholds_mb(None, None, None) == (0.0, 0.0)  # no /proc: nothing to follow
    settings = AgentSettings()
    assert settings.memory_warn_mb is None and settings.memory_limit_mb is None


def test_this_machine_has_a_budget_no_larger_than_its_ram() -> None:
    budget = read_budget()
    assert budget is not None
    ram_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    assert 0 < budget.total_mb <= ram_kb / 1024
