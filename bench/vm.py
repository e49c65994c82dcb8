"""Bots on their own VMs: POST → VM running → agent registered, and the VMs' footprint.

Starts an in-process control plane (SQLite) with the ``qemu`` launcher on a bot image and
creates ``--bots`` bots at once; prints one JSON line per figure:

- ``vm_running_s``: ``POST /api/v1/bots`` → qemu runs the bot's VM (its pid file exists);
- ``agent_registered_s``: ``POST`` → the agent in the VM registered over the agent link
  (``agent_links.registered_at``); goal ≤ 30 s with KVM;
- ``vm_peak_rss_mb`` and ``vm_mean_cpu_cores``: each qemu process from its start until the
  agent registered (boot, cloud-init, the agent's start), sampled every second;
- with every figure: the ``accelerator`` used and the host's one-minute ``load``;
- first, ``"figure": "image"`` from the build's report (``manifest.json`` beside a cached
  image of ``meetbot image build``): ``build_s`` (``base_s`` native base + ``packer_s`` packer
  build with the self-test), ``size_mb`` on disk, ``virtual_size``, the build VM's
  ``accelerator`` and ``cpus``, and the self-test's report lines (``selftest``). ``--image-only``
  prints just that.

The bots' meeting URL leads nowhere (no meeting is needed to register); the VMs are torn down
at the end. Usage: ``nice -n 10 python -m bench.vm --image FILE.qcow2 [--bots 2]
[--accelerator auto|kvm|tcg] [--memory 2048] [--timeout 1800] [--image-only]``
(``meetbot image path`` prints the cached image).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Literal, cast

import aiohttp
import psutil
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
from meetbot.image.cache import MANIFEST_FILE, Manifest


def emit(**fields: Any) -> None:
    """Print one figure as a JSON line."""
    print(json.dumps({"bench": "vm", **fields}), flush=True)


def image_figure(image: Path) -> dict[str, Any] | None:
    """The build's figures of ``image`` from the manifest beside it; None without one."""
    if not (image.parent / MANIFEST_FILE).is_file():
        return None
    manifest = Manifest.read(image.parent)
    return {
        "figure": "image",
        "key": manifest.key[:16],
        "built_at": manifest.built_at,
        "build_s": round(manifest.base_seconds + manifest.packer_seconds, 1),
        "base_s": round(manifest.base_seconds, 1),
        "packer_s": round(manifest.packer_seconds, 1),
        "size_mb": round(manifest.size_bytes / 2**20),
        "virtual_size": manifest.virtual_size,
        "accelerator": manifest.accelerator,
        "cpus": manifest.cpus,
        "selftest": manifest.selftest,
    }


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _registered(app: web.Application, bot_id: str) -> bool:
    async with app[DB].sessions.begin() as session:
        meeting = (
            await session.execute(select(Meeting).where(Meeting.bot_id == uuid.UUID(bot_id)))
        ).scalar_one()
        link = await session.get(AgentLink, meeting.id)
        return link is not None and link.registered_at is not None


async def _follow(
    app: web.Application, launcher: QemuLauncher, bot_id: str, posted: float, limit_s: float
) -> dict[str, Any]:
    """Times and qemu samples of one bot until its agent registered (or the timeout)."""
    name = f"meetbot-{bot_id}"
    pid_file = launcher.vm_dir(name) / "qemu.pid"
    figures: dict[str, Any] = {"bot": name}
    process: psutil.Process | None = None
    peak_rss = 0
    cpu_start = 0.0
    while time.monotonic() - posted < limit_s:
        if process is None and pid_file.is_file():
            process = psutil.Process(int(pid_file.read_text()))
            figures["vm_running_s"] = round(time.monotonic() - posted, 1)
            times = process.cpu_times()
            cpu_start = times.user + times.system
            figures["_since"] = time.monotonic()
        if process is not None:
            peak_rss = max(peak_rss, process.memory_info().rss)
        if await _registered(app, bot_id):
            figures["agent_registered_s"] = round(time.monotonic() - posted, 1)
            break
        await asyncio.sleep(1)
    if process is not None:
        times = process.cpu_times()
        elapsed = time.monotonic() - figures.pop("_since")
        figures["vm_peak_rss_mb"] = round(peak_rss / 2**20)
        figures["vm_mean_cpu_cores"] = round((times.user + times.system - cpu_start) / elapsed, 2)
    return figures


