"""A test run that has finished exits, whatever a test left running.

Python's shutdown joins every non-daemon thread. A test that fails half-way can leave one
waiting forever — an unclosed aiosqlite connection's worker waits on its queue — and the
finished run then held CI until its 90-minute limit (stop 28: pytest printed its summary,
then nothing until CI killed it). Once pytest is done, :func:`faulthandler.dump_traceback_later`
gives the process ``exit_watchdog_grace`` seconds (an ini option, default
``EXIT_GRACE_S``) to end; past that it writes every thread's stack to stderr, naming what was
left, and exits with status 1.

A single test that hangs is pytest's own ``faulthandler_timeout`` with
``faulthandler_exit_on_timeout`` (pyproject.toml): its stacks, then exit.
"""

from __future__ import annotations

import faulthandler
import sys

import pytest

EXIT_GRACE_S = 120.0
"""Default seconds from pytest's end to the process's end before the stacks are dumped."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``exit_watchdog_grace`` (seconds; 0 disarms the watchdog)."""
    parser.addini(
        "exit_watchdog_grace",
        "seconds a finished test run may take to exit before its threads' stacks are dumped "
        "and it exits with status 1 (0: never)",
        type="string",
        default=str(EXIT_GRACE_S),
    )


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Arm the exit watchdog (after every other plugin has torn down)."""
    grace = float(config.getini("exit_watchdog_grace"))
    stream = sys.__stderr__
    if grace <= 0 or stream is None:
        return
    faulthandler.dump_traceback_later(grace, exit=True, file=stream)
