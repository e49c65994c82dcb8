"""The agent's glibc tuning: threads share one malloc arena; trimming runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

# A child process has six threads allocate at the same time (each would get an arena of its
# own) and prints glibc's statistics, one "Arena N:" line per arena, on stderr.
_CHILD = textwrap.dedent(
    """
    import ctypes, sys, threading
    from agent.process import heap
    if sys.argv[1] == "tuned":
        assert heap.tune()
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    together = threading.Barrier(6)
    def allocate():
        together.wait()
        libc.malloc(64 * 1024)
        together.wait()
    threads = [threading.Thread(target=allocate) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    libc.malloc_stats()
    """
)


def _arenas(mode: str) -> int:
    done = subprocess.run(  # noqa: S603 - our own interpreter and a fixed script
        [sys.executable, "-c", _CHILD, mode],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    return sum(line.startswith("Arena ") for line in done.stderr.splitlines())


def test_threads_share_one_arena_once_tuned() -> None:
    assert _arenas("default") >= 4  # the control: glibc gives most threads an arena each
    assert _arenas("tuned") == 1


def test_trim_runs_on_glibc() -> None:
    from agent.process import heap

    assert isinstance(heap.trim(), bool)
