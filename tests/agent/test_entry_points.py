"""The agent's two entry points as real processes: ``python -m agent --config`` (as the
launcher runs it) leaving cleanly on SIGTERM — headless, and with ``--display`` on an Xvfb and
PulseAudio of its own that it stops again — and ``meetbot agent`` printing events."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from agent.contracts.bot_config import BotConfig, BotSettings, Platform
from testmeeting import TestMeetingServer, parse_scenario
from tests.agent.link_peer import LinkPeer
from tests.plugins.paths import REPO_ROOT

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOKEN = "agent-token-for-tests"


def _env(server: TestMeetingServer, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "MEETBOT_AGENT_EXTRA_BROWSER_ARGS": json.dumps(server.browser_args()),
            "MEETBOT_AGENT_IGNORE_HTTPS_ERRORS": "true",
            "MEETBOT_AGENT_DATA_DIR": str(tmp_path / "agent"),
            "MEETBOT_AGENT_HEARTBEAT_INTERVAL_SECONDS": "1",
            "MEETBOT_AGENT_DRAIN_TIMEOUT_SECONDS": "5",
        }
    )
    return env


@pytest.mark.parametrize("display", [False, True], ids=["headless", "display"])
async def test_python_m_agent_leaves_cleanly_on_sigterm(tmp_path: Path, display: bool) -> None:
    scenario = parse_scenario(
        "platform: teams\nmeeting_id: '3300000001'\nlobby: false\nparticipants: [{name: Alice}]\n"
    )
    peer = LinkPeer(str(uuid.uuid4()), TOKEN)
    await peer.start()
    async with TestMeetingServer(scenario=scenario) as server:
        config = BotConfig(
            bot_id=uuid.UUID(peer.bot_id),
            meeting_id=7,
            platform=Platform.TEAMS,
            meeting_url=server.meeting_url("teams", "3300000001"),
            native_meeting_id="3300000001",
            settings=BotSettings(bot_name="Notetaker", transcribe_enabled=False),
            control_plane_url=peer.url,
            agent_token=TOKEN,
        )
        path = tmp_path / "bot.json"
        path.write_text(config.model_dump_json(), encoding="utf-8")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent",
            "--config",
            str(path),
            *(["--display"] if display else []),
            cwd=REPO_ROOT,
            env=_env(server, tmp_path),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            await peer.wait_for(
                lambda: any(e.status.value == "active" for e in peer.events_of("status")), 60
            )
            process.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await peer.stop()
        assert process.returncode == 0, stderr.decode()[-2000:]
        statuses = [(e.status.value, e.status_reason) for e in peer.events_of("status")]
        assert statuses[-2:] == [("stopping", "sigterm"), ("completed", "sigterm")]
        assert peer.duplicates == 0
        room = server.room("teams", "3300000001")
        assert any(e.type == "left" and e.name == "Notetaker" for e in room.timeline())
        # Logs carry static messages with fields; no participant names or chat.
        assert b"Alice" not in stderr
        if display:
            # Its runtime came up before the browser and went down after the bot.
            log = stderr.decode()
            assert log.index("bot runtime started") < log.index("browser started")
            assert log.index("bot leaving") < log.index("bot runtime stopped")


async def test_meetbot_agent_prints_events_and_exits_with_the_outcome(tmp_path: Path) -> None:
    scenario = parse_scenario(
        "platform: google_meet\nmeeting_id: 'cli-test-abc'\nlobby: false\n"
        "participants: [{name: Alice}]\nend_at: 2.0\n"
    )
    async with TestMeetingServer(scenario=scenario) as server:
        env = _env(server, tmp_path)
        del env["MEETBOT_AGENT_EXTRA_BROWSER_ARGS"]
        args = [f"--browser-arg={arg}" for arg in server.browser_args()]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "meetbot",
            "agent",
            "--platform",
            "google_meet",
            "--meeting-url",
            server.meeting_url("google_meet", "cli-test-abc"),
            "--name",
            "Laptop bot",
            *args,
            cwd=REPO_ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode == 0, stderr.decode()[-2000:]
    events = [json.loads(line) for line in stdout.decode().splitlines() if line.strip()]
    statuses = [e["data"]["status"] for e in events if e["event"] == "bot_status"]
    assert statuses == ["joining", "active", "stopping", "completed"]
    assert events[-1]["data"]["status_reason"] == "meeting_ended"
    assert any(
        e["event"] == "participant_update" and e["data"]["participants"] == ["Alice"]
        for e in events
    )


async def test_a_bad_config_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bot.json"
    path.write_text('{"platform": "skype"}', encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agent",
        "--config",
        str(path),
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2
    assert b"cannot read config" in stderr
