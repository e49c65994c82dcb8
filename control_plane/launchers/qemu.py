"""The ``qemu`` launcher: each bot runs on its own virtual machine booted from the bot image.

For every bot it makes a folder ``{state_dir}/{name}/`` (``name`` is ``meetbot-{bot_id}``, the
bot's ``bot_container_id``) holding:

- ``disk.qcow2`` — a copy-on-write overlay on the image (the image itself is never written);
- ``seed.iso`` — a NoCloud ``cidata`` disk: the instance id and hostname, and user-data whose
  ``write_files`` puts the bootstrap grant (:class:`agent.contracts.bootstrap.BootstrapGrant`:
  the control-plane URL, the bot id and a one-time, expiring bootstrap token, nothing else) at
  ``/etc/meetbot/bootstrap.json`` (root, 0600). ``images/units/meetbot-agent.service`` trades
  the token for the ``BotConfig`` when cloud-init has finished; the agent token and the
  operator's agent settings (``Settings.fleet_agent_settings``, secrets among them) come with
  that answer and never lie in user-data or on this host's disk. ``agent_env`` (the
  ``qemu_agent_env`` setting) adds non-secret ``MEETBOT_AGENT_*`` lines to the image's
  ``agent.env`` through user-data; secret names are refused there;
- ``qemu.pid``, ``qmp.sock`` (the monitor), ``serial.log`` (the VM's console: boot and agent).

The folder's files and the qemu command line are :class:`~control_plane.launchers.qemu_vm.
VmShape`'s; this launcher starts, watches and stops the VMs.

The token comes from the control plane's issuer (:class:`~control_plane.launchers.base.
Bootstrapping`; the control plane calls :meth:`use_bootstrap` at its start, tests may pass
``bootstrap=``); without one, :meth:`launch` fails.

The VM gets user-mode networking: it reaches this host's loopback at ``host_address``
(``10.0.2.2``), so a ``control_plane_url`` on ``127.0.0.1``/``localhost`` is rewritten to it.
:meth:`terminate` asks the VM to power off (ACPI, through QMP; the agent gets SIGTERM from
systemd and leaves the meeting), waits ``grace_seconds``, kills qemu if it is still there, and
deletes the folder with the overlay. VMs outlive a control-plane restart: a new launcher finds
them by their folders and pid files, and :meth:`reconcile` stops those whose bot is no longer
live; :meth:`machines` lists them for the periodic reconciliation loop.

The accelerator is KVM only where it really boots the image's kernel
(:func:`control_plane.launchers.qemu_accel.probe_accelerator`), else TCG.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Literal
from uuid import UUID

import psutil

from agent.contracts.agent_settings import SECRET_SETTINGS
from agent.contracts.bootstrap import BOOTSTRAP_GRANT_FILE, BootstrapGrant
from agent.contracts.bot_config import BotConfig
from control_plane.launchers.base import BootstrapIssuer, LaunchError, LaunchHandle
from control_plane.launchers.loopback import off_loopback
from control_plane.launchers.qemu_accel import Accelerator, probe_accelerator
from control_plane.launchers.qemu_vm import PID_FILE, VmShape, process_marker, qmp_command
from control_plane.settings import Settings

logger = logging.getLogger(__name__)

NAME_PREFIX = "meetbot-"
# The address of the host's loopback as seen from a VM on qemu's user-mode network.
USER_NET_HOST = "10.0.2.2"


AGENT_ENV_FILE = "/etc/meetbot/agent.env"
"""The agent's environment file in the image (``EnvironmentFile=`` of meetbot-agent.service)."""


def agent_env_lines(env: Mapping[str, str]) -> str:
    """``env`` as lines of a systemd environment file, each value single-quoted (kept literal).

    Raises:
        ValueError: A name is not ``MEETBOT_AGENT_*`` or is a secret one (user-data is no
            place for it), or a value holds a newline or ``'``.
    """
    lines = []
    for name, value in sorted(env.items()):
        if not re.fullmatch(r"MEETBOT_AGENT_[A-Z0-9_]+", name):
            raise ValueError(f"{name!r} is not a MEETBOT_AGENT_* setting")
        if name in SECRET_SETTINGS:
            raise ValueError(
                f"{name} is secret and user-data is readable on the VM: set it as {name} on "
                "the control plane, which hands it over in the bootstrap exchange"
            )
        if "\n" in value or "'" in value:
            raise ValueError(f"{name}: a value cannot hold a newline or a single quote")
        lines.append(f"{name}='{value}'\n")
    return "".join(lines)


