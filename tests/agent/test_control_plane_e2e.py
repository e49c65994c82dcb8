"""The whole path on one machine, for each skin: the control plane (SQLite) launches the real
agent with its ``local`` launcher (``python -m agent``), the agent joins a testmeeting room, and
everything is checked through the public API and the bot's SSE stream — plus a control plane
that dies for 20 s mid-meeting, and an agent that dies.

The agent subprocesses read their ``MEETBOT_AGENT_*`` settings from the environment set here:
Chromium sent to the simulator, short intervals, and ``timeout_scale`` (test only).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import pytest
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
from control_plane.db.models.agent_link import AgentFrameReceipt
from control_plane.db.models.bot import BotStatusChange, Meeting
from control_plane.enums import Role
from control_plane.launchers.local import LocalLauncher
from control_plane.settings import Settings
from testmeeting import Room, TestMeetingServer, parse_scenario
from tests.ports import free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOT_NAME = "Notetaker"
IDS = {"google_meet": "cpe-test-abc", "zoom": "87654321012", "teams": "5550001112"}


def _meeting_url(platform: str, meeting_id: str) -> str:
    """The URL a user would paste (Zoom's /j/ link, which the web client redirects)."""
    if platform == "zoom":
        return f"https://us02web.zoom.us/j/{meeting_id}"
    if platform == "teams":
        return f"https://teams.live.com/meet/{meeting_id}?p=pass"
    return f"https://meet.google.com/{meeting_id}"


async def _until(check: Callable[[], Awaitable[Any]], what: str, within: float = 60.0) -> Any:
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class ControlPlane:
    """A control plane on a fixed port that can be stopped and started again."""

    settings: Settings
    launcher: LocalLauncher
    runner: web.AppRunner | None = None
    app: web.Application | None = None
    key: str = ""

    async def start(self) -> None:
        self.app = create_app(self.settings, launcher=self.launcher)
        self.runner = web.AppRunner(self.app, shutdown_timeout=1.0)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.settings.port, reuse_address=True).start()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}/api/v1"


@dataclass
class Stream:
    """A background SSE reader collecting ``(id, event, data)``."""

    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def of(self, name: str) -> list[dict[str, Any]]:
        return [data for _, event, data in self.events if event == name]


@pytest.fixture
async def control_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ControlPlane]:
    monkeypatch.setenv("MEETBOT_AGENT_IGNORE_HTTPS_ERRORS", "true")
    monkeypatch.setenv("MEETBOT_AGENT_DATA_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("MEETBOT_AGENT_HEARTBEAT_INTERVAL_SECONDS", "1")
    monkeypatch.setenv("MEETBOT_AGENT_RECONNECT_MAX_SECONDS", "1")
    monkeypatch.setenv("MEETBOT_AGENT_DRAIN_TIMEOUT_SECONDS", "10")
    monkeypatch.setenv("MEETBOT_AGENT_TIMEOUT_SCALE", "0.05")
    # The agents fetch media (speak's audio_url) from loopback servers here.
    monkeypatch.setenv("MEETBOT_AGENT_MEDIA_ALLOW_HTTP", "true")
    monkeypatch.setenv("MEETBOT_AGENT_MEDIA_ALLOW_PRIVATE", "true")
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'meetbot.db'}"
    await upgrade(database_url)
    port = free_port()
    settings = Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        scheduler_interval_seconds=0.1,
        heartbeat_timeout_seconds=4.0,
        presigned_url_ttl_seconds=2,
        # Media URLs a bot fetches (speak's audio_url) may be served from loopback here.
        webhook_allow_http=True,
        webhook_allow_private=True,
    )
    launcher = LocalLauncher(settings.data_dir, grace_seconds=10.0)
    cp = ControlPlane(settings, launcher)
    await cp.start()
    assert cp.app is not None
    async with cp.app[DB].sessions.begin() as session:
        user = await get_or_create_user(session, "agent-e2e@example.org")
        workspace = await create_workspace(session, "Agent E2E")
        await add_member(session, workspace, user, Role.OWNER)
        issued = await issue_key(
            session, user=user, workspace_id=workspace.id, name="e2e", key_prefix="mbk"
        )
    cp.key = issued.secret
    try:
        yield cp
    finally:
        await cp.stop()
        await launcher.aclose()


