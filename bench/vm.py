"""Bots on their own VMs: POST → VM running → ``active``, and the VMs' footprint in a meeting.

Starts an in-process control plane (SQLite) with the ``qemu`` launcher on a bot image and a
testmeeting server on this host, and creates ``--bots`` bots at once, each into its own soak
room (continuous conversation of the real-speech corpus, ``MEETBOT_SPEECH_DIR``, that the host
ends after ``--meeting-seconds``); prints one JSON line per bot:

- ``vm_running_s``: ``POST /api/v1/bots`` → qemu runs the bot's VM (its pid file exists);
- ``agent_registered_s``: ``POST`` → the agent in the VM registered over the agent link
  (``agent_links.registered_at``);
- ``active_s``: ``POST`` → the bot is ``active`` (in the meeting; goal ≤ 30 s with KVM);
- ``boot_peak_rss_mb`` and ``boot_mean_cpu_cores``: the qemu process from its start until
  ``active`` (boot, cloud-init, the agent's start, the join), sampled every second;
- ``meeting_peak_rss_mb``, ``meeting_mean_rss_mb`` and ``meeting_mean_cpu_cores``: the same
  from ``active`` until the bot's final status (transcribing the conversation);
- ``final``, ``final_after_end_s`` (the host's end → the final status) and ``vm_gone_s`` (the
  end → the VM powered off and its overlay removed);
- ``guest_tree_mb`` and ``guest_parts_mb``: the bot's own process tree inside the VM (PSS of
  the agent, Playwright's driver and Chromium's processes), from the ``memory tidied`` lines of
  the journal the VM uploads as the bot's log (one a minute, before and after the tidy): the
  tree's min / median / max before and after, and each part's median before; and
  ``guest_machine_used_mb``, the whole VM's ``MemTotal - MemAvailable`` after each tidy;
- with every figure: the ``accelerator`` used and the host's one-minute ``load``;
- first, ``"figure": "image"`` from the build's report (``manifest.json`` beside a cached
  image of ``meetbot image build``): ``build_s`` (``base_s`` native base + ``packer_s`` packer
  build with the self-test), ``size_mb`` on disk, ``virtual_size``, the build VM's
  ``accelerator`` and ``cpus``, and the self-test's report lines (``selftest``). ``--image-only``
  prints just that.

Under software emulation (TCG) the agents get long page budgets (``--slow-vm``, the default
when KVM is not used). The VMs are torn down at the end. Usage: ``python -m bench.vm --image
FILE.qcow2 [--bots 2] [--meeting-seconds 180] [--accelerator auto|kvm|tcg] [--memory 2048]
[--timeout 1800] [--image-only]`` (``meetbot image path`` prints the cached image).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
import os
import re
import tempfile
import time
import uuid
from dataclasses import dataclass, field
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
from control_plane.launchers.qemu import USER_NET_HOST, QemuLauncher
from control_plane.settings import SETTINGS, Settings
from meetbot.image.cache import MANIFEST_FILE, Manifest
from testmeeting import Scenario, TestMeetingServer
from testmeeting.platforms import browser_args
from testmeeting.soak import corpus_clips, soak_scenario

SLOW_VM_AGENT_ENV = {
    # Headful Chromium on one emulated vCPU: over a minute from its start to the join button,
    # and page probes of over 20 s (tests/vm/test_vm_agent.py, the closing notes of issue 11).
    "MEETBOT_AGENT_JOIN_TIMEOUT_SECONDS": "900",
    "MEETBOT_AGENT_LOST_PAGE_SECONDS": "900",
    "MEETBOT_AGENT_PAGE_TIMEOUT_SECONDS": "180",
}


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


@dataclass
class _Samples:
    """One qemu process's RSS and CPU over a phase, sampled every second."""

    process: psutil.Process
    started: float = field(default_factory=time.monotonic)
    cpu_start: float = 0.0
    rss: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        times = self.process.cpu_times()
        self.cpu_start = times.user + times.system

    def sample(self) -> None:
        with contextlib.suppress(psutil.Error):
            self.rss.append(self.process.memory_info().rss)

    def figures(self, phase: str) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        try:
            times = self.process.cpu_times()
            cpu = (times.user + times.system - self.cpu_start) / elapsed
        except psutil.Error:
            cpu = float("nan")
        figures: dict[str, Any] = {f"{phase}_mean_cpu_cores": round(cpu, 2)}
        if self.rss:
            figures[f"{phase}_peak_rss_mb"] = round(max(self.rss) / 2**20)
            figures[f"{phase}_mean_rss_mb"] = round(sum(self.rss) / len(self.rss) / 2**20)
        return figures


