"""The exit watchdog (tests/plugins/exit_watchdog.py) ends a finished run a thread holds open.

Each test runs a real pytest in a subprocess on a one-test module of its own, with the plugin
and a grace of two seconds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
GRACE_S = 2

_LEAKY = """
import threading

def wait_forever(event):
    event.wait()

def test_leaves_a_thread_behind():
    threading.Thread(target=wait_forever, args=(threading.Event(),)).start()
"""

_TIDY = """
def test_leaves_nothing():
    assert True
"""


def _run(tmp_path: Path, module: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_subject.py").write_text(module)
    return subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.plugins.exit_watchdog",
            "-o",
            f"exit_watchdog_grace={GRACE_S}",
            "-o",
            "asyncio_default_fixture_loop_scope=function",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_subject.py"),
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_thread_left_waiting_gets_its_stack_printed_and_the_run_fails(tmp_path: Path) -> None:
    done = _run(tmp_path, _LEAKY)
    assert "1 passed" in done.stdout  # the test itself passed: only the exit was held
    assert done.returncode == 1
    assert f"Timeout (0:00:0{GRACE_S})!" in done.stderr
    assert "in wait_forever" in done.stderr


def test_a_run_that_leaves_nothing_exits_with_its_own_status(tmp_path: Path) -> None:
    done = _run(tmp_path, _TIDY)
    assert done.returncode == 0, done.stderr
    assert "Timeout" not in done.stderr
