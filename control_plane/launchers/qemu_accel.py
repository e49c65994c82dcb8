"""Choose qemu's accelerator by booting a kernel, not by looking at ``/dev/kvm``.

On nested hosts ``/dev/kvm`` can exist and ``KVM_CREATE_VM`` succeed while a Debian kernel
hangs at boot under ``-accel kvm`` (or qemu aborts with ``-cpu host``); there only software
emulation (TCG) works. So KVM counts as usable only when the image's own kernel, booted under
KVM, reaches its initramfs within a few seconds.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Literal

Accelerator = Literal["kvm", "tcg"]

# Printed by the kernel when it hands over to the initramfs: the kernel itself runs.
BOOT_MARKERS = (b"Run /init as init process", b"Freeing unused kernel image")
# qemu's -cpu model for each accelerator: the host's CPU under KVM; under TCG an Intel model
# with SSE4.2 and no AVX (x86-64-v2, which Python's wheels need; qemu64 lacks SSE4). Not "max":
# under TCG it reports vendor AuthenticAMD, so CTranslate2 runs int8 GEMMs through oneDNN
# instead of MKL, and that path under emulation took 37 min for a 1 s whisper tiny.en clip in
# the image self-test; with Westmere, CTranslate2 picks MKL (SSE4) and it takes minutes.
CPU_MODEL: dict[Accelerator, str] = {"kvm": "host", "tcg": "Westmere"}


def kernel_boots(image: Path, accelerator: Accelerator, timeout: float = 30.0) -> bool:
    """Boot ``image`` (read-only, ``-snapshot``) and report whether its kernel starts.

    Args:
        image: A bootable qcow2 whose kernel logs to the serial console (``console=ttyS0``).
        accelerator: ``kvm`` or ``tcg``.
        timeout: Seconds to wait for :data:`BOOT_MARKERS` on the serial console.

    Returns:
        True if a marker appeared in time; False if qemu failed, exited or the time ran out.
        The VM is killed either way.
    """
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        return False
    command = [
        qemu, "-accel", accelerator, "-cpu", CPU_MODEL[accelerator], "-m", "512", "-smp", "1",
        "-nodefaults", "-display", "none", "-no-reboot", "-snapshot",
        "-drive", f"file={image},if=virtio,format=qcow2", "-serial", "stdio",
    ]  # fmt: skip
    proc = subprocess.Popen(  # noqa: S603 - qemu from PATH with fixed arguments
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdout is not None  # noqa: S101 - stdout=PIPE above
    seen = b""
    deadline = time.monotonic() + timeout
    try:
        while (remaining := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([proc.stdout], [], [], remaining)
            if not ready:
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                return False
            seen = (seen + chunk)[-4096:]
            if any(marker in seen for marker in BOOT_MARKERS):
                return True
        return False
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def probe_accelerator(image: Path, timeout: float = 30.0) -> Accelerator:
    """Return ``kvm`` if ``/dev/kvm`` is usable and ``image``'s kernel boots under it.

    Otherwise ``tcg``. Costs up to ``timeout`` seconds when KVM hangs.
    """
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    return "kvm" if kernel_boots(image, "kvm", timeout) else "tcg"
