"""The bot machine's display and sound runtime on this machine: Xvfb and a private PulseAudio.

On a bot VM systemd runs ``images/runtime/*.sh`` (meetbot-xvfb.service,
meetbot-pulseaudio.service). ``meetbot agent --display`` and ``python -m agent --display`` run
the very same scripts here through :class:`BotRuntime`, so the VM's runtime is tested at native
speed outside a VM:

1. ``xvfb.sh :N`` on a display number no other X server holds (from 100 up; a lost race with
   another bot is retried on the next number), then ``xvfb-ready.sh`` until it answers;
2. ``pulseaudio.sh`` with ``XDG_RUNTIME_DIR`` a fresh private folder (so two bots on one host
   never share a sound server), then ``pulseaudio-ready.sh``, which checks the devices and
   makes ``meeting`` the default sink and ``bot_mic`` the default source — before Chromium
   starts;
3. on exit both are stopped (SIGTERM, then SIGKILL after five seconds) and the folder removed.

Both servers run in sessions of their own, so a Ctrl-C in the terminal reaches the agent (which
leaves the meeting) and not the display the browser still draws on. They are started through
util-linux's ``setpriv --pdeathsig TERM`` where it exists (it is part of every Debian), so an
agent that dies without its cleanup (SIGKILL after the launcher's grace, the OOM killer) does
not leave 70 MB of Xvfb and PulseAudio behind on a host that runs many bots: a killed soak left
both running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)

FIRST_DISPLAY = 100
"""Displays below this are left to desktops and the VM's ``:99``."""
DISPLAY_TRIES = 20
STOP_WAIT_S = 5.0
INSTALLED_SCRIPTS = Path("/opt/meetbot/runtime")
"""Where the bot image installs images/runtime/ (images/steps/45-runtime.sh)."""


class RuntimeStartError(RuntimeError):
    """A runtime server did not start or did not answer; the message says which and why."""


def scripts_dir(configured: Path | None = None) -> Path:
    """The folder of ``xvfb.sh`` and friends.

    Args:
        configured: ``runtime_scripts_dir`` of the agent's settings, if set.

    Returns:
        ``configured``, else this checkout's ``images/runtime``, else
        :data:`INSTALLED_SCRIPTS`.

    Raises:
        RuntimeStartError: The folder found has no ``xvfb.sh``.
    """
    if configured is not None:
        if (configured / "xvfb.sh").is_file():
            return configured
        raise RuntimeStartError(f"no runtime scripts (xvfb.sh) in {configured}")
    checkout = Path(__file__).resolve().parents[2] / "images" / "runtime"
    for candidate in (checkout, INSTALLED_SCRIPTS):
        if (candidate / "xvfb.sh").is_file():
            return candidate
    raise RuntimeStartError(
        f"no runtime scripts (xvfb.sh) in {checkout} or {INSTALLED_SCRIPTS}:"
        " --display needs a checkout or the bot image"
    )


def free_display(start: int = FIRST_DISPLAY) -> int:
    """The first display number from ``start`` that has neither a lock file nor a socket."""
    number = start
    while Path(f"/tmp/.X{number}-lock").exists() or Path(f"/tmp/.X11-unix/X{number}").exists():  # noqa: S108 - X11's own fixed paths
        number += 1
    return number


@dataclass(frozen=True, slots=True)
class Runtime:
    """A running display and sound server for one bot.

    Attributes:
        display: The X display, e.g. ``:101``.
        pulse_server: The PulseAudio server address, ``unix:<dir>/pulse/native``.
        runtime_dir: The bot's private runtime folder (PulseAudio's ``XDG_RUNTIME_DIR``).
    """

    display: str
    pulse_server: str
    runtime_dir: Path


