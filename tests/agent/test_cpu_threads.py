"""The transcription's default thread count follows the CPUs the agent may use."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

_PRINT_THREADS = (
    "from agent.process.settings import AgentSettings; "
    "print(AgentSettings().transcribe_cpu_threads)"
)


def _threads_on(cpus: set[int], env: dict[str, str] | None = None) -> int:
    """The default as a fresh agent process pinned to ``cpus`` computes it."""
    pin = f"import os; os.sched_setaffinity(0, {sorted(cpus)!r}); "
    out = subprocess.run(  # noqa: S603 - our own interpreter with our own code
        [sys.executable, "-c", pin + _PRINT_THREADS],
        check=True, capture_output=True, text=True, env={**os.environ, **(env or {})},
    )  # fmt: skip
    return int(out.stdout)


def test_one_cpu_gets_one_decoding_thread() -> None:
    # A 1-vCPU bot VM: a second thread would only spin against the first.
    assert _threads_on({min(os.sched_getaffinity(0))}) == 1


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_two_or_more_cpus_get_two_and_the_setting_wins() -> None:
    cpus = os.sched_getaffinity(0)
    assert _threads_on(cpus) == 2
    assert _threads_on(cpus, {"MEETBOT_AGENT_TRANSCRIBE_CPU_THREADS": "4"}) == 4
    assert _threads_on({min(cpus)}, {"MEETBOT_AGENT_TRANSCRIBE_CPU_THREADS": "3"}) == 3
