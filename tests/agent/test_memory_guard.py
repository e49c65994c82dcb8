"""The memory guard on this process's real tree: one warning per crossing, reliefs above the limit.

The tree is read for real (``/proc`` through psutil); the thresholds are set below what any
Python process holds, so every reading crosses them. The voice relief drops a really loaded
Piper voice, and the next speech loads it again.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from agent.contracts.link import MemoryReport
from agent.memory import guard as guard_module
from agent.memory.guard import MemoryGuard, Relief, Thresholds
from agent.memory.relief import trim_heap
from agent.memory.tree import read_tree
from agent.voice.piper_tts import PiperSynthesizer

pytestmark = pytest.mark.model


def _loaded(voice: PiperSynthesizer) -> bool:
    """Read the property afresh (mypy would keep its first value for the whole test)."""
    return voice.loaded


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A child process of this one (a role-less ``other`` part of the tree)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    process.terminate()
    process.wait(10)


def test_the_tree_is_read_by_role(child: subprocess.Popen[bytes]) -> None:
    memory = read_tree()
    assert memory.parts["agent"] > 10  # this Python, in MiB
    assert memory.parts["other"] > 1  # the child
    assert memory.total_mb == pytest.approx(sum(memory.parts.values()))


async def test_a_crossing_of_the_warn_threshold_is_reported_once() -> None:
    reports: list[MemoryReport] = []

    async def report(frame: MemoryReport) -> None:
        reports.append(frame)

    low = MemoryGuard(Thresholds(warn_mb=1, limit_mb=0, interval=1, cooldown=0), report)
    assert (await low.check()) is not None
    assert (await low.check()) is None  # still above: said once
    assert [r.level for r in reports] == ["warn"]
    assert reports[0].tree_mb > 1 and reports[0].parts["agent"] > 1
    assert reports[0].relieved == [] and reports[0].after_mb is None

    off = MemoryGuard(Thresholds(warn_mb=0, limit_mb=0, interval=1, cooldown=0), report)
    assert not off.enabled
    assert (await off.check()) is None
    assert len(reports) == 1


async def test_above_the_limit_the_reliefs_run_and_a_dropped_voice_comes_back() -> None:
    reports: list[MemoryReport] = []

    async def report(frame: MemoryReport) -> None:
        reports.append(frame)

    voice = PiperSynthesizer()
    await voice.warm_up()
    assert voice.loaded

    async def drop_voice() -> bool:
        return voice.release()

    async def page_gone() -> bool:
        raise RuntimeError("the page went away")  # a failing relief must not stop the others

    async def heap() -> bool:
        return trim_heap()

    guard = MemoryGuard(
        Thresholds(warn_mb=1, limit_mb=2, interval=1, cooldown=3600),
        report,
        [Relief("browser_caches", page_gone), Relief("voice", drop_voice), Relief("heap", heap)],
    )
    first = await guard.check()
    assert first is not None and first.level == "limit"
    assert "voice" in first.relieved and "browser_caches" not in first.relieved
    assert first.after_mb is not None and first.after_mb > 0
    assert not _loaded(voice)
    # Within the cool-down nothing is relieved again, and the crossing was already reported.
    assert (await guard.check()) is None
    assert len(reports) == 1

    pieces = [pcm async for pcm in voice.stream("The voice is back.", None)]
    assert _loaded(voice)
    assert sum(p.seconds for p in pieces) > 0.5


async def test_a_relief_that_never_returns_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard_module, "RELIEF_TIMEOUT_S", 0.2)
    reports: list[MemoryReport] = []

    async def report(frame: MemoryReport) -> None:
        reports.append(frame)

    async def page_never_answers() -> bool:
        # A DevTools call to a page that lags minutes behind: the answer comes too late.
        await asyncio.sleep(3600)
        return True

    async def heap() -> bool:
        trim_heap()
        return True

    guard = MemoryGuard(
        Thresholds(warn_mb=1, limit_mb=2, interval=1, cooldown=3600),
        report,
        [Relief("browser_caches", page_never_answers), Relief("heap", heap)],
    )
    limit = await guard.check()
    assert limit is not None and limit.relieved == ["heap"]
    assert [r.level for r in reports] == ["limit"]


async def test_the_routine_reliefs_run_every_tidy_interval_below_every_threshold() -> None:
    reports: list[MemoryReport] = []
    ran: list[str] = []

    async def report(frame: MemoryReport) -> None:
        reports.append(frame)

    async def heap() -> bool:
        ran.append("heap")
        return await asyncio.to_thread(trim_heap)

    async def voice() -> bool:
        ran.append("voice")  # not routine: only ever run above the limit
        return True

    reliefs = [Relief("heap", heap, routine=True), Relief("voice", voice)]
    guard = MemoryGuard(
        Thresholds(warn_mb=0, limit_mb=0, interval=0.05, cooldown=0, tidy_interval=1.0),
        report,
        reliefs,
    )
    assert guard.enabled  # no threshold, but tidying is on
    await guard.check()  # the first tidy comes one interval after the guard was made
    assert ran == [] and guard.tidies == 0
    await asyncio.sleep(1.05)
    await guard.check()
    await guard.check()  # the next one waits its interval again, counted from the tidy's end
    assert ran == ["heap"] and guard.tidies == 1
    assert guard.last is not None and guard.last.total_mb > 10
    await asyncio.sleep(1.05)
    await guard.check()
    assert ran == ["heap", "heap"] and guard.tidies == 2
    assert reports == []  # a tidy is routine: logged, never reported

    # Above the limit every relief runs, and that counts as the tidy of its interval.
    over = MemoryGuard(
        Thresholds(warn_mb=1, limit_mb=2, interval=0.05, cooldown=3600, tidy_interval=1.0),
        report,
        reliefs,
    )
    ran.clear()
    await asyncio.sleep(1.05)
    limit = await over.check()
    assert limit is not None and limit.relieved[-1] == "voice"
    assert ran == ["heap", "voice"] and over.tidies == 0
    await over.check()  # within the cool-down, and the tidy's interval began as the relief ended
    assert ran == ["heap", "voice"] and over.tidies == 0

    off = MemoryGuard(
        Thresholds(warn_mb=0, limit_mb=0, interval=1, cooldown=0, tidy_interval=0), report, reliefs
    )
    assert not off.enabled


async def test_a_slow_tidy_is_not_followed_at_once_by_another() -> None:
    tidied: list[float] = []

    async def slow_trim() -> bool:  # a trim of a large heap on a busy host
        tidied.append(time.monotonic())
        await asyncio.sleep(0.5)
        return True

    async def report(frame: MemoryReport) -> None:
        raise AssertionError(f"a tidy is never reported: {frame}")

    guard = MemoryGuard(
        Thresholds(warn_mb=0, limit_mb=0, interval=0.05, cooldown=0, tidy_interval=0.3),
        report,
        [Relief("heap", slow_trim, routine=True)],
    )
    await asyncio.sleep(0.35)
    await guard.check()  # tidies for 0.5 s: longer than the interval
    await guard.check()
    assert guard.tidies == 1  # the interval counts from the end of the slow tidy
    await asyncio.sleep(0.35)
    await guard.check()
    assert guard.tidies == 2 and tidied[1] - tidied[0] >= 0.8