async def _status(http: aiohttp.ClientSession, api: str, bot_id: str) -> dict[str, Any]:
    async with http.get(f"{api}/bots/{bot_id}") as response:
        record: dict[str, Any] = await response.json()
    return record


async def _follow(
    app: web.Application,
    launcher: QemuLauncher,
    http: aiohttp.ClientSession,
    api: str,
    bot_id: str,
    posted: float,
    limit_s: float,
) -> dict[str, Any]:
    """Times and qemu samples of one bot from its POST until its VM is gone (or the limit)."""
    name = f"meetbot-{bot_id}"
    pid_file = launcher.vm_dir(name) / "qemu.pid"
    figures: dict[str, Any] = {"bot": name}
    boot: _Samples | None = None
    meeting: _Samples | None = None
    final_at: float | None = None

    def since_post() -> float:
        return round(time.monotonic() - posted, 1)

    while time.monotonic() - posted < limit_s:
        if boot is None and pid_file.is_file():
            boot = _Samples(psutil.Process(int(pid_file.read_text())))
            figures["vm_running_s"] = since_post()
        phase = meeting or boot
        if phase is not None:
            phase.sample()
        if "agent_registered_s" not in figures and await _registered(app, bot_id):
            figures["agent_registered_s"] = since_post()
        record = await _status(http, api, bot_id)
        if record["status"] == "active" and boot is not None and meeting is None:
            figures["active_s"] = since_post()
            figures.update(boot.figures("boot"))
            meeting = _Samples(boot.process)
        if record["status"] in ("completed", "failed") and final_at is None:
            final_at = time.monotonic()
            figures["final"] = f"{record['status']}/{record['status_reason']}"
            if meeting is not None:
                figures.update(meeting.figures("meeting"))
        if final_at is not None and (boot is None or not launcher.vm_dir(name).exists()):
            figures["vm_gone_after_final_s"] = round(time.monotonic() - final_at, 1)
            break
        await asyncio.sleep(1)
    figures.update(guest_memory(_journal(app[SETTINGS].data_dir, bot_id)))
    return figures