async def _meeting(monkeypatch: pytest.MonkeyPatch, scenario: str) -> TestMeetingServer:
    server = TestMeetingServer(scenario=parse_scenario(scenario))
    await server.start()
    monkeypatch.setenv("MEETBOT_AGENT_EXTRA_BROWSER_ARGS", json.dumps(server.browser_args()))
    return server


async def _launch(http: aiohttp.ClientSession, cp: ControlPlane, platform: str) -> str:
    body: dict[str, Any] = {
        "platform": platform,
        "meeting_url": _meeting_url(platform, IDS[platform]),
        "bot_name": BOT_NAME,
        "transcribe_enabled": False,
    }
    if platform == "zoom":
        body["zoom_obf_token"] = "obf-token-for-tests"
    async with http.post(f"{cp.api}/bots", json=body) as created:
        assert created.status == 201, await created.text()
        bot_id: str = (await created.json())["bot_id"]
    return bot_id


async def _record(http: aiohttp.ClientSession, cp: ControlPlane, bot_id: str) -> dict[str, Any]:
    async with http.get(f"{cp.api}/bots/{bot_id}") as response:
        assert response.status == 200, await response.text()
        record: dict[str, Any] = await response.json()
        return record


async def _status_is(
    http: aiohttp.ClientSession, cp: ControlPlane, bot_id: str, wanted: set[str]
) -> dict[str, Any] | None:
    record = await _record(http, cp, bot_id)
    return record if record["status"] in wanted else None


async def _participants(http: aiohttp.ClientSession, cp: ControlPlane, bot_id: str) -> list[str]:
    async with http.get(f"{cp.api}/bots/{bot_id}/participants") as response:
        names: list[str] = (await response.json())["participants"]
        return names


async def _subscribe(http: aiohttp.ClientSession, cp: ControlPlane, bot_id: str) -> Stream:
    async with http.post(f"{cp.api}/bots/{bot_id}/subscribe") as response:
        assert response.status == 200, await response.text()
        grant = await response.json()
    stream = Stream()

    async def read() -> None:
        headers = {"Authorization": f"Bearer {grant['token']}"}
        async with aiohttp.ClientSession() as plain, plain.get(grant["url"], headers=headers) as r:
            assert r.status == 200
            current: dict[str, str] = {}
            async for raw in r.content:
                line = raw.decode().rstrip("\n")
                if line.startswith(":"):
                    continue
                if line:
                    key, _, value = line.partition(": ")
                    current[key] = value
                elif current:
                    stream.events.append(
                        (int(current["id"]), current["event"], json.loads(current["data"]))
                    )
                    current = {}

    stream.task = asyncio.create_task(read())
    return stream


async def _close(stream: Stream) -> None:
    if stream.task is not None:
        stream.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
            await stream.task


def _bot_in(room: Room) -> str:
    return room.find_by_name(BOT_NAME).id


