"""Two control-plane replicas on one PostgreSQL database: a live command asked of the replica
without the agent's link reaches the agent through the other replica, and its result comes
back (LISTEN/NOTIFY relay); with no replica holding the link the answer is 503."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpClient

from agent.contracts.link import CommandErrorCode, HandCommand, SpeakCommand
from agent.contracts.status import BotStatus
from control_plane.app import create_app
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from control_plane.token_cipher import KEY_FILE_NAME
from tests.plugins.agent_link import Client, ConnectAgent, LaunchBot
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api


@pytest.fixture
async def other_replica(
    settings: Settings, client: Client, aiohttp_client: AiohttpClient, tmp_path: Path
) -> Client:
    """A second replica with a data folder of its own: only the database and the deployment's
    token encryption key (here the first replica's, from its key file) are shared."""
    if not settings.effective_database_url.startswith("postgresql"):
        pytest.skip("SQLite deployments are one process: there is no second replica")
    del client  # started first: it owns the database the second replica joins
    own = settings.model_copy(
        update={
            "data_dir": tmp_path / "replica-b",
            "token_encryption_key": (settings.data_dir / KEY_FILE_NAME).read_text().strip(),
        }
    )
    replica: web.Application = create_app(own, launcher=MemoryLauncher())
    return await aiohttp_client(replica)


async def test_a_command_reaches_an_agent_linked_to_another_replica(
    other_replica: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    connect_agent: ConnectAgent,
) -> None:
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)  # linked to the first replica
    await agent.register()

    call = asyncio.ensure_future(
        other_replica.post(f"/api/v1/bots/{bot.bot_id}/hand", headers=owner.headers)
    )
    command = await agent.next_command()
    assert command.command == HandCommand(raised=True)
    await agent.answer(command, ok=False, error=CommandErrorCode.CAPABILITY_NOT_SUPPORTED)
    response = await call
    assert response.status == 422
    assert (await response.json())["code"] == "capability_not_supported"

    call = asyncio.ensure_future(
        other_replica.post(
            f"/api/v1/bots/{bot.bot_id}/chat", json={"text": "hi"}, headers=owner.headers
        )
    )
    await agent.answer(await agent.next_command())
    assert (await call).status == 202

    subscribed = await other_replica.post(
        f"/api/v1/bots/{bot.bot_id}/subscribe", headers=owner.headers
    )
    assert subscribed.status == 200

    await agent.close()
    await asyncio.sleep(0.05)
    response = await other_replica.post(f"/api/v1/bots/{bot.bot_id}/hand", headers=owner.headers)
    assert response.status == 503


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_20_kb_speech_reaches_an_agent_linked_to_another_replica(
    other_replica: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    connect_agent: ConnectAgent,
) -> None:
    """Over the ``NOTIFY`` payload limit (issue 35, item 6): stored, notified by key, relayed."""
    bot = await launch_bot(BotStatus.ACTIVE)
    agent = await connect_agent(bot)  # linked to the first replica
    await agent.register()
    text = ("Grüße。你好世界。Привет，мир。مرحبا。" * 200)[:4096]
    assert len(json.dumps({"text": text}).encode()) > 20_000

    call = asyncio.ensure_future(
        other_replica.post(
            f"/api/v1/bots/{bot.bot_id}/speak", json={"text": text}, headers=owner.headers
        )
    )
    command = await agent.next_command()
    assert isinstance(command.command, SpeakCommand)
    assert command.command.text == text
    await agent.answer(command, result={"speech_id": command.command.speech_id, "ahead": 0})
    response = await call
    assert response.status == 202, await response.text()
    assert (await response.json())["speech_id"] == command.command.speech_id
