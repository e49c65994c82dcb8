"""The ``local`` launcher: each bot is an agent subprocess on this machine.

For every bot it writes ``{data_dir}/bots/{bot_id}/bot.json`` (the ``BotConfig``, mode 0600:
it holds the agent token and the operator's agent settings, ``Settings.fleet_agent_settings``,
as ``agent_settings``) and starts ``python -m agent --config bot.json`` with its output in
``agent.log`` beside it. The agent inherits this process's environment except the control
plane's own ``MEETBOT_*`` settings, ``AWS_*`` credentials and the secret agent settings
(:data:`agent.contracts.agent_settings.SECRET_SETTINGS`: those of this environment are written
into ``bot.json`` at each launch instead, so Chromium and ffmpeg do not inherit them); the
agent's other ``MEETBOT_AGENT_*`` settings pass. The
launcher owns the processes it starts: :meth:`terminate` sends SIGTERM, waits
``grace_seconds``, then kills; :meth:`aclose` does that for all of them.

The handle id it returns is ``local-{pid}`` (the bot's ``bot_container_id``). After a
control-plane restart the process object is gone, so :meth:`terminate` then finds the agent
by pid and checks with psutil that the pid still runs a bot config before signalling it.

Launch is idempotent by bot id: the pid of each started agent is written to ``agent.pid`` in
the bot's folder right after the start (written aside and renamed, so a crash never leaves
it half written), and a launch of a bot whose agent still runs returns
that agent's handle instead of starting a second one (the scheduler relaunches a bot whose
claim lapsed because the control plane died between its claim and storing the handle). For
the instant between the start and the pid file, a ``launching`` marker is written before the
start; a launch that finds the marker without a pid file looks for a running agent of this
bot's config among the processes before starting one.

The launcher lists its agents for the reconciliation loop
(:class:`~control_plane.launchers.base.Listing`): beside ``agent.pid`` each bot's folder holds
``agent.process.json`` (pid, the process's start time as psutil reports it, bot id), and
:meth:`LocalLauncher.machines` lists the folders whose recorded process still runs (same pid,
same start time, the bot's config on its command line). The agents run in their own session,
so they outlive a control plane that crashed or was killed; the next one lists them, ends those
whose bot is no longer live and fails (``agent_lost``) the live bots whose agent is gone. A
graceful stop (:meth:`LocalLauncher.aclose`) still stops the agents it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from uuid import UUID

import psutil

from agent.contracts.agent_settings import SECRET_SETTINGS
from agent.contracts.bot_config import BotConfig
from control_plane.launchers.base import LaunchError, LaunchHandle
from control_plane.settings import Settings

logger = logging.getLogger(__name__)

CONTAINER_PREFIX = "local-"
PROCESS_FILE = "agent.process.json"
"""In a bot's folder: the agent process started for it (``pid``, ``started_at``, ``bot_id``)."""

