"""The bot machine's display and sound runtime started natively (``agent.process.runtime``), as
``--display`` starts it: two bots on one host get their own display and sound server, both
answer with the devices the VM's units set up, and stopping removes everything."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from agent.process.runtime import BotRuntime, RuntimeStartError, scripts_dir

pytestmark = pytest.mark.browser


async def _run(*argv: str, pulse_server: str) -> str:
    process = await asyncio.create_subprocess_exec(
        *argv,
        env={"PULSE_SERVER": pulse_server, "PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0, argv
    return out.decode()


def _servers_of(folder: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(str(folder) in part for part in process.info["cmdline"] or []):
            found.append(process)
    return found


def _x_socket(display: str) -> Path:
    return Path(f"/tmp/.X11-unix/X{display[1:]}")  # noqa: S108 - X11's own path


async def test_two_bots_get_their_own_display_and_sound_server_and_leave_nothing(
    tmp_path: Path,
) -> None:
    scripts = scripts_dir()
    async with (
        BotRuntime(scripts, parent=tmp_path) as first,
        BotRuntime(scripts, parent=tmp_path) as second,
    ):
        assert first.display != second.display
        assert first.pulse_server != second.pulse_server
        for runtime in (first, second):
            info = await _run("pactl", "info", pulse_server=runtime.pulse_server)
            assert "Default Sink: meeting" in info and "Default Source: bot_mic" in info
            sources = await _run(
                "pactl", "list", "short", "sources", pulse_server=runtime.pulse_server
            )
            assert {"meeting.monitor", "bot_mic"} <= {
                line.split("\t")[1] for line in sources.splitlines()
            }
            await _run("xdpyinfo", "-display", runtime.display, pulse_server="")
            assert (runtime.runtime_dir.stat().st_mode & 0o077) == 0  # private to the bot's user
        folders = [first.runtime_dir, second.runtime_dir]
        assert all(_servers_of(folder) for folder in folders)  # each bot's PulseAudio
    assert not any(folder.exists() for folder in folders)
    assert not any(_servers_of(folder) for folder in folders)
    assert not any(_x_socket(d).exists() for d in (first.display, second.display))


def test_a_folder_without_the_scripts_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeStartError, match=r"xvfb\.sh"):
        scripts_dir(tmp_path)


_HOLDER = """
import asyncio, sys
from pathlib import Path
from agent.process.runtime import BotRuntime, scripts_dir

async def main() -> None:
    async with BotRuntime(scripts_dir(), parent=Path(sys.argv[1])) as runtime:
        print(runtime.display, flush=True)
        await asyncio.sleep(600)

asyncio.run(main())
"""


def test_an_agent_killed_without_its_cleanup_takes_its_display_and_sound_server_along(
    tmp_path: Path,
) -> None:
    # An agent the OOM killer or the launcher's SIGKILL ends runs no cleanup; its servers
    # must still go with it.
    holder = subprocess.Popen(  # noqa: S603 - this interpreter and a fixed script
        [sys.executable, "-c", _HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    servers: list[psutil.Process] = []
    try:
        assert holder.stdout is not None
        display = holder.stdout.readline().strip()
        assert display.startswith(":"), display
        servers = psutil.Process(holder.pid).children(recursive=True)
        assert sorted(s.name().lower() for s in servers) == ["pulseaudio", "xvfb"], servers
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        _, alive = psutil.wait_procs(servers, timeout=10)
        assert not alive, alive
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()
        for server in servers:
            with contextlib.suppress(psutil.NoSuchProcess):
                server.kill()
