"""The control plane as the demo runs it: ``meetbot admin bootstrap`` then ``meetbot serve``.

Both run as child processes of the demo (the same commands a user types), with SQLite in the
demo's data directory. Settings travel as ``MEETBOT_*`` environment variables; the local
launcher starts each agent as a child of ``meetbot serve`` with the same environment, so the
agent's ``MEETBOT_AGENT_*`` settings (the testmeeting's Chromium flags, its data folder) are
set here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import aiohttp

from meetbot.demo.errors import DemoError

READY_TIMEOUT_S = 60.0
"""How long ``meetbot serve`` may take to migrate and answer ``/readyz`` (a loaded 2-core box
needs a few seconds for the imports alone)."""

STOP_GRACE_S = 20.0
"""Time ``meetbot serve`` gets after SIGTERM to stop its agents before it is killed."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the control plane binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def control_plane_env(
    data_dir: Path, port: int, browser_args: list[str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Environment of ``meetbot serve`` (and, through the local launcher, of the agent).

    Args:
        data_dir: The demo's data folder; the database is ``{data_dir}/meetbot.db``.
        port: Port of the control plane on 127.0.0.1.
        browser_args: Extra Chromium flags for the agent (the testmeeting's
            ``--host-resolver-rules`` and ``--ignore-certificate-errors``).
        base: Environment to start from (default: this process's).
    """
    env = dict(os.environ if base is None else base)
    env.update(
        {
            "MEETBOT_DATA_DIR": str(data_dir),
            "MEETBOT_DATABASE_URL": "",
            "MEETBOT_HOST": "127.0.0.1",
            "MEETBOT_PORT": str(port),
            "MEETBOT_PUBLIC_URL": "",
            "MEETBOT_LAUNCHER": "local",
            "MEETBOT_WEBHOOK_PROVIDER": "embedded",
            # The demo's receiver is plain HTTP on loopback, which production refuses.
            "MEETBOT_WEBHOOK_ALLOW_HTTP": "true",
            "MEETBOT_WEBHOOK_ALLOW_PRIVATE": "true",
            "MEETBOT_AGENT_EXTRA_BROWSER_ARGS": json.dumps(browser_args),
            "MEETBOT_AGENT_DATA_DIR": str(data_dir / "agent"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _meetbot(*args: str) -> list[str]:
    return [sys.executable, "-m", "meetbot", *args]


async def bootstrap(env: dict[str, str], email: str) -> str:
    """Run ``meetbot admin bootstrap``: a workspace, its owner and an owner key.

    Args:
        env: The control plane's environment (it names the data folder).
        email: The owner's e-mail address.

    Returns:
        The key (``mbk_…``), printed once by the command.

    Raises:
        DemoError: The command failed.
    """
    process = await asyncio.create_subprocess_exec(
        *_meetbot("admin", "bootstrap", "--email", email, "--workspace-name", "Demo"),
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    key = out.decode().strip().splitlines()[-1] if out.strip() else ""
    if process.returncode != 0 or not key:
        raise DemoError(
            "meetbot admin bootstrap failed: " + (err.decode().strip()[-2000:] or "no key")
        )
    return key


class ControlPlane:
    """One ``meetbot serve`` child process on 127.0.0.1.

    Args:
        data_dir: Its data folder (database, artifacts, per-bot agent logs).
        env: Its environment (see :func:`control_plane_env`).
        port: Its port.
    """

    def __init__(self, data_dir: Path, env: dict[str, str], port: int) -> None:
        self.data_dir = data_dir
        self.port = port
        self._env = env
        self._process: asyncio.subprocess.Process | None = None
        self.log_path = data_dir / "control-plane.log"

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8080``."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start ``meetbot serve`` and wait until ``/readyz`` answers 200.

        Raises:
            DemoError: It exited or did not become ready within ``READY_TIMEOUT_S``.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log_file = await asyncio.to_thread(self.log_path.open, "ab")
        try:
            self._process = await asyncio.create_subprocess_exec(
                *_meetbot("serve", "--host", "127.0.0.1", "--port", str(self.port)),
                env=self._env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                # Own process group: a Ctrl-C in the terminal reaches the demo only, which then
                # stops the control plane (and through it the agents) in order.
                start_new_session=True,
            )
        finally:
            log_file.close()
        await self._wait_ready()

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        timeout = aiohttp.ClientTimeout(total=2.0)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while time.monotonic() < deadline:
                if self._process is not None and self._process.returncode is not None:
                    raise DemoError(
                        f"meetbot serve exited with code {self._process.returncode}; "
                        f"see {self.log_path}"
                    )
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(f"{self.url}/readyz") as response:
                        if response.status == 200:
                            return
                await asyncio.sleep(0.2)
        raise DemoError(f"meetbot serve was not ready after {READY_TIMEOUT_S:.0f} s")

    async def stop(self) -> None:
        """SIGTERM (it stops its agents first), then SIGKILL after ``STOP_GRACE_S``."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_GRACE_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
