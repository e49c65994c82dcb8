"""Issue 18 finding 1: a control plane SIGKILLed between claiming due bots and launching them
loses none and doubles none.

A real ``python -m control_plane`` (``meetbot serve``) process runs the scheduler with the
``local`` launcher, whose agent program is a stand-in shell script (no browser) that appends its
config path to a log and sleeps. The test waits for the moment at which some due bots are
claimed but have no handle yet, kills the server with SIGKILL, checks that this moment was hit,
restarts it, and then requires every due bot to have a handle and to have been started exactly
once (the log has each bot's config path once): the lapsed leases are claimed again, and the
relaunch finds the agents the first process already started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from sqlalchemy import func, select

from control_plane.db.engine import Database, create_database
from control_plane.db.models.bot import Meeting
from tests.api.test_scheduler import seed_due

pytestmark = pytest.mark.api

BOTS = 200
REPO = Path(__file__).resolve().parents[2]


def _server(database_url: str, data_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MEETBOT_DATABASE_URL": database_url,
        "MEETBOT_DATA_DIR": str(data_dir),
        "MEETBOT_LAUNCHER": "local",
        # A stand-in agent: "--config <file>" arrives as $0 $1 (no commas: the list is CSV).
        "MEETBOT_LOCAL_AGENT_COMMAND": f'/bin/sh,-c,echo "$1" >> {log}; sleep 600; :',
        "MEETBOT_SCHEDULER_INTERVAL_SECONDS": "0.05",
        "MEETBOT_LAUNCH_LEASE_SECONDS": "3",
        "MEETBOT_LOG_LEVEL": "WARNING",
        "MEETBOT_PORT": "0",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "control_plane"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _counts(database: Database) -> tuple[int, int]:
    """(claimed without a handle, with a handle)."""
    async with database.sessions() as session:
        pending = await session.scalar(
            select(func.count())
            .select_from(Meeting)
            .where(Meeting.launch_claimed_at.is_not(None), Meeting.bot_container_id.is_(None))
        )
        launched = await session.scalar(
            select(func.count()).select_from(Meeting).where(Meeting.bot_container_id.is_not(None))
        )
    return pending or 0, launched or 0


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[None]:
    """Kill every stand-in agent (each is its own session) after the test."""
    yield
    for process in psutil.process_iter(["pid", "cmdline"]):
        if any(str(tmp_path) in arg for arg in process.info["cmdline"] or []):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.info["pid"], signal.SIGKILL)


async def test_sigkill_between_claim_and_launch_launches_every_bot_exactly_once(
    database_url: str, tmp_path: Path, agents: None
) -> None:
    data_dir, log = tmp_path / "data", tmp_path / "launches.log"
    data_dir.mkdir()
    database = create_database(database_url)
    try:
        await seed_due(database, BOTS)
        server = _server(database_url, data_dir, log)
        try:
            async with asyncio.timeout(120):
                while (await _counts(database))[0] == 0:
                    assert server.poll() is None, "the server exited"
                    await asyncio.sleep(0.005)
            server.send_signal(signal.SIGKILL)
        finally:
            server.kill()
            server.wait()
        pending, launched = await _counts(database)
        assert pending > 0, "the kill did not land between a claim and its launch"
        assert launched < BOTS

        server = _server(database_url, data_dir, log)
        try:
            async with asyncio.timeout(180):
                while (await _counts(database))[1] < BOTS:
                    assert server.poll() is None, "the restarted server exited"
                    await asyncio.sleep(0.1)
        finally:
            server.terminate()
            server.wait(timeout=60)

        async with database.sessions() as session:
            rows = (await session.execute(select(Meeting.bot_id, Meeting.status))).all()
        assert len(rows) == BOTS
        assert {status for _, status in rows} == {"requested"}
        started = Counter(
            Path(line).parent.name for line in log.read_text().splitlines() if line.strip()
        )
        assert set(started) == {str(bot_id) for bot_id, _ in rows}
        assert [bot for bot, times in started.items() if times != 1] == []
    finally:
        await database.dispose()
