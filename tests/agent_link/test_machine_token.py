"""A bot machine's agent token is minted where it is delivered: at its bootstrap exchange.

The app's launcher hands every launch a bootstrap grant, as a machine's user-data would carry
it (a ``Bootstrapping`` memory launcher: the seam the qemu, ec2 and kubernetes launchers
implement, without their machines). The config a machine is launched with holds no agent token
and the bot's link row no digest; the exchange mints the token, stores its digest and the link
opens with it; a relaunch's new machine gets the same token; a local agent's config still
carries its token (the other delivery, ``tests/agent_link/test_link.py``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
from sqlalchemy import select

from agent.contracts.bot_config import BotConfig
from agent.contracts.wire import agent_bootstrap_path, bearer
from control_plane.agent_hub.agent_tokens import agent_token_digest
from control_plane.bots.config_builder import CONFIG_BUILDER
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.launchers.base import BootstrapIssuer, LaunchHandle
from control_plane.launchers.memory import MemoryLauncher
from tests.agent_link.peer import ScriptedAgent
from tests.plugins.agent_link import Client, LaunchBot, LaunchedBot

pytestmark = pytest.mark.api


@dataclass
class GrantingLauncher(MemoryLauncher):
    """A memory launcher whose every launch gets a bootstrap token, kept by bot id."""

    issue: BootstrapIssuer | None = None
    grants: dict[uuid.UUID, str] = field(default_factory=dict)

    def use_bootstrap(self, issue: BootstrapIssuer) -> None:
        """Issue tokens with the control plane's issuer (called at the app's start)."""
        self.issue = issue

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Issue the machine's token for ``config``, then record the launch."""
        assert self.issue is not None
        self.grants[config.bot_id] = await self.issue(config)
        return await super().launch(config)


@pytest.fixture
def launcher() -> GrantingLauncher:  # the app's launcher (narrows the API plugin's)
    return GrantingLauncher()


async def _digest(client: Client, bot: LaunchedBot) -> str | None:
    async with client.app[DB].reads() as session:
        return await session.scalar(
            select(AgentLink.token_digest).where(AgentLink.meeting_id == bot.meeting_id)
        )


async def _exchange(client: Client, launcher: GrantingLauncher, bot_id: uuid.UUID) -> str:
    response = await client.post(
        agent_bootstrap_path(bot_id), headers=bearer(launcher.grants[bot_id])
    )
    assert response.status == 200, await response.text()
    token: str = (await response.json())["agent_token"]
    return token


async def test_a_machine_gets_its_agent_token_at_the_exchange_and_the_same_after_a_relaunch(
    client: Client, launch_bot: LaunchBot, launcher: GrantingLauncher
) -> None:
    bot = await launch_bot()
    assert bot.config.agent_token is None  # launched with no token: none exists yet
    assert launcher.launches[-1].agent_token is None
    assert await _digest(client, bot) is None

    token = await _exchange(client, launcher, bot.bot_id)
    assert token.startswith("mat_") and len(token) == 4 + 43
    assert await _digest(client, bot) == agent_token_digest(token)
    agent = ScriptedAgent(client, bot.bot_id, token)
    await agent.connect()  # the link opens with the token the exchange minted
    await agent.register()
    await agent.close()

    # A relaunch (its claim lapsed) boots a new machine: its exchange gives the same token.
    async with client.app[DB].sessions() as session:
        meeting = await session.get(Meeting, bot.meeting_id)
        assert meeting is not None
    relaunched = await client.app[CONFIG_BUILDER].build(meeting)
    assert relaunched.agent_token is None
    await launcher.launch(relaunched)
    assert await _exchange(client, launcher, bot.bot_id) == token
    assert await _digest(client, bot) == agent_token_digest(token)