# Control-plane secrets stay out of agents, which browse untrusted meeting pages: MEETBOT_*
# settings other than the agent's own, and cloud credentials (uploads use presigned URLs).
# The agent's settings: its host settings.
_KEPT_PREFIXES = ("MEETBOT_AGENT_",)
_DROPPED_PREFIXES = ("MEETBOT_", "AWS_")


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment an agent process gets: ``environ`` without the control plane's own.

    Control-plane settings, cloud credentials and secret agent settings are left out;
    the other ``MEETBOT_AGENT_*`` pass.
    """
    return {
        key: value
        for key, value in environ.items()
        if key not in SECRET_SETTINGS
        and (key.startswith(_KEPT_PREFIXES) or not key.startswith(_DROPPED_PREFIXES))
    }


class LocalLauncher:
    """Starts and stops agent subprocesses.

    Args:
        data_dir: Root of per-bot folders (``bots/{bot_id}/``).
        command: Program and leading arguments; ``--config <file>`` is appended. Defaults to
            this interpreter running ``-m agent``.
        grace_seconds: How long :meth:`terminate` waits after SIGTERM before SIGKILL.
        agent_settings: The operator's agent settings (``Settings.fleet_agent_settings``),
            written into each ``bot.json``.
    """

    def __init__(
        self,
        data_dir: Path,
        command: Sequence[str] | None = None,
        grace_seconds: float = 10.0,
        agent_settings: Mapping[str, str] | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._agent_settings = dict(agent_settings or {})
        self._command = list(command) if command else [sys.executable, "-m", "agent"]
        self._grace_seconds = grace_seconds
        self._processes: dict[str, asyncio.subprocess.Process] = {}

    def bot_dir(self, config: BotConfig) -> Path:
        """Return the folder holding a bot's config file and agent log."""
        return self._data_dir / "bots" / str(config.bot_id)

    def _write_config(self, config: BotConfig) -> tuple[Path, Path]:
        folder = self.bot_dir(config)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "bot.json"
        # Secrets of this environment go to the agent here instead of through its environment.
        secrets = {key: value for key, value in os.environ.items() if key in SECRET_SETTINGS}
        handed = {**config.agent_settings, **secrets, **self._agent_settings}
        if handed:
            config = config.model_copy(update={"agent_settings": handed})
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(config.model_dump_json(indent=2))
        return path, folder / "agent.log"

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Write the bot's config and start its agent; the handle id is ``local-{pid}``.

        Raises:
            LaunchError: The config cannot be written or the program cannot be started.
        """
        try:
            return await self._launch(config)
        except OSError as exc:
            raise LaunchError(f"agent process could not start: {exc}") from exc

    def _running(self, config: BotConfig) -> int | None:
        """The pid of an agent already started for this bot and still running, else None."""
        folder = self.bot_dir(config)
        config_path = str(folder / "bot.json")
        try:
            pid_text = (folder / "agent.pid").read_text(encoding="ascii").strip()
        except FileNotFoundError:
            pid_text = ""
        if not pid_text.isdigit():
            # No pid file yet, or (from a version that wrote it in place) one a crash left
            # empty: an agent may have started all the same.
            if not (folder / "launching").exists():
                return None
            for process in psutil.process_iter(["pid", "cmdline"]):
                if config_path in (process.info["cmdline"] or []):
                    return int(process.info["pid"])
            return None
        agent = self._orphan(f"{CONTAINER_PREFIX}{pid_text}")
        if agent is None or config_path not in agent.cmdline():
            return None
        return agent.pid

    async def _launch(self, config: BotConfig) -> LaunchHandle:
        running = await asyncio.to_thread(self._running, config)
        if running is not None:
            logger.info(
                "agent already running",
                extra={
                    "bot_id": str(config.bot_id),
                    "container_id": f"{CONTAINER_PREFIX}{running}",
                },
            )
            return LaunchHandle(id=f"{CONTAINER_PREFIX}{running}")
        config_path, log_path = await asyncio.to_thread(self._write_config, config)
        marker = config_path.with_name("launching")
        await asyncio.to_thread(marker.touch)
        log_file = await asyncio.to_thread(log_path.open, "ab")
        try:
            process = await asyncio.create_subprocess_exec(
                *self._command,
                "--config",
                str(config_path),
                env=agent_environment(os.environ),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                # Own session: a Ctrl-C meant for the control plane does not hit the agents.
                start_new_session=True,
            )
        finally:
            log_file.close()  # the child holds its own copy of the descriptor
        await asyncio.to_thread(_write_whole, config_path.with_name("agent.pid"), str(process.pid))
        await asyncio.to_thread(_record_process, config_path.parent, process.pid, config.bot_id)
        container_id = f"{CONTAINER_PREFIX}{process.pid}"
        self._processes[container_id] = process
        logger.info(
            "agent started", extra={"bot_id": str(config.bot_id), "container_id": container_id}
        )
        return LaunchHandle(id=container_id)

    async def is_alive(self, handle: LaunchHandle) -> bool:
        """Return whether the agent ``handle`` names runs (also one started before a restart)."""
        process = self._processes.get(handle.id)
        if process is not None:
            return process.returncode is None
        return await asyncio.to_thread(self._orphan, handle.id) is not None

    async def terminate(self, handle: LaunchHandle) -> None:
        """Stop an agent: SIGTERM, then SIGKILL after the grace period. Unknown ids are ignored."""
        container_id = handle.id
        process = self._processes.pop(container_id, None)
        if process is not None:
            await self._stop_owned(process)
        else:
            await asyncio.to_thread(self._stop_orphan, container_id)
        logger.info("agent terminated", extra={"container_id": container_id})

    async def _stop_owned(self, process: asyncio.subprocess.Process) -> None:
        if process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), self._grace_seconds)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()

    @staticmethod
    def _orphan(container_id: str) -> psutil.Process | None:
        pid_text = container_id.removeprefix(CONTAINER_PREFIX)
        if not container_id.startswith(CONTAINER_PREFIX) or not pid_text.isdigit():
            return None
        try:
            process = psutil.Process(int(pid_text))
            cmdline = process.cmdline()
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return None
        # A recycled pid must not be signalled: only a process running an agent config qualifies.
        if "--config" not in cmdline or not any(arg.endswith("bot.json") for arg in cmdline):
            return None
        return process

    def _stop_orphan(self, container_id: str) -> None:
        process = self._orphan(container_id)
        if process is None:
            return
        process.terminate()
        try:
            process.wait(self._grace_seconds)
        except psutil.TimeoutExpired:
            process.kill()

    async def machines(self) -> dict[str, UUID]:
        """The agents that run, also those started before a restart: handle id → bot id.

        An agent is listed when the process its bot's folder records runs with the same start
        time (a recycled pid is not it) and that bot's config on its command line.
        """
        return await asyncio.to_thread(self._listed)

    def _listed(self) -> dict[str, UUID]:
        listed: dict[str, UUID] = {}
        try:
            folders = list((self._data_dir / "bots").iterdir())
        except FileNotFoundError:
            return listed
        for folder in folders:
            found = _recorded_agent(folder)
            if found is not None:
                listed[f"{CONTAINER_PREFIX}{found[0]}"] = found[1]
        return listed

    async def aclose(self) -> None:
        """Terminate every agent this launcher started and still runs."""
        ids = list(self._processes)
        await asyncio.gather(*(self.terminate(LaunchHandle(id=item)) for item in ids))


def _write_whole(path: Path, text: str) -> None:
    """Write ``path`` so that a reader (or a crash) never meets it half written.

    A SIGKILL between ``write_text``'s truncating open and its write left an empty
    ``agent.pid`` beside a running agent, and the relaunch after the crash started a second
    agent for the bot (tests/api/test_scheduler_crash.py, seen twice in full runs).
    """
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="ascii")
    os.replace(partial, path)


def _record_process(folder: Path, pid: int, bot_id: UUID) -> None:
    """Write ``agent.process.json``: which process runs the bot, told apart from a recycled pid."""
    try:
        started_at = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:  # it ended at once; nothing is left to list
        return
    record = {"pid": pid, "started_at": started_at, "bot_id": str(bot_id)}
    _write_whole(folder / PROCESS_FILE, json.dumps(record))


def _recorded_agent(folder: Path) -> tuple[int, UUID] | None:
    """(pid, bot id) of the agent ``folder`` records when it still runs, else None."""
    try:
        record = json.loads((folder / PROCESS_FILE).read_text("utf-8"))
        pid, started_at, bot_id = int(record["pid"]), float(record["started_at"]), record["bot_id"]
        bot = UUID(bot_id)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        same = abs(process.create_time() - started_at) < 0.01
        cmdline = process.cmdline() if same else []
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    if str(folder / "bot.json") not in cmdline:
        return None
    return pid, bot


def create(settings: Settings) -> LocalLauncher:
    """Factory used by ``Settings.launcher = "local"``: bots live under ``settings.data_dir``."""
    return LocalLauncher(
        settings.data_dir,
        command=settings.local_agent_command or None,
        agent_settings=settings.fleet_agent_settings,
    )
