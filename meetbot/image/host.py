"""The build machine's side: its apt packages, root, packer's version, and its load."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path


def as_root(command: list[str]) -> list[str]:
    """Return ``command`` prefixed with ``sudo`` unless this process already runs as root.

    Raises:
        PermissionError: Not root and no ``sudo``.
    """
    if os.geteuid() == 0:
        return command
    sudo = shutil.which("sudo")
    if sudo is None:
        raise PermissionError(f"{command[0]} needs root and sudo is not installed")
    return [sudo, *command]


def package_list(checkout: Path, *names: str) -> list[str]:
    """The packages of ``images/packages/NAME.txt`` lists (comments and blanks dropped)."""
    packages: list[str] = []
    for name in names:
        for line in (checkout / "images" / "packages" / f"{name}.txt").read_text().splitlines():
            package = line.split("#", 1)[0].strip()
            if package:
                packages.append(package)
    return packages


def missing_packages(packages: list[str]) -> list[str]:
    """Those of ``packages`` that dpkg does not list as installed."""
    missing = []
    for package in packages:
        done = subprocess.run(  # noqa: S603 - dpkg-query with a package name from our lists
            ["dpkg-query", "-W", "-f=${Status}", package],  # noqa: S607 - dpkg from PATH
            capture_output=True,
            text=True,
            check=False,
        )
        if "install ok installed" not in done.stdout:
            missing.append(package)
    return missing


def ensure_packages(checkout: Path, *lists: str) -> list[str]:
    """Install with apt the packages of ``lists`` that are missing; return what was installed.

    Raises:
        subprocess.CalledProcessError: apt-get failed.
    """
    missing = missing_packages(package_list(checkout, *lists))
    if missing:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(as_root(["apt-get", "update", "-q"]), check=True, env=env)  # noqa: S603
        subprocess.run(  # noqa: S603 - apt-get with package names from our lists
            as_root(["apt-get", "install", "-y", "-q", *missing]), check=True, env=env
        )
    return missing


def packer_version() -> tuple[int, int, int]:
    """The installed packer's version, e.g. ``(1, 6, 6)``.

    Raises:
        FileNotFoundError: packer is not installed.
        ValueError: Its version output was not understood.
    """
    packer = shutil.which("packer")
    if packer is None:
        raise FileNotFoundError("packer is not installed")
    out = subprocess.run(  # noqa: S603 - packer from PATH
        [packer, "version"], capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
    if match is None:
        raise ValueError(f"unrecognised packer version output: {out!r}")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def idle_cpus() -> int:
    """Return the vCPUs to give a build VM: 2 when the machine has 2+ cores and is idle, else 1.

    The machine may be shared; "idle" means a one-minute load average below 0.5.
    """
    cores = os.cpu_count() or 1
    return 2 if cores >= 2 and os.getloadavg()[0] < 0.5 else 1
