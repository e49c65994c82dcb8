"""One qemu VM as files and a command line: its folder, its qemu arguments, its monitor.

:class:`VmShape` is what every VM of a :class:`~control_plane.launchers.qemu.QemuLauncher`
gets (the image, vCPUs, memory, niceness). :meth:`VmShape.prepare` fills a VM's folder with the
copy-on-write overlay ``disk.qcow2`` on the image (never written itself) and the NoCloud
``seed.iso`` (``cidata``: instance id, hostname and the user-data given); :meth:`VmShape.command`
is the qemu command line that boots it from that folder; :func:`qmp_command` talks to the
running VM's monitor (``qmp.sock``). Starting, watching and stopping VMs is the launcher's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from control_plane.launchers.qemu_accel import CPU_MODEL, Accelerator

PID_FILE = "qemu.pid"
"""qemu writes the VM's pid here (in the VM's folder) once it runs the VM."""


def process_marker(name: str) -> str:
    """The ``-name`` argument of VM ``name``'s qemu: found in its command line, it is our VM."""
    return f"{name},process={name}"


@dataclass(frozen=True, slots=True)
class VmShape:
    """The machine every VM is: its image and size, and how nice its qemu runs.

    Args:
        image: The bot image (qcow2) each VM's overlay is based on.
        cpus: vCPUs of each VM.
        memory_mib: Memory of each VM, in MiB.
        nice: Niceness added to the qemu processes (0 adds none).
    """

    image: Path
    cpus: int
    memory_mib: int
    nice: int

    def prepare(self, folder: Path, name: str, user_data: str) -> None:
        """Make ``folder`` afresh (owner only) with VM ``name``'s overlay disk and seed ISO.

        ``user_data`` (a cloud-config document) is written 0600: it may hold a one-time token
        until the VM is gone.

        Raises:
            OSError: The folder or a file could not be written.
            subprocess.CalledProcessError: ``qemu-img`` or ``genisoimage`` failed.
        """
        if folder.exists():  # a dead VM's leftovers: start afresh
            shutil.rmtree(folder)
        folder.mkdir(parents=True, mode=0o700)
        subprocess.run(  # noqa: S603 - qemu-img with paths we made
            [  # noqa: S607 - qemu-img from PATH
                "qemu-img",
                "create",
                "-q",
                "-f",
                "qcow2",
                "-F",
                "qcow2",
                "-b",
                str(self.image.resolve()),
                str(folder / "disk.qcow2"),
            ],
            check=True,
            capture_output=True,
        )
        seed = folder / "seed"
        seed.mkdir(mode=0o700)
        (seed / "meta-data").write_text(f"instance-id: {name}\nlocal-hostname: {name}\n")
        fd = os.open(seed / "user-data", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(user_data)
        subprocess.run(  # noqa: S603 - genisoimage with paths we made
            [  # noqa: S607 - genisoimage from PATH
                "genisoimage",
                "-quiet",
                "-output",
                str(folder / "seed.iso"),
                "-volid",
                "cidata",
                "-joliet",
                "-rock",
                str(seed / "user-data"),
                str(seed / "meta-data"),
            ],
            check=True,
            capture_output=True,
        )

    def command(self, qemu: str, accelerator: Accelerator, folder: Path, name: str) -> list[str]:
        """The command line booting VM ``name`` from ``folder`` (run with ``folder`` as cwd)."""
        command = [
            qemu, "-name", process_marker(name), "-accel", accelerator,
            "-cpu", CPU_MODEL[accelerator], "-smp", str(self.cpus), "-m", str(self.memory_mib),
            "-nodefaults", "-display", "none", "-no-reboot", "-vga", "none",
            "-drive", f"file={folder / 'disk.qcow2'},if=virtio,format=qcow2,discard=unmap",
            "-drive", f"file={folder / 'seed.iso'},if=virtio,format=raw,media=cdrom,readonly=on",
            "-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0",
            "-device", "virtio-rng-pci",
            "-serial", f"file:{folder / 'serial.log'}",
            # Relative to qemu's working directory (the VM's folder): a socket path must stay
            # under 108 bytes, which a deep data_dir would pass.
            "-qmp", "unix:qmp.sock,server=on,wait=off",
            "-pidfile", str(folder / PID_FILE),
        ]  # fmt: skip
        if self.nice:
            return ["nice", "-n", str(self.nice), *command]
        return command


async def qmp_command(socket_path: Path, command: str) -> None:
    """Send one QMP ``command`` (after the capabilities handshake); 5 s per step.

    The socket is reached through ``/proc/self/fd`` of its folder, a short path whatever
    the folder's length (a socket path must stay under 108 bytes).

    Raises:
        OSError: The monitor could not be reached.
        TimeoutError: It did not answer a step in time.
    """
    folder_fd = os.open(socket_path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_unix_connection(f"/proc/self/fd/{folder_fd}/{socket_path.name}"),
            timeout=5,
        )
    finally:
        os.close(folder_fd)
    try:
        await asyncio.wait_for(reader.readline(), timeout=5)  # the greeting
        for request in ({"execute": "qmp_capabilities"}, {"execute": command}):
            writer.write(json.dumps(request).encode() + b"\r\n")
            await writer.drain()
            await asyncio.wait_for(reader.readline(), timeout=5)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
