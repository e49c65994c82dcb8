"""The reaper (agent_lost, launch_failed, restart grace), stopping an agent, the agent upload
path with its token and signatures, signed-URL expiry, and the meeting record's artifacts."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
from pytest_aiohttp import AiohttpClient
from sqlalchemy import select, update

from agent.contracts.link import (
    ArtifactEvent,
    ArtifactKind,
    ChatMessageEvent,
    Command,
    CommandName,
    Heartbeat,
    StopCommand,
    UploadSlot,
)
from agent.contracts.status import BotStatus
from control_plane.agent_hub.keys import AGENT_HUB, STORAGE
from control_plane.agent_link.reaper import Reaper
from control_plane.app import create_app
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import AgentLink, Artifact, ChatMessage
from control_plane.db.models.bot import Meeting
from control_plane.hooks import AGENT_COMMANDS, STATUS_HOOKS
from control_plane.launchers.base import LAUNCHER, LaunchHandle
from control_plane.launchers.memory import MemoryLauncher
from control_plane.meetings.artifacts import ARTIFACT_LISTER
from control_plane.settings import Settings
from control_plane.storage.base import artifact_key
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api


def _path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def _reaper(client: Client) -> Reaper:
    app = client.app
    return Reaper(
        app[DB],
        app[LAUNCHER],
        app[AGENT_HUB],
        app[STATUS_HOOKS],
        heartbeat_timeout=30,
        connect_timeout=60,
    )


async def _status(client: Client, meeting_id: int) -> tuple[str, str | None]:
    async with client.app[DB].sessions() as session:
        meeting = await session.get(Meeting, meeting_id)
        assert meeting is not None
        return meeting.status, meeting.status_reason


async def test_a_silent_agent_is_lost_terminated_and_disconnected(
    client: Client,
    launch_bot: LaunchBot,
    connect_agent: ConnectAgent,
    launcher: MemoryLauncher,
) -> None:
    lost = await launch_bot(BotStatus.ACTIVE)
    never = await launch_bot(BotStatus.REQUESTED)
    agent = await connect_agent(lost)
    await agent.register()
    await agent.send(Heartbeat())
    reaper = _reaper(client)
    now = datetime.now(UTC)

    assert await reaper.sweep(now + timedelta(seconds=25)) == []
    reaped = await reaper.sweep(now + timedelta(seconds=31))
    assert [(r.bot_id, r.reason.value) for r in reaped] == [(lost.bot_id, "agent_lost")]
    assert await _status(client, lost.meeting_id) == ("failed", "agent_lost")
    assert await agent.closed_by_control_plane() == 4001
    assert not await launcher.is_alive(LaunchHandle(id="mem-1"))
    assert await _status(client, never.meeting_id) == ("requested", None)

    reaped = await reaper.sweep(now + timedelta(seconds=61))
    assert [(r.bot_id, r.reason.value) for r in reaped] == [(never.bot_id, "launch_failed")]
    assert await _status(client, never.meeting_id) == ("failed", "launch_failed")
    assert len(launcher.terminated) == 2
    assert await reaper.sweep(now + timedelta(seconds=600)) == []


async def test_silence_counts_from_the_control_planes_start(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(AgentLink)
            .where(AgentLink.meeting_id == bot.meeting_id)
            .values(last_seen_at=long_ago, registered_at=long_ago)
        )
    reaper = _reaper(client)  # a control plane that just started after a long outage
    now = datetime.now(UTC)
    assert await reaper.sweep(now + timedelta(seconds=5)) == []
    assert len(await reaper.sweep(now + timedelta(seconds=31))) == 1


async def test_an_agent_whose_frames_wait_to_be_stored_here_is_not_reaped(
    client: Client, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    await agent.register()
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    async with client.app[DB].sessions.begin() as session:
        # As if its frames were still queued behind a backlog: the stored time is old.
        await session.execute(
            update(AgentLink)
            .where(AgentLink.meeting_id == bot.meeting_id)
            .values(last_seen_at=long_ago)
        )
    reaper = _reaper(client)
    later = datetime.now(UTC) + timedelta(seconds=61)
    client.app[AGENT_HUB].heard(bot.bot_id, at=later - timedelta(seconds=20))  # its link reads
    assert await reaper.sweep(later) == []
    assert await _status(client, bot.meeting_id) == ("active", None)

    await agent.close()  # gone from here: the stored silence decides again
    for _ in range(50):
        if not client.app[AGENT_HUB].connected(bot.bot_id):
            break
        await asyncio.sleep(0.02)
    reaped = await reaper.sweep(later)
    assert [(r.bot_id, r.reason.value) for r in reaped] == [(bot.bot_id, "agent_lost")]


async def test_the_running_app_reaps_an_agent_that_stops_heartbeating(
    settings: Settings, owner: Caller, launch_bot: LaunchBot, aiohttp_client: AiohttpClient
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    fast = create_app(
        settings.model_copy(update={"heartbeat_timeout_seconds": 0.4}),
        launcher=MemoryLauncher(),
    )
    second = await aiohttp_client(fast)
    peer_ws = await second.ws_connect(
        f"/internal/v1/agents/{bot.bot_id}", headers={"Authorization": f"Bearer {bot.token}"}
    )
    await peer_ws.send_str(Heartbeat().model_dump_json())
    await peer_ws.receive()  # its ack
    # The agent process is "killed": no more frames. Within the timeout (plus a sweep) it fails.
    for _ in range(50):
        if (await _status(second, bot.meeting_id))[0] == "failed":
            break
        await asyncio.sleep(0.1)
    assert await _status(second, bot.meeting_id) == ("failed", "agent_lost")
    await peer_ws.close()


async def test_stop_reaches_a_connected_agent_and_is_repeated_on_reregistration(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)
    await agent.register()
    send = client.app[AGENT_COMMANDS]
    assert await send(bot.bot_id, Command(command=StopCommand()))
    assert (await agent.next_command()).name is CommandName.STOP

    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(Meeting).where(Meeting.id == bot.meeting_id).values(status="stopping")
        )
    await agent.reconnect()
    await agent.register()
    assert (await agent.next_command()).name is CommandName.STOP
    await agent.close()
    await asyncio.sleep(0.05)
    assert not await send(bot.bot_id, Command(command=StopCommand()))


async def test_agent_upload_path_needs_its_token_its_prefix_and_a_valid_signature(
    client: Client, launch_bot: LaunchBot
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    other = await launch_bot(BotStatus.ACTIVE)
    auth = {"Authorization": f"Bearer {bot.token}"}
    response = await client.post(
        f"/internal/v1/agents/{bot.bot_id}/uploads",
        json={"kind": "recording", "name": "recording.mp3", "content_type": "audio/mpeg"},
        headers=auth,
    )
    assert response.status == 200
    slot = UploadSlot.model_validate(await response.json())
    assert slot.storage_key == f"bots/{bot.bot_id}/recordings/recording.mp3"
    assert slot.agent_auth
    assert slot.headers == {"Content-Type": "audio/mpeg"}
    path = _path(slot.url)
    body = b"ID3" + b"\x00" * (3 * 1024 * 1024 // 2)  # over the API's 1 MiB body limit

    assert (await client.put(path, data=io.BytesIO(body))).status == 401
    foreign = await client.put(
        path, data=io.BytesIO(body), headers={"Authorization": f"Bearer {other.token}"}
    )
    assert foreign.status == 403
    tampered = await client.put(
        path.replace("expires=", "expires=1"), data=io.BytesIO(body), headers=auth
    )
    assert tampered.status == 403
    stored = await client.put(path, data=io.BytesIO(body), headers=auth)
    assert stored.status == 201
    assert (await stored.json())["size_bytes"] == len(body)
    assert await client.app[STORAGE].size(slot.storage_key) == len(body)

    response = await client.post(
        f"/internal/v1/agents/{other.bot_id}/uploads",
        json={"kind": "recording", "name": "x.mp3", "content_type": "audio/mpeg"},
        headers=auth,
    )
    assert response.status == 401


async def test_signed_download_urls_expire(client: Client, launch_bot: LaunchBot) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    storage = client.app[STORAGE]
    key = artifact_key(bot.bot_id, "screenshots", "s.png")
    await storage.put(key, b"png", "image/png")
    fresh = await storage.presign_get(key, 60)
    assert (await client.get(_path(fresh.url))).status == 200
    stale = await storage.presign_get(key, -1)  # expired a second ago
    response = await client.get(_path(stale.url))
    assert response.status == 403
    assert (await response.json())["code"] == "url_expired"
    missing = await storage.presign_get(artifact_key(bot.bot_id, "screenshots", "n.png"), 60)
    assert (await client.get(_path(missing.url))).status == 404


async def test_meeting_record_lists_artifacts_and_purge_removes_them(
    client: Client, owner: Caller, launch_bot: LaunchBot, connect_agent: ConnectAgent
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    storage = client.app[STORAGE]
    agent = await connect_agent(bot)
    shot_key = artifact_key(bot.bot_id, "screenshots", "s1.png")
    rec_key = artifact_key(bot.bot_id, "recordings", "r1.mp4")
    await storage.put(shot_key, b"png", "image/png")
    await storage.put(rec_key, b"mp4", "video/mp4")
    now = datetime.now(UTC)
    await agent.send(
        ArtifactEvent(
            kind=ArtifactKind.SCREENSHOT,
            artifact_id="s1",
            storage_key=shot_key,
            content_type="image/png",
            size_bytes=3,
            width=10,
            height=10,
            captured_at=now,
        )
    )
    await agent.send(
        ArtifactEvent(
            kind=ArtifactKind.RECORDING,
            artifact_id="r1",
            storage_key=rec_key,
            content_type="video/mp4",
            size_bytes=3,
            format="mp4",
            duration_s=2.0,
        )
    )
    await agent.send(ChatMessageEvent(message_id="c", sender="Ada", text="hi", timestamp=now))

    async with client.app[DB].sessions() as session:
        meeting = await session.get(Meeting, bot.meeting_id)
        assert meeting is not None
        recordings, screenshots, _ = await client.app[ARTIFACT_LISTER](session, meeting)
    assert [(r.id, r.format, r.duration_s, r.size_bytes) for r in recordings] == [
        ("r1", "mp4", 2.0, 3)
    ]
    assert [s.id for s in screenshots] == ["s1"]
    assert (await client.get(_path(recordings[0].url))).status == 200

    async with client.app[DB].sessions.begin() as session:
        await session.execute(
            update(Meeting).where(Meeting.id == bot.meeting_id).values(status="completed")
        )
    purged = await client.delete(f"/api/v1/meetings/{bot.meeting_id}", headers=owner.headers)
    assert purged.status == 200
    async with client.app[DB].sessions() as session:
        left = list(await session.scalars(select(Artifact.id))) + list(
            await session.scalars(select(ChatMessage.id))
        )
    assert left == []
    assert await storage.size(rec_key) is None
    assert await storage.size(shot_key) is None


async def test_a_finished_bot_left_running_is_torn_down_after_the_grace(
    client: Client, launch_bot: LaunchBot, launcher: MemoryLauncher
) -> None:
    done = await launch_bot(BotStatus.COMPLETED)
    recent = await launch_bot(BotStatus.FAILED)
    now = datetime.now(UTC)
    async with client.app[DB].sessions.begin() as session:
        for bot, ended in ((done, now - timedelta(seconds=200)), (recent, now)):
            await session.execute(
                update(Meeting).where(Meeting.id == bot.meeting_id).values(end_time=ended)
            )
    reaper = _reaper(client)  # 120 s grace by default
    assert await reaper.sweep(now) == []
    assert launcher.terminated == [LaunchHandle(id="mem-1")]
    await reaper.sweep(now + timedelta(seconds=121))
    assert launcher.terminated == [LaunchHandle(id="mem-1"), LaunchHandle(id="mem-2")]