class BotRuntime:
    """Starts and stops one bot's Xvfb and PulseAudio (an async context manager).

    Args:
        scripts: The folder of the runtime scripts (:func:`scripts_dir`).
        ready_timeout_s: How long each server may take to answer.
        parent: Where the private runtime folder is made; the system's temporary folder when
            None.
    """

    def __init__(
        self, scripts: Path, ready_timeout_s: float = 60.0, parent: Path | None = None
    ) -> None:
        self._scripts = scripts
        self._timeout = ready_timeout_s
        self._parent = parent
        self._xvfb: asyncio.subprocess.Process | None = None
        self._pulse: asyncio.subprocess.Process | None = None
        self._dir: Path | None = None
        self.runtime: Runtime | None = None

    async def __aenter__(self) -> Runtime:
        try:
            return await self.start()
        except BaseException:
            await self.stop()
            raise

    async def __aexit__(self, *_: object) -> None:
        await self.stop()  # whether or not the block raised

    async def start(self) -> Runtime:
        """Start Xvfb, then PulseAudio with its default devices set; returns where they are.

        Raises:
            RuntimeStartError: A server exited or did not answer in time.
        """
        self._dir = Path(tempfile.mkdtemp(prefix="meetbot-runtime-", dir=self._parent))
        display = await self._start_xvfb()
        pulse_server = await self._start_pulse(self._dir)
        self.runtime = Runtime(display, pulse_server, self._dir)
        log.info("bot runtime started", extra={"display": display, "pulse_server": pulse_server})
        return self.runtime

    async def _spawn(
        self, log_name: str, *argv: str, env: dict[str, str]
    ) -> asyncio.subprocess.Process:
        assert self._dir is not None  # noqa: S101 - start() made it
        setpriv = shutil.which("setpriv")
        # The parent-death signal is kept across the scripts' own exec of the server.
        guard = (setpriv, "--pdeathsig", "TERM", "--") if setpriv else ()
        with (self._dir / log_name).open("ab") as sink:
            return await asyncio.create_subprocess_exec(
                *guard,
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
                env=env,
                start_new_session=True,
            )

    async def _ready(
        self, server: asyncio.subprocess.Process, what: str, *argv: str, env: dict[str, str]
    ) -> None:
        """Run a readiness script; raise if it fails or the server exited meanwhile."""
        check = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env
        )
        _, err = await check.communicate()
        if check.returncode != 0 or server.returncode is not None:
            raise RuntimeStartError(f"{what} is not ready: {err.decode(errors='replace').strip()}")

    async def _start_xvfb(self) -> str:
        assert self._dir is not None  # noqa: S101 - start() made it
        env = dict(os.environ)
        number = free_display()
        for _ in range(DISPLAY_TRIES):
            display = f":{number}"
            xvfb = await self._spawn("xvfb.log", str(self._scripts / "xvfb.sh"), display, env=env)
            self._xvfb = xvfb
            ready = str(self._scripts / "xvfb-ready.sh")
            waiter = asyncio.create_task(xvfb.wait())
            checker = asyncio.create_task(
                self._ready(
                    xvfb, f"Xvfb {display}", ready, display, str(round(self._timeout)), env=env
                )
            )
            done, _ = await asyncio.wait({waiter, checker}, return_when=asyncio.FIRST_COMPLETED)
            if checker in done and checker.exception() is None:
                await cancel_and_wait(waiter)
                return display
            await cancel_and_wait(checker, RuntimeStartError)
            if xvfb.returncode is None:
                await _stop(xvfb)
                raise RuntimeStartError(f"Xvfb {display} did not answer in {self._timeout:.0f} s")
            await waiter
            # Another X server took the number between the look and the start: try the next.
            log.info("display taken, trying the next", extra={"display": display})
            number = free_display(number + 1)
        raise RuntimeStartError(
            f"no free X display in {DISPLAY_TRIES} tries (see {self._dir}/xvfb.log)"
        )

    async def _start_pulse(self, runtime_dir: Path) -> str:
        home = runtime_dir / "home"
        home.mkdir(mode=0o700)
        pulse_server = f"unix:{runtime_dir}/pulse/native"
        # The server's cookie and state go to the private folder, never the user's home.
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir), "HOME": str(home)}
        env.pop("PULSE_SERVER", None)
        self._pulse = await self._spawn(
            "pulseaudio.log", str(self._scripts / "pulseaudio.sh"), env=env
        )
        await self._ready(
            self._pulse,
            "PulseAudio",
            str(self._scripts / "pulseaudio-ready.sh"),
            str(round(self._timeout)),
            env={**env, "PULSE_SERVER": pulse_server},
        )
        return pulse_server

    async def stop(self) -> None:
        """Stop PulseAudio and Xvfb and remove the runtime folder; safe to call twice."""
        for process in (self._pulse, self._xvfb):
            if process is not None:
                await _stop(process)
        self._pulse = self._xvfb = None
        if self._dir is not None:
            await asyncio.to_thread(shutil.rmtree, self._dir, True)
            self._dir = None
        if self.runtime is not None:
            log.info("bot runtime stopped", extra={"display": self.runtime.display})
            self.runtime = None


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the process's session, SIGKILL it after :data:`STOP_WAIT_S`; reap it."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_WAIT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