def user_data(
    grant: BootstrapGrant, agent_env: Mapping[str, str] | None = None
) -> dict[str, object]:
    """The VM's cloud-config (a JSON object, which is YAML): the grant file and SSH settings.

    ``agent_env`` (non-secret ``MEETBOT_AGENT_*`` settings, e.g. extra browser flags) is
    appended to the image's :data:`AGENT_ENV_FILE`. One SSH host key type: an RSA key alone
    took about a minute of a boot under emulation.
    """
    files: list[dict[str, object]] = [
        {
            "path": BOOTSTRAP_GRANT_FILE,
            "owner": "root:root",
            "permissions": "0600",
            "content": grant.model_dump_json(),
        }
    ]
    if agent_env:
        files.append(
            {"path": AGENT_ENV_FILE, "append": True, "content": agent_env_lines(agent_env)}
        )
    return {
        "ssh_pwauth": False,
        "disable_root": True,
        "ssh_genkeytypes": ["ed25519"],
        "write_files": files,
    }


def guest_url(url: str, host_address: str) -> str:
    """``url`` as the VM must use it: a loopback host becomes ``host_address``, port kept."""
    return off_loopback(url, host_address, keep_port=True)


class QemuLauncher:
    """Starts one qemu VM per bot and stops it.

    Args:
        image: The bot image (qcow2) every VM's overlay is based on.
        state_dir: Parent of the per-VM folders.
        cpus: vCPUs of each VM.
        memory_mib: Memory of each VM, in MiB.
        accelerator: ``kvm``, ``tcg``, or ``auto`` (probe once, at the first launch).
        host_address: The host's loopback as the VM reaches it (user-mode networking).
        grace_seconds: How long :meth:`terminate` waits for the VM to power off by itself.
        nice: Niceness added to the qemu processes (0 adds none; a shared host may want 10).
        bootstrap: Mints each VM's bootstrap token (else set by :meth:`use_bootstrap`).
        agent_env: ``MEETBOT_AGENT_*`` settings added to every VM's agent environment (not
            secret: they travel in user-data).
    """

    def __init__(
        self,
        image: Path,
        state_dir: Path,
        *,
        cpus: int = 1,
        memory_mib: int = 2048,
        accelerator: Literal["auto", "kvm", "tcg"] = "auto",
        host_address: str = USER_NET_HOST,
        grace_seconds: float = 60.0,
        nice: int = 0,
        bootstrap: BootstrapIssuer | None = None,
        agent_env: Mapping[str, str] | None = None,
    ) -> None:
        self._vm = VmShape(image, cpus=cpus, memory_mib=memory_mib, nice=nice)
        self._state_dir = state_dir
        self._accelerator: Accelerator | None = None if accelerator == "auto" else accelerator
        self._host_address = host_address
        self._grace_seconds = grace_seconds
        self._bootstrap = bootstrap
        self._agent_env = dict(agent_env or {})
        agent_env_lines(self._agent_env)  # refuse a bad setting now, not at a launch
        self._processes: dict[str, asyncio.subprocess.Process] = {}
        self._accel_lock = asyncio.Lock()
        self._launching: set[str] = set()  # names whose launch is under way

    def use_bootstrap(self, issue: BootstrapIssuer) -> None:
        """Mint the VMs' bootstrap tokens with ``issue`` (the control plane's issuer)."""
        self._bootstrap = issue

    def vm_dir(self, name: str) -> Path:
        """The folder of the VM called ``name``."""
        return self._state_dir / name

    async def accelerator(self) -> Accelerator:
        """The accelerator the VMs use (probed once when the setting is ``auto``)."""
        async with self._accel_lock:
            if self._accelerator is not None:
                return self._accelerator
            probed: Accelerator = await asyncio.to_thread(probe_accelerator, self._vm.image)
            self._accelerator = probed
            logger.info("qemu accelerator probed", extra={"accelerator": probed})
            return probed

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Boot a VM for ``config``'s bot; the handle id is the VM's name ``meetbot-{bot_id}``.

        Idempotent: a bot whose VM still runs gets that VM's handle.

        Raises:
            LaunchError: No image, no qemu, no bootstrap issuer, or qemu refused to start.
        """
        name = f"{NAME_PREFIX}{config.bot_id}"
        self._launching.add(name)
        try:
            return await self._launch(name, config)
        finally:
            self._launching.discard(name)

    async def _launch(self, name: str, config: BotConfig) -> LaunchHandle:
        if await asyncio.to_thread(self._running_pid, name) is not None:
            logger.info("VM already running", extra={"bot_id": str(config.bot_id), "vm": name})
            return LaunchHandle(id=name)
        if not self._vm.image.is_file():
            raise LaunchError(f"bot image {self._vm.image} does not exist (meetbot image build)")
        qemu = shutil.which("qemu-system-x86_64")
        if qemu is None:
            raise LaunchError("qemu-system-x86_64 is not installed")
        if self._bootstrap is None:
            raise LaunchError("the qemu launcher has no bootstrap token issuer")
        accelerator = await self.accelerator()
        guest_cp = guest_url(config.control_plane_url or "", self._host_address)
        if not guest_cp:
            raise LaunchError("a VM's bot needs a control_plane_url to bootstrap from")
        # The config as the VM must see it is what the token buys.
        try:
            token = await self._bootstrap(config.model_copy(update={"control_plane_url": guest_cp}))
        except LookupError as exc:
            raise LaunchError(f"no bootstrap token for {name}: {exc}") from exc
        grant = BootstrapGrant(
            control_plane_url=guest_cp, bot_id=config.bot_id, bootstrap_token=token
        )
        folder = self.vm_dir(name)
        try:
            # The one-time token is in here until the VM is gone: the folder is the owner's only.
            cloud_config = json.dumps(user_data(grant, self._agent_env))
            await asyncio.to_thread(
                self._vm.prepare, folder, name, "#cloud-config\n" + cloud_config + "\n"
            )
            command = self._vm.command(qemu, accelerator, folder, name)
            log_file = await asyncio.to_thread((folder / "qemu.log").open, "ab")
            try:
                process = await asyncio.create_subprocess_exec(
                    *command,
                    cwd=folder,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,  # VMs outlive a control-plane restart
                )
            finally:
                log_file.close()
        except (OSError, subprocess.CalledProcessError) as exc:
            await asyncio.to_thread(shutil.rmtree, folder, True)
            raise LaunchError(f"VM {name} could not start: {exc}") from exc
        self._processes[name] = process
        await self._started(name, process)
        logger.info(
            "VM started",
            extra={"bot_id": str(config.bot_id), "vm": name, "accelerator": accelerator},
        )
        return LaunchHandle(id=name)

    async def _started(self, name: str, process: asyncio.subprocess.Process) -> None:
        """Wait until qemu wrote its pid file (it runs the VM), or fail with its log."""
        pid_file = self.vm_dir(name) / PID_FILE
        for _ in range(600):
            if await asyncio.to_thread(pid_file.is_file):
                return
            if process.returncode is not None:
                break
            await asyncio.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        self._processes.pop(name, None)
        log = await asyncio.to_thread(
            (self.vm_dir(name) / "qemu.log").read_text, "utf-8", "replace"
        )
        await asyncio.to_thread(shutil.rmtree, self.vm_dir(name), True)
        raise LaunchError(f"VM {name} did not start: {log.strip()[-500:]}")

    def _running_pid(self, name: str) -> int | None:
        """The pid of the qemu running VM ``name``, from its pid file, else None."""
        folder = self.vm_dir(name)
        try:
            pid_text = (folder / PID_FILE).read_text(encoding="ascii").strip()
        except (FileNotFoundError, NotADirectoryError):
            owned = self._processes.get(name)
            return owned.pid if owned is not None and owned.returncode is None else None
        if not pid_text.isdigit():
            return None
        try:
            process = psutil.Process(int(pid_text))
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
            cmdline = process.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        # A recycled pid is not our VM: only a qemu naming this VM qualifies.
        if process_marker(name) not in cmdline:
            return None
        return process.pid

    async def is_alive(self, handle: LaunchHandle) -> bool:
        """Whether the VM ``handle`` names runs (also one started before a restart).

        A VM found stopped (powered off after its agent exited, or killed from outside) has
        its folder and overlay removed here: a VM is never booted twice.
        """
        name = handle.id
        process = self._processes.get(name)
        alive = (process is None or process.returncode is None) and (
            await asyncio.to_thread(self._running_pid, name) is not None
        )
        if not alive and name not in self._launching and name.startswith(NAME_PREFIX):
            self._processes.pop(name, None)
            await asyncio.to_thread(shutil.rmtree, self.vm_dir(name), True)
        return alive

    async def terminate(self, handle: LaunchHandle) -> None:
        """Power the VM off (ACPI, then kill after the grace period) and delete its folder.

        Unknown or already stopped VMs only have their folder removed.
        """
        name = handle.id
        if not name.startswith(NAME_PREFIX) or "/" in name:
            return
        process = self._processes.pop(name, None)
        pid = await asyncio.to_thread(self._running_pid, name)
        if pid is not None:
            await self._power_off(name, pid)
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        await asyncio.to_thread(shutil.rmtree, self.vm_dir(name), True)
        logger.info("VM terminated", extra={"vm": name})

    async def _power_off(self, name: str, pid: int) -> None:
        with contextlib.suppress(OSError):
            await qmp_command(self.vm_dir(name) / "qmp.sock", "system_powerdown")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._grace_seconds
        while loop.time() < deadline:
            if await asyncio.to_thread(self._running_pid, name) is None:
                return
            await asyncio.sleep(0.5)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(psutil.NoSuchProcess, psutil.TimeoutExpired):
            await asyncio.to_thread(psutil.Process(pid).wait, 10)

    def vm_names(self) -> list[str]:
        """Names of the VM folders under ``state_dir`` (running or not)."""
        if not self._state_dir.is_dir():
            return []
        return sorted(
            path.name
            for path in self._state_dir.iterdir()
            if path.is_dir() and path.name.startswith(NAME_PREFIX)
        )

    async def machines(self) -> dict[str, UUID]:
        """The VMs that run or are being started: name → bot id (for the reconciliation loop).

        A folder whose VM stopped is not listed (its bot's machine is gone).
        """
        listed: dict[str, UUID] = {}
        for name in await asyncio.to_thread(self.vm_names):
            try:
                bot_id = UUID(name.removeprefix(NAME_PREFIX))
            except ValueError:
                continue
            running = await asyncio.to_thread(self._running_pid, name)
            if name in self._launching or running is not None:
                listed[name] = bot_id
        return listed

    async def reconcile(self, live_bot_ids: Collection[UUID]) -> list[str]:
        """Stop every VM (and remove every folder) whose bot is not in ``live_bot_ids``.

        Args:
            live_bot_ids: Bots in a live status (``requested`` … ``stopping``).

        Returns:
            The names of the VMs torn down.
        """
        live = {f"{NAME_PREFIX}{bot_id}" for bot_id in live_bot_ids}
        names = await asyncio.to_thread(self.vm_names)
        gone = [name for name in names if name not in live]
        await asyncio.gather(*(self.terminate(LaunchHandle(id=name)) for name in gone))
        if gone:
            logger.info("orphan VMs stopped", extra={"vms": gone})
        return gone

    async def aclose(self) -> None:
        """Forget the qemu process objects; the VMs keep running (they belong to their bots)."""
        self._processes.clear()


def create(settings: Settings) -> QemuLauncher:
    """Factory used by ``Settings.launcher = "qemu"``: VMs live under ``{data_dir}/vms``.

    Raises:
        ValueError: ``MEETBOT_QEMU_IMAGE`` is not set.
    """
    if settings.qemu_image is None:
        raise ValueError("MEETBOT_QEMU_IMAGE is not set (meetbot image path prints the image)")
    return QemuLauncher(
        settings.qemu_image,
        settings.data_dir / "vms",
        cpus=settings.qemu_cpus,
        memory_mib=settings.qemu_memory_mib,
        accelerator=settings.qemu_accelerator,
        host_address=settings.qemu_host_address,
        nice=settings.qemu_nice,
        agent_env=settings.qemu_agent_env,
    )
