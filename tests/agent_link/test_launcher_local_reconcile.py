"""The ``local`` launcher is reconciled across a control-plane restart, with real processes.

A control plane (``python -m control_plane``, the ``local`` launcher starting the stand-in agent
of ``agent_stand_in.py``) launches three bots and is killed (SIGKILL: its agents, in their own
session, keep running). While it is down, one bot ends and another one's agent dies. The next
control plane lists the agents from their folders: it stops the agent whose bot ended, fails the
bot whose agent is gone with ``agent_lost``, and leaves the third one running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import psutil
import pytest
from sqlalchemy import select, update

from agent.contracts.status import BotStatus
from control_plane.auth.provisioning import (
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.db.engine import create_database
from control_plane.db.models.bot import Meeting
from control_plane.enums import Role
from control_plane.launchers.base import LaunchHandle
from control_plane.launchers.local import LocalLauncher
from tests.ports import free_port

pytestmark = pytest.mark.api

REPO = Path(__file__).resolve().parents[2]
STAND_IN = Path(__file__).with_name("agent_stand_in.py")
# Generous: two control planes start on a shared, loaded machine (no assertion on speed).
WAIT_S = 120.0


async def _wait(check: Callable[[], Awaitable[bool]], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while not await check():
        assert loop.time() < deadline, f"not within {WAIT_S} s: {what}"
        await asyncio.sleep(0.1)


async def _api_key(database_url: str) -> str:
    database = create_database(database_url)
    try:
        async with database.sessions.begin() as session:
            user = await get_or_create_user(session, "ops@example.org")
            workspace = await create_workspace(session, "Ops")
            await add_member(session, workspace, user, Role.OWNER)
            issued = await issue_key(
                session, user=user, workspace_id=workspace.id, name="ops", key_prefix="mbk"
            )
        return issued.secret
    finally:
        await database.dispose()


class ControlPlane:
    """``python -m control_plane`` on a port of its own, with the local launcher."""

    def __init__(self, database_url: str, data_dir: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "MEETBOT_DATABASE_URL": database_url,
            "MEETBOT_DATA_DIR": str(data_dir),
            "MEETBOT_LAUNCHER": "local",
            "MEETBOT_LOCAL_AGENT_COMMAND": f"{sys.executable},{STAND_IN}",
            "MEETBOT_PUBLIC_URL": self.url,
            "MEETBOT_SCHEDULER_INTERVAL_SECONDS": "0.05",
            "MEETBOT_RECONCILE_INTERVAL_SECONDS": "0.2",
            "MEETBOT_RECONCILE_GRACE_SECONDS": "0",
            "MEETBOT_LOG_LEVEL": "WARNING",
        }
        command = [sys.executable, "-m", "control_plane", "--host", "127.0.0.1"]
        with log.open("ab") as out:
            self.process = subprocess.Popen(  # noqa: S603 -- our interpreter, fixed arguments
                [*command, "--port", str(self.port)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    async def up(self, http: aiohttp.ClientSession) -> None:
        """Wait until it answers."""

        async def answers() -> bool:
            assert self.process.poll() is None, "the control plane exited"
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with http.get(f"{self.url}/healthz") as response:
                    return response.status < 500
            return False

        await _wait(answers, "the control plane up")

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """Send ``sig`` and wait for the process."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_a_restarted_control_plane_reconciles_the_agents_it_finds(
    database_url: str, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    data_dir = tmp_path / "data"
    key = await _api_key(database_url)
    headers = {"X-API-Key": key}
    database = create_database(database_url)
    lister = LocalLauncher(data_dir)  # reads the folders only; it starts nothing
    planes: list[ControlPlane] = []
    try:
        first = ControlPlane(database_url, data_dir, tmp_path / "first.log")
        planes.append(first)
        await first.up(http)
        bots: list[uuid.UUID] = []
        for suffix in "abc":
            async with http.post(
                f"{first.url}/api/v1/bots",
                json={"platform": "google_meet", "native_meeting_id": f"abc-defg-hi{suffix}"},
                headers=headers,
            ) as response:
                assert response.status == 201, await response.text()
                bots.append(uuid.UUID((await response.json())["bot_id"]))
        ended, lost, kept = bots

        async def handles() -> dict[uuid.UUID, str | None]:
            async with database.sessions() as session:
                rows = await session.execute(
                    select(Meeting.bot_id, Meeting.bot_container_id).where(Meeting.bot_id.in_(bots))
                )
            return dict(rows.all())

        async def all_running() -> bool:
            stored = await handles()
            listed = await lister.machines()
            return all(stored.get(bot) in listed for bot in bots) and all(
                (data_dir / "bots" / str(bot) / "started").exists() for bot in bots
            )

        await _wait(all_running, "three agents started and their handles stored")
        stored = await handles()
        pids = {bot: int(str(stored[bot]).removeprefix("local-")) for bot in bots}
        assert await lister.machines() == {str(stored[bot]): bot for bot in bots}

        # The control plane dies; its agents do not.
        first.stop(signal.SIGKILL)
        assert not any(_gone(pid) for pid in pids.values())
        # Meanwhile one bot ends (another replica, an operator) and one agent dies.
        async with database.sessions.begin() as session:
            await session.execute(
                update(Meeting)
                .where(Meeting.bot_id == ended)
                .values(status=BotStatus.COMPLETED.value)
            )
        os.kill(pids[lost], signal.SIGKILL)

        second = ControlPlane(database_url, data_dir, tmp_path / "second.log")
        planes.append(second)
        await second.up(http)

        async def status_of(bot: uuid.UUID) -> tuple[str, str | None]:
            async with http.get(f"{second.url}/api/v1/bots/{bot}", headers=headers) as response:
                body = await response.json()
            return str(body["status"]), body["status_reason"]

        async def reconciled() -> bool:
            return _gone(pids[ended]) and (await status_of(lost))[0] == BotStatus.FAILED.value

        await _wait(reconciled, "the ended bot's agent stopped and the lost bot failed")
        assert await status_of(lost) == ("failed", "agent_lost")
        assert (await status_of(ended))[0] == "completed"
        assert (await status_of(kept))[0] == "requested"
        assert not _gone(pids[kept])
        assert await lister.machines() == {str(stored[kept]): kept}
    finally:
        for plane in planes:
            plane.stop()
        for handle in await lister.machines():
            await lister.terminate(LaunchHandle(id=handle))
        await database.dispose()