_TIDIED = re.compile(
    r"memory tidied tree_mb=(?P<before>[\d.]+)(?: parts=(?P<parts>\{[^}]*\}))?"
    r" after_mb=(?P<after>[\d.]+).*?(?: machine_used_mb=(?P<machine>[\d.]+))?$",
    re.MULTILINE,
)


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"min": ordered[0], "median": ordered[len(ordered) // 2], "max": ordered[-1]}


def guest_memory(journal: str) -> dict[str, Any]:
    """The tree inside the VM from the agent's ``memory tidied`` log lines (module docstring)."""
    before: list[float] = []
    after: list[float] = []
    machine: list[float] = []
    parts: dict[str, list[float]] = {}
    for match in _TIDIED.finditer(journal):
        before.append(float(match["before"]))
        after.append(float(match["after"]))
        if match["machine"]:
            machine.append(float(match["machine"]))
        for role, mb in ast.literal_eval(match["parts"] or "{}").items():
            parts.setdefault(role, []).append(float(mb))
    if not before:
        return {}
    return {
        "guest_tidies": len(before),
        "guest_tree_mb": {"before_tidy": _spread(before), "after_tidy": _spread(after)},
        "guest_parts_mb": {role: _spread(mbs)["median"] for role, mbs in sorted(parts.items())},
        # The whole VM (MemTotal - MemAvailable) after each tidy: X server, sound, the rest.
        **({"guest_machine_used_mb": _spread(machine)} if machine else {}),
    }


def _journal(data_dir: Path, bot_id: str) -> str:
    """The bot's uploaded log (``bots/{id}/logs/``, local storage), empty if none came."""
    logs = data_dir / "artifacts" / "bots" / bot_id / "logs"
    return "".join(
        path.read_text(errors="replace") for path in sorted(logs.glob("*")) if path.is_file()
    )


def _rooms(speech_dir: Path, bots: int, seconds: float) -> tuple[list[Scenario], list[str]]:
    """One soak room per bot (Meet skin), each with its own native id."""
    clips = corpus_clips(speech_dir)
    scenarios, ids = [], []
    for number in range(bots):
        meeting_id = f"vmb-ench-{chr(97 + number // 26 % 26)}{chr(97 + number % 26)}a"
        scenario, _turns = soak_scenario(
            clips, seconds, platform="google_meet", meeting_id=meeting_id
        )
        scenarios.append(scenario)
        ids.append(meeting_id)
    return scenarios, ids


async def run(args: argparse.Namespace) -> None:
    """Create the bots, follow them through their meetings, print the figures, tear down."""
    scenarios, meeting_ids = _rooms(args.speech_dir, args.bots, args.meeting_seconds)
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
            bootstrap_token_ttl_seconds=args.timeout + 60,
            heartbeat_timeout_seconds=args.timeout,
            agent_teardown_grace_seconds=args.timeout,
        )
        accelerator = cast(Literal["auto", "kvm", "tcg"], args.accelerator)
        async with TestMeetingServer(scenario=scenarios, speech_dir=args.speech_dir) as rooms:
            probe = QemuLauncher(args.image.resolve(), root / "probe", accelerator=accelerator)
            used = await probe.accelerator()
            slow = args.slow_vm if args.slow_vm is not None else used != "kvm"
            agent_env = {
                "MEETBOT_AGENT_EXTRA_BROWSER_ARGS": json.dumps(
                    browser_args(rooms.https_port, USER_NET_HOST)
                ),
                "MEETBOT_AGENT_IGNORE_HTTPS_ERRORS": "true",
            }
            if slow:
                agent_env |= SLOW_VM_AGENT_ENV
            launcher = QemuLauncher(
                args.image.resolve(),
                root / "vms",
                accelerator=used,
                memory_mib=args.memory,
                agent_env=agent_env,
                grace_seconds=args.timeout,
            )  # qemu inherits this process's niceness
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
                api = f"http://127.0.0.1:{port}/api/v1"
                headers = {"X-API-Key": issued.secret}
                async with aiohttp.ClientSession(headers=headers) as http:
                    follows = []
                    for meeting_id in meeting_ids:
                        body = {
                            "platform": "google_meet",
                            "meeting_url": f"https://meet.google.com/{meeting_id}",
                            "bot_name": "bench",
                            "transcribe_enabled": True,
                        }
                        posted = time.monotonic()
                        async with http.post(f"{api}/bots", json=body) as created:
                            if created.status != 201:
                                raise SystemExit(f"POST /bots: {await created.text()}")
                            bot_id = (await created.json())["bot_id"]
                        follows.append(
                            _follow(app, launcher, http, api, bot_id, posted, args.timeout)
                        )
                    for figures in await asyncio.gather(*follows):
                        emit(
                            **figures, bots=args.bots, accelerator=used, slow_vm=slow,
                            meeting_s=args.meeting_seconds, load=round(os.getloadavg()[0], 2),
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
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per bot")
    parser.add_argument(
        "--meeting-seconds", type=float, default=180, help="talk in each room before its end"
    )
    parser.add_argument(
        "--speech-dir", type=Path, default=Path(os.environ.get("MEETBOT_SPEECH_DIR", "")),
        help="the real-speech corpus (default: MEETBOT_SPEECH_DIR)",
    )  # fmt: skip
    parser.add_argument(
        "--slow-vm", action=argparse.BooleanOptionalAction, default=None,
        help="long agent page budgets (default: when the VMs do not use KVM)",
    )  # fmt: skip
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