async def run(args: argparse.Namespace) -> None:
    """Create the bots, follow them, print the figures, tear the VMs down."""
    with tempfile.TemporaryDirectory(prefix="bench-vm-") as tmp:
        root = Path(tmp)
        database_url = f"sqlite+aiosqlite:///{root / 'meetbot.db'}"
        await upgrade(database_url)
        port = _free_port()
        settings = Settings(
            database_url=database_url,
            data_dir=root / "data",
            port=port,
            public_url=f"http://127.0.0.1:{port}",
            scheduler_interval_seconds=0.2,
            agent_connect_timeout_seconds=args.timeout + 60,
            heartbeat_timeout_seconds=args.timeout,
        )
        accelerator = cast(Literal["auto", "kvm", "tcg"], args.accelerator)
        launcher = QemuLauncher(
            args.image.resolve(), root / "vms", accelerator=accelerator,
            memory_mib=args.memory,  # qemu inherits this process's niceness
        )  # fmt: skip
        app = create_app(settings, launcher=launcher)
        runner = web.AppRunner(app, shutdown_timeout=1.0)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            async with app[DB].sessions.begin() as session:
                user = await get_or_create_user(session, "bench-vm@example.org")
                workspace = await create_workspace(session, "bench vm")
                await add_member(session, workspace, user, Role.OWNER)
                issued = await issue_key(
                    session, user=user, workspace_id=workspace.id, name="b", key_prefix="mbk"
                )
            used = await launcher.accelerator()
            api = f"http://127.0.0.1:{port}/api/v1"
            async with aiohttp.ClientSession(headers={"X-API-Key": issued.secret}) as http:
                follows = []
                for number in range(args.bots):
                    code = f"vmb-ench-a{chr(97 + number % 26)}a"  # Meet's xxx-xxxx-xxx form
                    body = {
                        "platform": "google_meet",
                        "meeting_url": f"https://meet.google.com/{code}",
                        "bot_name": "bench",
                        "transcribe_enabled": False,
                    }
                    posted = time.monotonic()
                    async with http.post(f"{api}/bots", json=body) as created:
                        if created.status != 201:
                            raise SystemExit(f"POST /bots: {await created.text()}")
                        bot_id = (await created.json())["bot_id"]
                    follows.append(_follow(app, launcher, bot_id, posted, args.timeout))
                for figures in await asyncio.gather(*follows):
                    emit(
                        **figures, bots=args.bots, accelerator=used,
                        load=round(os.getloadavg()[0], 2),
                    )  # fmt: skip
        finally:
            for name in launcher.vm_names():
                await launcher.terminate(LaunchHandle(id=name))
            await runner.cleanup()


def main() -> None:
    """Parse the arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--image", type=Path, required=True, help="the bot image (qcow2)")
    parser.add_argument("--bots", type=int, default=1, help="bots (VMs) at once")
    parser.add_argument("--accelerator", choices=("auto", "kvm", "tcg"), default="auto")
    parser.add_argument("--memory", type=int, default=2048, help="MiB per VM")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per bot")
    parser.add_argument("--image-only", action="store_true", help="only the build's figures")
    args = parser.parse_args()
    figure = image_figure(args.image.resolve())
    if figure is not None:
        emit(**figure)
    elif args.image_only:
        raise SystemExit(f"no {MANIFEST_FILE} beside {args.image} (not a meetbot image build)")
    if not args.image_only:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