@pytest.mark.parametrize("platform", ["google_meet", "zoom", "teams"])
async def test_through_the_api_lobby_participants_chat_hand_screenshot_and_end(
    platform: str, control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    cp = control_plane
    meeting = await _meeting(
        monkeypatch,
        f"""
platform: {platform}
meeting_id: '{IDS[platform]}'
title: 'Quarterly planning on {platform}'
lobby: true
admission: {{decision: admit, after_s: 0.5}}
participants:
  - name: Alice
    chat: [{{at: 0.5, text: "Hello from Alice"}}]
  - {{name: Bob, join_at: 1.0, leave_at: 3.0}}
""",
    )
    room = meeting.room(platform, IDS[platform])
    try:
        async with aiohttp.ClientSession(headers={"X-API-Key": cp.key}) as http:
            bot_id = await _launch(http, cp, platform)
            await _until(lambda: _status_is(http, cp, bot_id, {"active"}), "active")
            stream = await _subscribe(http, cp, bot_id)
            # Bob came and went; the API's list says who is there now.
            await _until(
                lambda: _now(any(e.type == "left" and e.name == "Bob" for e in room.timeline())),
                "Bob to leave",
            )
            await _until(lambda: _is(_participants(http, cp, bot_id), ["Alice"]), "participants")

            # The meeting's name is the title the bot read from the page; the list finds it.
            wanted = {"name": f"planning on {platform}"}
            async with http.get(f"{cp.api}/meetings", params=wanted) as r:
                found = (await r.json())["meetings"]
            assert [m["bot_id"] for m in found] == [bot_id]
            assert found[0]["data"]["name"] == f"Quarterly planning on {platform}"

            # Chat both ways.
            async with http.post(f"{cp.api}/bots/{bot_id}/chat", json={"text": "Notes on."}) as r:
                assert r.status == 202, await r.text()
            await _until(lambda: _now(any(m.text == "Notes on." for m in room.chat)), "chat")
            assert next(m for m in room.chat if m.text == "Notes on.").sender == BOT_NAME

            async def chat_read() -> list[dict[str, Any]] | None:
                async with http.get(f"{cp.api}/bots/{bot_id}/chat") as r:
                    messages: list[dict[str, Any]] = (await r.json())["messages"]
                return messages if len(messages) >= 2 else None

            messages = await _until(chat_read, "chat to be stored")
            pairs = {(m["sender"], m["text"], m["from_bot"]) for m in messages}
            assert ("Alice", "Hello from Alice", False) in pairs
            assert (BOT_NAME, "Notes on.", True) in pairs

            # Hand up and down, as the host sees it.
            me = _bot_in(room)
            async with http.post(f"{cp.api}/bots/{bot_id}/hand") as r:
                assert r.status == 202, await r.text()
            await _until(lambda: _now(room.participants[me].hand_raised), "hand raised")
            async with http.delete(f"{cp.api}/bots/{bot_id}/hand") as r:
                assert r.status == 202, await r.text()
            await _until(lambda: _now(not room.participants[me].hand_raised), "hand lowered")

            # Screenshot: a PNG of the meeting behind a URL that expires.
            async with http.post(f"{cp.api}/bots/{bot_id}/screenshot") as r:
                assert r.status == 200, await r.text()
                shot = await r.json()
            async with aiohttp.ClientSession() as plain:
                async with plain.get(shot["url"]) as download:
                    assert download.status == 200
                    assert (await download.read()).startswith(b"\x89PNG\r\n\x1a\n")
                assert (shot["width"], shot["height"]) == (1280, 720)
                await asyncio.sleep(3.0)  # presigned_url_ttl_seconds=2
                async with plain.get(shot["url"]) as expired:
                    assert expired.status in (403, 410), expired.status

            await room.end()
            record = await _until(
                lambda: _status_is(http, cp, bot_id, {"completed", "failed"}), "the end"
            )
            assert (record["status"], record["status_reason"]) == ("completed", "meeting_ended")
            await _until(lambda: _now(bool(stream.task and stream.task.done())), "stream end", 30)
            await _close(stream)
        statuses = [(e["status"], e["status_reason"]) for e in stream.of("bot_status")]
        assert statuses == [
            ("joining", "join_started"),
            ("awaiting_admission", "lobby"),
            ("active", "admitted"),
            ("stopping", "meeting_ended"),
            ("completed", "meeting_ended"),
        ]
        updates = stream.of("participant_update")
        assert [u["participants"] for u in updates] == [["Alice"], ["Alice", "Bob"], ["Alice"]]
        assert [e[0] for e in stream.events] == list(range(1, len(stream.events) + 1))
    finally:
        await meeting.stop()


async def test_a_control_plane_down_for_20_s_loses_no_status_or_participant_event(
    control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    cp = control_plane
    platform = "google_meet"
    meeting = await _meeting(
        monkeypatch,
        f"""
platform: {platform}
meeting_id: '{IDS[platform]}'
lobby: false
participants:
  - name: Alice
  - {{name: Bob, join_at: 6.0, leave_at: 14.0}}
  - {{name: Carol, join_at: 10.0}}
""",
    )
    room = meeting.room(platform, IDS[platform])
    try:
        async with aiohttp.ClientSession(headers={"X-API-Key": cp.key}) as http:
            bot_id = await _launch(http, cp, platform)
            await _until(lambda: _status_is(http, cp, bot_id, {"active"}), "active")
            await _until(lambda: _is(_participants(http, cp, bot_id), ["Alice"]), "Alice")
            await cp.stop()  # the control plane dies; Bob and Carol come, Bob goes
            await asyncio.sleep(20.0)
            await cp.start()
            await _until(
                lambda: _is(_participants(http, cp, bot_id), ["Alice", "Carol"]),
                "the participants after the outage",
            )
            stream = await _subscribe(http, cp, bot_id)
            await _until(lambda: _now(len(stream.of("participant_update")) >= 4), "replay")
            await _close(stream)
            async with http.delete(f"{cp.api}/bots/{bot_id}") as r:
                assert r.status == 202
            await _until(lambda: _status_is(http, cp, bot_id, {"completed", "failed"}), "the end")
        assert cp.app is not None
        async with cp.app[DB].sessions() as session:
            meeting_row = (
                await session.execute(select(Meeting.id).where(Meeting.bot_id == uuid.UUID(bot_id)))
            ).scalar_one()
            stored_statuses = (
                (
                    await session.execute(
                        select(BotStatusChange.to_status)
                        .where(BotStatusChange.meeting_id == meeting_row)
                        .order_by(BotStatusChange.id)
                    )
                )
                .scalars()
                .all()
            )
            stored_participants = (
                (
                    await session.execute(
                        select(AgentFrameReceipt.frame_id).where(
                            AgentFrameReceipt.meeting_id == meeting_row,
                            AgentFrameReceipt.frame_type == "participants",
                        )
                    )
                )
                .scalars()
                .all()
            )
        agent_updates = stream.of("participant_update")
        # Every participant change the agent saw (the SSE replay keeps them all) was stored.
        assert len(stored_participants) == len(agent_updates)
        assert [u["participants"] for u in agent_updates] == [
            ["Alice"],
            ["Alice", "Bob"],
            ["Alice", "Bob", "Carol"],
            ["Alice", "Carol"],
        ]
        assert list(stored_statuses) == [
            "requested",
            "joining",
            "active",
            "stopping",
            "completed",
        ]
        assert [e.name for e in room.timeline() if e.type == "joined"][-2:] == ["Bob", "Carol"]
    finally:
        await meeting.stop()


async def test_a_killed_agent_is_failed_as_agent_lost(
    control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    cp = control_plane
    platform = "teams"
    meeting = await _meeting(
        monkeypatch,
        f"platform: {platform}\nmeeting_id: '{IDS[platform]}'\nlobby: false\n"
        "participants: [{name: Alice}]\n",
    )
    try:
        async with aiohttp.ClientSession(headers={"X-API-Key": cp.key}) as http:
            bot_id = await _launch(http, cp, platform)
            record = await _until(lambda: _status_is(http, cp, bot_id, {"active"}), "active")
            pid = int(record["bot_container_id"].removeprefix("local-"))
            killed_at = asyncio.get_running_loop().time()
            os.killpg(pid, signal.SIGKILL)  # the VM is gone: agent and Chromium at once
            record = await _until(
                lambda: _status_is(http, cp, bot_id, {"completed", "failed"}), "agent_lost", 30
            )
            waited = asyncio.get_running_loop().time() - killed_at
        assert (record["status"], record["status_reason"]) == ("failed", "agent_lost")
        # Heartbeat timeout 4 s, plus the reaper's interval and a loaded machine's slack.
        assert waited <= 4.0 + 6.0
    finally:
        await meeting.stop()


async def _launched(
    http: aiohttp.ClientSession, cp: ControlPlane, platform: str, meeting_id: str, name: str
) -> str:
    """Launch a bot without recording or transcription; return once its agent process runs
    (``bot_container_id`` set) while the bot is still ``requested``, as a PATCH right after a
    launch finds it."""
    body: dict[str, Any] = {
        "platform": platform,
        "meeting_url": _meeting_url(platform, meeting_id),
        "bot_name": name,
        "transcribe_enabled": False,
        "recording_enabled": False,
    }
    async with http.post(f"{cp.api}/bots", json=body) as created:
        assert created.status == 201, await created.text()
        bot_id: str = (await created.json())["bot_id"]

    async def spawned() -> dict[str, Any] | None:
        record = await _record(http, cp, bot_id)
        return record if record["bot_container_id"] else None

    record = await _until(spawned, "the agent process", 30)
    assert record["status"] == "requested", record["status"]
    return bot_id


async def _meeting_record(
    http: aiohttp.ClientSession, cp: ControlPlane, bot_id: str
) -> dict[str, Any]:
    bot = await _record(http, cp, bot_id)
    async with http.get(f"{cp.api}/meetings/{bot['id']}") as response:
        assert response.status == 200, await response.text()
        record: dict[str, Any] = await response.json()
        return record


async def test_patch_of_a_launched_bot_reaches_its_agent_all_or_nothing(
    control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PATCH right after launch (status ``requested``, the agent starting): the agent applies
    ``recording_enabled`` and a recording appears at the end; a change that includes a field
    no platform can change live (``bot_name``) is refused whole with 409 naming the field, the
    stored settings stay as they were, and that bot records nothing."""
    cp = control_plane
    platform, second_id = "google_meet", "cpf-test-abc"
    meeting = await _meeting(
        monkeypatch,
        f"platform: {platform}\nmeeting_id: '{IDS[platform]}'\nlobby: false\n"
        "participants:\n  - name: Alice\n"
        "    utterances: [{at: 0.5, text: 'Good morning everyone, let us review the plan.'}]\n",
    )
    await meeting.create_room(
        parse_scenario(
            f"platform: {platform}\nmeeting_id: '{second_id}'\nlobby: false\n"
            "participants:\n  - name: Alice\n"
            "    utterances: [{at: 0.5, text: 'Good morning everyone, let us review the plan.'}]\n"
        )
    )
    try:
        async with aiohttp.ClientSession(headers={"X-API-Key": cp.key}) as http:
            refused = await _launched(http, cp, platform, IDS[platform], BOT_NAME)
            async with http.patch(
                f"{cp.api}/bots/{refused}",
                json={"bot_name": "Renamed", "recording_enabled": True},
            ) as r:
                assert r.status == 409, await r.text()
                problem = await r.json()
            assert problem["code"] == "setting_not_live"
            assert problem["errors"][0]["loc"] == ["body", "bot_name"]
            kept = (await _record(http, cp, refused))["settings"]
            assert (kept["bot_name"], kept["recording_enabled"]) == (BOT_NAME, False)

            applied = await _launched(http, cp, platform, second_id, "Second")
            async with http.patch(
                f"{cp.api}/bots/{applied}", json={"recording_enabled": True, "language": "en"}
            ) as r:
                assert r.status == 200, await r.text()
                settings = (await r.json())["settings"]
            assert (settings["recording_enabled"], settings["language"]) == (True, "en")

            for bot_id in (refused, applied):
                await _until(partial(_status_is, http, cp, bot_id, {"active"}), "active")
            await asyncio.sleep(3.0)  # a few seconds of meeting to record
            await meeting.room(platform, IDS[platform]).end()
            await meeting.room(platform, second_id).end()
            for bot_id in (refused, applied):
                final = await _until(
                    partial(_status_is, http, cp, bot_id, {"completed", "failed"}), "the end", 90
                )
                assert (final["status"], final["status_reason"]) == (
                    "completed",
                    "meeting_ended",
                )
            recorded = await _meeting_record(http, cp, applied)
            assert len(recorded["recordings"]) == 1, recorded["recordings"]
            assert recorded["recordings"][0]["size_bytes"] > 0
            assert recorded["settings"]["recording_enabled"] is True
            unrecorded = await _meeting_record(http, cp, refused)
            assert unrecorded["recordings"] == []
            assert unrecorded["settings"]["bot_name"] == BOT_NAME
            assert unrecorded["settings"]["recording_enabled"] is False
    finally:
        await meeting.stop()


async def _is(names: Awaitable[list[str]], wanted: list[str]) -> bool:
    return await names == wanted


async def _now(value: bool) -> bool:
    return value
