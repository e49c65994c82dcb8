"""The qemu launcher starts a real qemu per bot and tears it down, overlay and all.

The VM boots an empty disk here (firmware only, no guest): what is checked is the launcher's
side — the overlay on the image, the NoCloud seed whose user-data carries only the bootstrap
grant (no agent token anywhere in the VM's folder), the pid and monitor, terminate, and
reconcile after a restart. The exchange of the grant is tests/agent_link/test_bootstrap.py.
Booting the real bot image is ``test_vm_agent.py`` (slow, ``scripts/test-vm``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import stat
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest
from aiohttp import web

from agent.contracts.bootstrap import BOOTSTRAP_GRANT_FILE, BootstrapGrant
from agent.contracts.bot_config import BotConfig, Platform
from agent.contracts.wire import agent_bootstrap_path, bearer
from control_plane.app import create_app
from control_plane.db.migrate import upgrade
from control_plane.launchers.base import LaunchError, LaunchHandle
from control_plane.launchers.qemu import AGENT_ENV_FILE, QemuLauncher, guest_url, user_data
from control_plane.settings import Settings
from tests.handed_settings import HANDED, SECRET, logged
from tests.plugins.agent_link import Client, LaunchBot
from tests.plugins.api_app import KEY_PREFIX

pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(
        shutil.which("qemu-system-x86_64") is None or shutil.which("genisoimage") is None,
        reason="qemu-system-x86 and genisoimage are not installed",
    ),
]


def _config(port: int = 8080) -> BotConfig:
    return BotConfig(
        bot_id=uuid.uuid4(),
        meeting_id=3,
        platform=Platform.GOOGLE_MEET,
        meeting_url="https://meet.google.com/abc-defg-hij",
        native_meeting_id="abc-defg-hij",
        control_plane_url=f"http://127.0.0.1:{port}",
        agent_token="mat_vm_secret",
    )


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "empty.qcow2"
    subprocess.run(  # noqa: S603 - qemu-img with fixed arguments
        ["qemu-img", "create", "-q", "-f", "qcow2", str(path), "64M"],  # noqa: S607
        check=True,
    )
    return path.resolve()


def _qemu_img_info(path: Path) -> dict[str, object]:
    done = subprocess.run(  # noqa: S603 - qemu-img with our path
        ["qemu-img", "info", "-U", "--output=json", str(path)],  # noqa: S607 - from PATH
        check=True,
        capture_output=True,
        text=True,
    )
    info: dict[str, object] = json.loads(done.stdout)
    return info


class Issuer:
    """Stands in for the control plane's token store: records what each token was issued for."""

    def __init__(self) -> None:
        self.issued: dict[str, BotConfig] = {}

    async def __call__(self, config: BotConfig) -> str:
        token = f"mbt_test_{len(self.issued)}"
        self.issued[token] = config
        return token


def _launcher(image: Path, state: Path, issuer: Issuer | None = None) -> QemuLauncher:
    return QemuLauncher(
        image,
        state,
        accelerator="tcg",
        memory_mib=256,
        grace_seconds=2,
        nice=10,
        bootstrap=issuer or Issuer(),
    )


