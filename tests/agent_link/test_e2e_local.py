"""End to end on one machine: the control plane's local launcher starts the real agent
(``python -m agent``, Chromium), which joins a testmeeting room, links back, and serves live
routes: subscribe, participants, screenshot; DELETE stops it and the process ends."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

from control_plane.app import create_app
from control_plane.auth.context import Role
from control_plane.auth.provisioning import (
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.db.migrate import upgrade
from control_plane.keys import DB, LAUNCHER
from control_plane.launchers.base import LaunchHandle
from control_plane.settings import Settings
from testmeeting import TestMeetingServer, parse_scenario

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MEETING_ID = "abc-test-xyz"
WAIT_S = 90.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _until(
    check: Callable[[], Awaitable[Any]], what: str, within: float = WAIT_S
) -> Any:
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
async def meeting() -> AsyncIterator[TestMeetingServer]:
    scenario = parse_scenario(
        f"platform: google_meet\nmeeting_id: '{MEETING_ID}'\nparticipants:\n  - name: Alice\n"
    )
    async with TestMeetingServer(scenario=scenario) as server:
        yield server


async def test_local_launcher_runs_the_real_agent_through_a_meeting(
    aiohttp_server: AiohttpServer,
    meeting: TestMeetingServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The agent subprocess inherits these (its AgentSettings): Chromium sent to the simulator.
    monkeypatch.setenv("MEETBOT_AGENT_EXTRA_BROWSER_ARGS", json.dumps(meeting.browser_args()))
    monkeypatch.setenv("MEETBOT_AGENT_IGNORE_HTTPS_ERRORS", "true")
    monkeypatch.setenv("MEETBOT_AGENT_DATA_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("MEETBOT_AGENT_HEARTBEAT_INTERVAL_SECONDS", "1")
    monkeypatch.setenv("MEETBOT_AGENT_DRAIN_TIMEOUT_SECONDS", "5")
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'meetbot.db'}"
    await upgrade(database_url)
    port = _free_port()
    settings = Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="local",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        scheduler_interval_seconds=0.05,
    )
    app: web.Application = create_app(settings)
    server = await aiohttp_server(app, port=port)
    async with app[DB].sessions.begin() as session:
        user = await get_or_create_user(session, "e2e@example.org")
        workspace = await create_workspace(session, "E2E")
        await add_member(session, workspace, user, Role.OWNER)
        issued = await issue_key(
            session, user=user, workspace_id=workspace.id, name="e2e", key_prefix="mbk"
        )
    headers = {"X-API-Key": issued.secret}
    base = str(server.make_url("/api/v1"))

    async with aiohttp.ClientSession(headers=headers) as http:
        created = await http.post(
            f"{base}/bots",
            json={
                "platform": "google_meet",
                "meeting_url": meeting.meeting_url("google_meet", MEETING_ID),
                "bot_name": "Notetaker",
                "transcribe_enabled": False,
            },
        )
        assert created.status == 201, await created.text()
        bot_id = (await created.json())["bot_id"]

        async def bot() -> dict[str, Any]:
            async with http.get(f"{base}/bots/{bot_id}") as response:
                record: dict[str, Any] = await response.json()
                return record

        async def is_active() -> bool:
            record = await bot()
            assert record["status"] not in {"failed", "completed"}, record
            return bool(record["status"] == "active")

        await _until(is_active, "the bot to become active")
        container = (await bot())["bot_container_id"]
        assert container.startswith("local-")

        async with http.post(f"{base}/bots/{bot_id}/subscribe") as response:
            assert response.status == 200
            stream = await response.json()
        async with (
            aiohttp.ClientSession() as plain,
            plain.get(
                stream["url"],
                # From the first event on: the agent keeps the whole meeting's events.
                headers={"Authorization": f"Bearer {stream['token']}", "Last-Event-ID": "0"},
            ) as events,
        ):
            assert events.status == 200

            async def first_event_name() -> bytes:
                async for line in events.content:
                    if line.startswith(b"event:"):
                        return line.split(b":", 1)[1].strip()
                return b""

            assert await asyncio.wait_for(first_event_name(), 10) == b"bot_status"

        async def sees_alice() -> bool:
            async with http.get(f"{base}/bots/{bot_id}/participants") as response:
                return "Alice" in (await response.json())["participants"]

        await _until(sees_alice, "the participant list")

        async with http.post(f"{base}/bots/{bot_id}/screenshot") as response:
            assert response.status == 200, await response.text()
            shot = await response.json()
        async with aiohttp.ClientSession() as plain, plain.get(shot["url"]) as download:
            assert download.status == 200
            assert (await download.read()).startswith(b"\x89PNG\r\n\x1a\n")

        async with http.delete(f"{base}/bots/{bot_id}") as response:
            assert response.status == 202

        async def finished() -> dict[str, Any] | None:
            record = await bot()
            return record if record["status"] in {"completed", "failed"} else None

        record = await _until(finished, "the bot to finish")
        assert (record["status"], record["status_reason"]) == ("completed", "stopped_by_api")
        handle = LaunchHandle(id=container)
        await _until(
            lambda: _not(app[LAUNCHER].is_alive(handle)), "the agent process to exit", 30
        )


async def _not(value: Awaitable[bool]) -> bool:
    return not await value
