"""The local launcher starts a real subprocess with a BotConfig file and stops it."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from agent.contracts.bot_config import BotConfig, Platform
from control_plane.launchers.base import LaunchError, LaunchHandle
from control_plane.launchers.local import LocalLauncher

pytestmark = pytest.mark.unit

STAND_IN = Path(__file__).with_name("agent_stand_in.py")


def _config() -> BotConfig:
    return BotConfig(
        bot_id=uuid.uuid4(),
        meeting_id=7,
        platform=Platform.GOOGLE_MEET,
        meeting_url="https://meet.google.com/abc-defg-hij",
        native_meeting_id="abc-defg-hij",
        control_plane_url="http://127.0.0.1:9",
        agent_token="mat_secret",
    )


async def _wait_for(path: Path) -> None:
    for _ in range(200):
        if await asyncio.to_thread(path.exists):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


async def test_launch_writes_private_config_and_terminate_stops_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEETBOT_SVIX_API_KEY", "control-plane-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "cloud-secret")
    monkeypatch.setenv("MEETBOT_AGENT_HEADLESS", "true")
    monkeypatch.setenv("MEETBOT_AGENT_TTS_PROVIDER", "openai")
    monkeypatch.setenv("MEETBOT_AGENT_TTS_API_KEY", "tts-secret")
    monkeypatch.setenv("MEETBOT_INTELLIGENCE_API_KEY", "llm-secret")
    launcher = LocalLauncher(
        tmp_path,
        command=[sys.executable, str(STAND_IN)],
        agent_settings={"MEETBOT_AGENT_LOG_LEVEL": "DEBUG"},  # Settings.fleet_agent_settings
    )
    config = _config()
    handle = await launcher.launch(config)
    folder = tmp_path / "bots" / str(config.bot_id)
    await _wait_for(folder / "started")

    # The operator's agent settings and the environment's secrets are in the private config;
    # the secrets only there.
    written = json.loads((folder / "bot.json").read_text())
    handed = {
        "MEETBOT_AGENT_LOG_LEVEL": "DEBUG",
        "MEETBOT_AGENT_TTS_API_KEY": "tts-secret",
    }
    assert BotConfig.model_validate(written) == config.model_copy(update={"agent_settings": handed})
    assert stat.S_IMODE((folder / "bot.json").stat().st_mode) == 0o600
    assert (folder / "started").read_text() == str(config.bot_id)
    passed = json.loads((folder / "env.json").read_text())
    assert "MEETBOT_AGENT_HEADLESS" in passed
    assert "MEETBOT_AGENT_TTS_PROVIDER" in passed
    assert "MEETBOT_SVIX_API_KEY" not in passed
    assert "AWS_SECRET_ACCESS_KEY" not in passed
    assert "MEETBOT_AGENT_TTS_API_KEY" not in passed
    assert "MEETBOT_INTELLIGENCE_API_KEY" not in passed  # the control plane's model key
    assert handle.id.startswith("local-")
    pid = int(handle.id.removeprefix("local-"))
    assert await launcher.is_alive(handle)

    await launcher.terminate(handle)
    assert not await launcher.is_alive(handle)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert "stand-in agent running" in (folder / "agent.log").read_text()


async def test_terminate_kills_an_agent_that_ignores_sigterm(tmp_path: Path) -> None:
    launcher = LocalLauncher(
        tmp_path, command=[sys.executable, str(STAND_IN), "--ignore-sigterm"], grace_seconds=0.5
    )
    config = _config()
    handle = await launcher.launch(config)
    await _wait_for(tmp_path / "bots" / str(config.bot_id) / "started")
    await launcher.terminate(handle)
    assert not await launcher.is_alive(handle)


async def test_a_new_launcher_stops_an_agent_started_before_a_restart(tmp_path: Path) -> None:
    first = LocalLauncher(tmp_path, command=[sys.executable, str(STAND_IN)])
    config = _config()
    handle = await first.launch(config)
    await _wait_for(tmp_path / "bots" / str(config.bot_id) / "started")
    pid = int(handle.id.removeprefix("local-"))

    second = LocalLauncher(tmp_path, command=[sys.executable, str(STAND_IN)], grace_seconds=5)
    assert await second.is_alive(handle)
    await second.terminate(handle)
    assert not await second.is_alive(handle)
    # The first launcher's process object reaps the child, as its owner would at shutdown.
    await first.aclose()
    assert not psutil.pid_exists(pid)


async def test_a_relaunch_after_a_crash_that_left_an_empty_pid_file_finds_the_agent(
    tmp_path: Path,
) -> None:
    """A control plane killed while it wrote ``agent.pid`` (a version that truncated, then
    wrote) left it empty beside a running agent; the relaunch of its lapsed claim must find
    that agent instead of starting a second one."""
    first = LocalLauncher(tmp_path, command=[sys.executable, str(STAND_IN)])
    config = _config()
    handle = await first.launch(config)
    folder = tmp_path / "bots" / str(config.bot_id)
    await _wait_for(folder / "started")
    assert not list(folder.glob(".*.partial"))  # the pid file is written whole
    (folder / "agent.pid").write_text("", "ascii")  # what the crash left

    second = LocalLauncher(tmp_path, command=[sys.executable, str(STAND_IN)], grace_seconds=5)
    try:
        assert await second.launch(config) == handle
        config_path = str(folder / "bot.json")
        agents = [
            p for p in psutil.process_iter(["cmdline"]) if config_path in (p.info["cmdline"] or [])
        ]
        assert len(agents) == 1, agents
    finally:
        await second.terminate(handle)
        await first.aclose()


async def test_terminate_ignores_unknown_and_foreign_ids(tmp_path: Path) -> None:
    launcher = LocalLauncher(tmp_path)
    await launcher.terminate(LaunchHandle(id="local-not-a-pid"))
    await launcher.terminate(LaunchHandle(id="ec2-i-123"))
    # Our own pid runs pytest, not an agent config: it must not be signalled.
    own = LaunchHandle(id=f"local-{psutil.Process().pid}")
    assert not await launcher.is_alive(own)
    await launcher.terminate(own)


async def test_a_program_that_cannot_start_is_a_launch_error(tmp_path: Path) -> None:
    launcher = LocalLauncher(tmp_path, command=[str(tmp_path / "no-such-program")])
    with pytest.raises(LaunchError):
        await launcher.launch(_config())