def _vm_files_text(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def test_guest_url_maps_loopback_to_the_host_address() -> None:
    assert guest_url("http://127.0.0.1:8080/x", "10.0.2.2") == "http://10.0.2.2:8080/x"
    assert guest_url("http://localhost", "10.0.2.2") == "http://10.0.2.2"
    assert guest_url("https://cp.example.org:443", "10.0.2.2") == "https://cp.example.org:443"


def test_agent_settings_are_appended_to_the_agent_env_file_literally() -> None:
    grant = BootstrapGrant(
        control_plane_url="http://10.0.2.2:1", bot_id=uuid.uuid4(), bootstrap_token="t"
    )
    flags = '["--host-resolver-rules=MAP meet.google.com 10.0.2.2:4443", "--x"]'
    data = user_data(grant, {"MEETBOT_AGENT_EXTRA_BROWSER_ARGS": flags})
    files = data["write_files"]
    assert isinstance(files, list)
    assert files[1] == {
        "path": AGENT_ENV_FILE,
        "append": True,
        "content": f"MEETBOT_AGENT_EXTRA_BROWSER_ARGS='{flags}'\n",
    }
    for bad in (
        {"PATH": "/usr/bin"},
        {"MEETBOT_AGENT_X": "a\nMEETBOT_AGENT_Y=b"},
        {"MEETBOT_AGENT_X": "'"},
    ):
        with pytest.raises(ValueError):
            QemuLauncher(Path("x.qcow2"), Path("vms"), agent_env=bad)


async def test_launch_boots_an_overlay_and_terminate_removes_it(
    image: Path, tmp_path: Path
) -> None:
    issuer = Issuer()
    launcher = _launcher(image, tmp_path / "vms", issuer)
    config = _config(port=18080)
    handle = await launcher.launch(config)
    folder = launcher.vm_dir(handle.id)
    try:
        assert handle.id == f"meetbot-{config.bot_id}"
        assert await launcher.is_alive(handle)
        assert await launcher.launch(config) == handle  # idempotent by bot id

        info = await asyncio.to_thread(_qemu_img_info, folder / "disk.qcow2")
        assert info["backing-filename"] == str(image)

        # One token per VM, issued for the config as the VM sees the control plane.
        assert list(issuer.issued) == ["mbt_test_0"]
        issued = issuer.issued["mbt_test_0"]
        assert issued.control_plane_url == "http://10.0.2.2:18080"
        assert issued.bot_id == config.bot_id

        user_data_file = folder / "seed" / "user-data"
        assert stat.S_IMODE(user_data_file.stat().st_mode) == 0o600
        text = user_data_file.read_text()
        assert text.startswith("#cloud-config\n")
        cloud_config = json.loads(text.removeprefix("#cloud-config\n"))
        [grant_file] = cloud_config["write_files"]
        assert (grant_file["path"], grant_file["permissions"]) == (BOOTSTRAP_GRANT_FILE, "0600")
        grant = BootstrapGrant.model_validate_json(grant_file["content"])
        assert grant == BootstrapGrant(
            control_plane_url="http://10.0.2.2:18080",
            bot_id=config.bot_id,
            bootstrap_token="mbt_test_0",
        )
        assert handle.id in (folder / "seed" / "meta-data").read_text()
        assert b"mat_vm_secret" not in _vm_files_text(folder)  # no agent token in the VM's reach

        pid = int((folder / "qemu.pid").read_text())
        cmdline = psutil.Process(pid).cmdline()
        assert not any("fw_cfg" in part for part in cmdline)
        assert b"mat_vm_secret" not in " ".join(cmdline).encode()
        assert psutil.Process(pid).nice() == min(19, os.nice(0) + 10)  # nice adds to ours
    finally:
        await launcher.terminate(handle)
    assert not await launcher.is_alive(handle)
    assert not folder.exists()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    await launcher.terminate(handle)  # a no-op once gone


async def test_a_new_launcher_finds_running_vms_and_reconcile_stops_the_orphans(
    image: Path, tmp_path: Path
) -> None:
    first = _launcher(image, tmp_path / "vms")
    kept_config = _config()
    kept, orphan = await first.launch(kept_config), await first.launch(_config())
    await first.aclose()  # a control-plane restart: the VMs keep running
    second = _launcher(image, tmp_path / "vms")
    try:
        assert await second.is_alive(kept)
        assert await second.is_alive(orphan)
        listed = await second.machines()
        assert listed[kept.id] == kept_config.bot_id and set(listed) == {kept.id, orphan.id}
        assert await second.reconcile({kept_config.bot_id}) == [orphan.id]
        assert await second.machines() == {kept.id: kept_config.bot_id}
        assert not await second.is_alive(orphan)
        assert not second.vm_dir(orphan.id).exists()
        assert await second.is_alive(kept)
    finally:
        await second.terminate(kept)
        await second.terminate(orphan)
    assert second.vm_names() == []


async def test_missing_image_is_a_launch_error(tmp_path: Path) -> None:
    launcher = _launcher(tmp_path / "nope.qcow2", tmp_path / "vms")
    with pytest.raises(LaunchError, match="does not exist"):
        await launcher.launch(_config())
    await launcher.terminate(LaunchHandle(id="meetbot-unknown"))


async def test_a_starting_control_plane_stops_vms_whose_bot_is_not_live(
    image: Path, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'meetbot.db'}"
    await upgrade(database_url)
    before = _launcher(image, tmp_path / "vms")
    orphan = await before.launch(_config())  # a VM left by a bot the database does not know
    await before.aclose()
    # No token issuer: the app gives it one. The empty disk never powers off by itself, so
    # stopping the orphan waits out the grace in full: 2 s, as in _launcher (the default 60 s
    # made this the suite's slowest launcher test for nothing).
    launcher = QemuLauncher(
        image, tmp_path / "vms", accelerator="tcg", memory_mib=256, grace_seconds=2
    )
    with pytest.raises(LaunchError, match="no bootstrap token issuer"):
        await launcher.launch(_config())
    settings = Settings(database_url=database_url, data_dir=tmp_path / "data")
    runner = web.AppRunner(create_app(settings, launcher=launcher))
    try:
        # Inside the try: a failed start leaves the contexts it entered (the database's
        # threads) for the runner's cleanup, and the orphan VM for terminate.
        await runner.setup()
        assert not await launcher.is_alive(orphan)
        assert launcher.vm_names() == []
        # The app gave the launcher its token store, which knows no such bot (and takes a
        # machine's config, which holds no agent token: its exchange mints it).
        with pytest.raises(LaunchError, match="no bootstrap token for"):
            await launcher.launch(_config().model_copy(update={"agent_token": None}))
    finally:
        await runner.cleanup()
        await launcher.terminate(orphan)


async def test_a_vm_killed_from_outside_is_dead_and_its_overlay_removed(
    image: Path, tmp_path: Path
) -> None:
    launcher = _launcher(image, tmp_path / "vms")
    handle = await launcher.launch(_config())
    folder = launcher.vm_dir(handle.id)
    pid = int((folder / "qemu.pid").read_text())
    # One Process object for both calls: qemu is the launcher's child, and its reaper may
    # collect it between the kill and a second lookup, which would then find no such pid.
    qemu = psutil.Process(pid)
    qemu.kill()
    await asyncio.to_thread(qemu.wait, 10)
    assert not await launcher.is_alive(handle)
    assert not folder.exists()
    await launcher.terminate(handle)


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """The app of the exchange test: the operator declared a secret agent setting."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",  # replaced by the qemu launcher passed to create_app
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:18081",
        fleet_agent_settings=HANDED,
    )


@pytest.fixture
async def launcher(image: Path, tmp_path: Path) -> QemuLauncher:  # the app's launcher
    return QemuLauncher(
        image, tmp_path / "vms", accelerator="tcg", memory_mib=256, grace_seconds=2, nice=10
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_secret_agent_setting_reaches_the_vm_only_through_the_bootstrap_exchange(
    client: Client,
    launch_bot: LaunchBot,
    launcher: QemuLauncher,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    bot = await launch_bot()
    name = f"meetbot-{bot.bot_id}"
    folder = launcher.vm_dir(name)
    try:
        # Neither in the seed (user-data, meta-data, the ISO) nor on qemu's command line.
        assert SECRET.encode() not in _vm_files_text(folder)
        pid = int((folder / "qemu.pid").read_text())
        assert SECRET not in " ".join(psutil.Process(pid).cmdline())
        cloud_config = json.loads(
            (folder / "seed" / "user-data").read_text().removeprefix("#cloud-config\n")
        )
        grant = BootstrapGrant.model_validate_json(cloud_config["write_files"][0]["content"])
        answer = await client.post(
            agent_bootstrap_path(bot.bot_id), headers=bearer(grant.bootstrap_token)
        )
        assert answer.status == 200
        assert (await answer.json())["agent_settings"] == HANDED
    finally:
        await launcher.terminate(LaunchHandle(id=name))
    assert SECRET not in logged(caplog.records)
