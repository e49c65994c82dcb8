"""A bot on its own VM: the control plane's qemu launcher boots the bot image and the agent in
the VM registers over the agent link.

Under software emulation (TCG) a boot, cloud-init and the agent's start take several minutes,
more than the CI budget of the default run: the test runs only when ``MEETBOT_TEST_VM_IMAGE``
names a bot image, which ``scripts/test-vm`` sets to the cached image of this checkout
(``meetbot image path``).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import psutil
import pytest
from aiohttp import web
from sqlalchemy import select

from control_plane.app import create_app
from control_plane.auth.provisioning import (
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.db.engine import DB
from control_plane.db.migrate import upgrade
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.enums import Role
from control_plane.launchers.base import LaunchHandle
from control_plane.launchers.qemu import QemuLauncher
from control_plane.settings import Settings
from tests.ports import free_port

IMAGE = os.environ.get("MEETBOT_TEST_VM_IMAGE", "")
# Boot, cloud-init and the agent's imports under TCG on a loaded 2-core host.
REGISTER_WITHIN = float(os.environ.get("MEETBOT_TEST_VM_TIMEOUT", "1500"))

pytestmark = [
    pytest.mark.vm,
    pytest.mark.slow,
    pytest.mark.skipif(not IMAGE, reason="MEETBOT_TEST_VM_IMAGE is not set (scripts/test-vm)"),
]


class Running:
    """The control plane under test, its API key and its launcher."""

    def __init__(self, app: web.Application, port: int, key: str, launcher: QemuLauncher):
        self.app = app
        self.api = f"http://127.0.0.1:{port}/api/v1"
        self.key = key
        self.launcher = launcher


@pytest.fixture
async def control_plane(tmp_path: Path) -> AsyncIterator[Running]:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'meetbot.db'}"
    await upgrade(database_url)
    port = free_port()
    settings = Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        scheduler_interval_seconds=0.5,
        agent_connect_timeout_seconds=REGISTER_WITHIN + 60,
        heartbeat_timeout_seconds=120,
    )
    launcher = QemuLauncher(
        Path(IMAGE), tmp_path / "vms", accelerator="auto", memory_mib=2048, nice=10
    )
    app = create_app(settings, launcher=launcher)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    async with app[DB].sessions.begin() as session:
        user = await get_or_create_user(session, "vm@example.org")
        workspace = await create_workspace(session, "VM")
        await add_member(session, workspace, user, Role.OWNER)
        issued = await issue_key(
            session, user=user, workspace_id=workspace.id, name="vm", key_prefix="mbk"
        )
    try:
        yield Running(app, port, issued.secret, launcher)
    finally:
        for name in launcher.vm_names():
            await launcher.terminate(LaunchHandle(id=name))
        await runner.cleanup()


async def _link(cp: Running, bot_id: str) -> AgentLink | None:
    async with cp.app[DB].sessions.begin() as session:
        meeting = (
            await session.execute(select(Meeting).where(Meeting.bot_id == uuid.UUID(bot_id)))
        ).scalar_one()
        return await session.get(AgentLink, meeting.id)


async def test_the_agent_in_its_vm_registers_and_terminate_removes_the_vm(
    control_plane: Running,
) -> None:
    cp = control_plane
    headers = {"X-API-Key": cp.key}
    async with aiohttp.ClientSession(headers=headers) as http:
        body = {
            "platform": "google_meet",
            "meeting_url": "https://meet.google.com/vmt-estv-mab",
            "bot_name": "VM bot",
            "transcribe_enabled": False,
        }
        async with http.post(f"{cp.api}/bots", json=body) as created:
            assert created.status == 201, await created.text()
            bot_id: str = (await created.json())["bot_id"]
        name = f"meetbot-{bot_id}"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REGISTER_WITHIN
        link = None
        while loop.time() < deadline:
            link = await _link(cp, bot_id)
            if link is not None and link.registered_at is not None:
                break
            await asyncio.sleep(2)
        serial = cp.launcher.vm_dir(name) / "serial.log"
        tail = serial.read_text(errors="replace")[-3000:] if serial.exists() else "(no log)"
        assert link is not None and link.registered_at is not None, tail
        assert link.agent_version

        async with http.get(f"{cp.api}/bots/{bot_id}") as response:
            record = await response.json()
        assert record["bot_container_id"] == name
        pid = int((cp.launcher.vm_dir(name) / "qemu.pid").read_text())

    await cp.launcher.terminate(LaunchHandle(id=name))
    assert not cp.launcher.vm_dir(name).exists()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
