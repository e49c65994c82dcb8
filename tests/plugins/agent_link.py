"""Bots launched through the real config builder, and scripted agent peers on real WebSockets.

The app is the API tests' (``tests.plugins.api_app``: SQLite and PostgreSQL); a test package
that needs short link timeouts overrides ``settings`` (as ``tests/agent_link/conftest.py`` does).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import update

from agent.contracts.bot_config import BotConfig, BotSettings, Platform
from agent.contracts.status import BotStatus
from control_plane.bots.config_builder import CONFIG_BUILDER
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.launchers.memory import MemoryLauncher
from tests.agent_link.peer import ScriptedAgent
from tests.plugins.api_app import Caller

Client = TestClient[web.Request, web.Application]


@dataclass(frozen=True)
class LaunchedBot:
    """A bot row plus the ``BotConfig`` the config builder produced (agent token, stream key)."""

    meeting_id: int
    bot_id: uuid.UUID
    config: BotConfig

    @property
    def token(self) -> str:
        """The bot's agent token."""
        assert self.config.agent_token is not None
        return self.config.agent_token


LaunchBot = Callable[..., Awaitable[LaunchedBot]]


@pytest.fixture
def launch_bot(
    client: Client,
    owner: Caller,
    launcher: MemoryLauncher,
) -> LaunchBot:
    """Store a bot for ``owner``, build its config with the app's builder and launch it as the
    scheduler does (the memory launcher's handle becomes ``bot_container_id``)."""

    async def launch(
        status: BotStatus = BotStatus.REQUESTED,
        *,
        caller: Caller | None = None,
        settings: BotSettings | None = None,
    ) -> LaunchedBot:
        who = caller or owner
        bot_settings = settings or BotSettings()
        async with client.app[DB].sessions.begin() as session:
            meeting = Meeting(
                workspace_id=who.workspace_id,
                user_id=who.user_id,
                platform=Platform.GOOGLE_MEET.value,
                native_meeting_id="abc-defg-hij",
                constructed_meeting_url="https://meet.google.com/abc-defg-hij",
                status=status.value,
                settings=bot_settings.model_dump(mode="json"),
                name="Weekly sync",
            )
            session.add(meeting)
        config = await client.app[CONFIG_BUILDER].build(meeting)
        handle = await launcher.launch(config)
        async with client.app[DB].sessions.begin() as session:
            await session.execute(
                update(Meeting).where(Meeting.id == meeting.id).values(bot_container_id=handle.id)
            )
        return LaunchedBot(meeting.id, meeting.bot_id, config)

    return launch


ConnectAgent = Callable[[LaunchedBot], Awaitable[ScriptedAgent]]


@pytest.fixture
async def connect_agent(client: Client) -> AsyncIterator[ConnectAgent]:
    """Open scripted agent links (closed after the test)."""
    peers: list[ScriptedAgent] = []

    async def connect(bot: LaunchedBot) -> ScriptedAgent:
        peer = ScriptedAgent(client, bot.bot_id, bot.token)
        await peer.connect()
        peers.append(peer)
        return peer

    yield connect
    for peer in peers:
        await peer.close()
