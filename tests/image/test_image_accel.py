"""The accelerator probe boots a real kernel: the base image's, under software emulation."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from control_plane.launchers.qemu_accel import kernel_boots
from meetbot.image.cache import cache_root

pytestmark = [pytest.mark.vm, pytest.mark.slow]


def _cached_base() -> Path | None:
    bases = sorted((cache_root() / "base").glob("*/base.qcow2"))
    return bases[-1] if bases else None


@pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="qemu is not installed")
def test_base_kernel_boots_under_tcg_and_an_empty_disk_does_not(tmp_path: Path) -> None:
    base = _cached_base()
    if base is None:
        pytest.skip("no base image built yet (meetbot image build makes one)")
    assert kernel_boots(base, "tcg", timeout=120)

    empty = tmp_path / "empty.qcow2"
    qemu_img = shutil.which("qemu-img")
    assert qemu_img is not None

    subprocess.run(  # noqa: S603 - qemu-img with fixed arguments
        [qemu_img, "create", "-q", "-f", "qcow2", str(empty), "64M"], check=True
    )
    assert not kernel_boots(empty, "tcg", timeout=10)
