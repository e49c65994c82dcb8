"""Replicas with separate data folders share their signing keys through the database (issue 35,
item 1): a stream token minted by one opens the stream on the other, an agent launched by one
links to the other and gets the same agent token from either's bootstrap exchange, a rotation
on one signs on both while the old key's tokens stay valid, and a replica given another token
encryption key refuses to start instead of signing with keys of its own.

Each replica here has its own ``data_dir`` (the other replica tests share one, which hid the
key file every replica used to need).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from cryptography.fernet import Fernet
from pytest_aiohttp import AiohttpClient

from agent.contracts.status import BotStatus
from control_plane.agent_hub.keys import STREAM_SIGNER
from control_plane.agent_hub.signing_keys import LEGACY_KEY_FILE, SigningKeyError, SigningKeyStore
from control_plane.agent_hub.stream_tokens import StreamTokenSigner
from control_plane.agent_link.config_step import linked_agent_token
from control_plane.app import create_app
from control_plane.db.engine import DB
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from control_plane.token_cipher import TokenCipher
from tests.agent_link.peer import ScriptedAgent
from tests.plugins.agent_link import Client, LaunchBot, LaunchedBot
from tests.plugins.api_app import KEY_PREFIX, Caller

pytestmark = [
    pytest.mark.api,
    pytest.mark.parametrize("database_url", ["postgresql"], indirect=True),
]

CIPHER_KEY = Fernet.generate_key().decode("ascii")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Replica A's settings: its own data folder, the deployment's token encryption key."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "replica-a",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:1",
        token_encryption_key=CIPHER_KEY,
        subscribe_wait_seconds=5.0,
        agent_command_timeout_seconds=3.0,
        agent_connect_timeout_seconds=60.0,
    )


@pytest.fixture
async def replica_b(
    settings: Settings, client: Client, aiohttp_client: AiohttpClient, tmp_path: Path
) -> Client:
    del client  # started first: its key is the ring's first
    other = settings.model_copy(update={"data_dir": tmp_path / "replica-b"})
    app: web.Application = create_app(other, launcher=MemoryLauncher())
    return await aiohttp_client(app)


@pytest.fixture
async def agents() -> AsyncIterator[list[ScriptedAgent]]:
    opened: list[ScriptedAgent] = []
    yield opened
    for agent in opened:
        await agent.close()


async def _link(replica: Client, bot: LaunchedBot, agents: list[ScriptedAgent]) -> None:
    """Link the bot's agent to ``replica`` with the token its launch derived (refused: raises)."""
    agent = ScriptedAgent(replica, bot.bot_id, bot.token)
    await agent.connect()
    agents.append(agent)
    await agent.register()


async def _stream_opens(replica: Client, owner: Caller, minted_by: Client, bot_id: object) -> None:
    """Subscribe on ``minted_by`` and open the stream with its token on ``replica``."""
    subscribed = await minted_by.post(f"/api/v1/bots/{bot_id}/subscribe", headers=owner.headers)
    assert subscribed.status == 200, await subscribed.text()
    body = await subscribed.json()
    response = await replica.get(
        urlsplit(body["url"]).path, headers={"Authorization": f"Bearer {body['token']}"}
    )
    assert response.status == 200, await response.text()
    response.close()


async def test_replicas_with_separate_data_folders_accept_each_others_tokens(
    client: Client,
    replica_b: Client,
    owner: Caller,
    launch_bot: LaunchBot,
    agents: list[ScriptedAgent],
    tmp_path: Path,
) -> None:
    a_signer, b_signer = client.app[STREAM_SIGNER], replica_b.app[STREAM_SIGNER]
    assert a_signer.current.kid == b_signer.current.kid
    for folder in ("replica-a", "replica-b"):  # no key file: the ring is in the database
        assert not (tmp_path / folder / LEGACY_KEY_FILE).exists()

    bot = await launch_bot(BotStatus.ACTIVE)  # its agent token derived by replica A
    await _link(replica_b, bot, agents)  # ... links to replica B
    assert await linked_agent_token(replica_b.app[DB], b_signer, bot.bot_id) == bot.token
    await _stream_opens(replica_b, owner, client, bot.bot_id)  # A's stream token opens on B
    old_token = a_signer.mint(bot.bot_id, 900).token

    # Rotation on B: B signs with the new key at once, A reads the ring on the unknown kid.
    new_key = await b_signer.rotate()
    assert b_signer.current == new_key and a_signer.current.kid != new_key.kid
    await _stream_opens(client, owner, replica_b, bot.bot_id)
    assert a_signer.current.kid == new_key.kid  # A read the new ring and signs with it too
    path = f"/api/v1/bots/{bot.bot_id}/stream"
    for replica in (client, replica_b):  # a token of the old key opens until it expires
        response = await replica.get(path, headers={"Authorization": f"Bearer {old_token}"})
        assert response.status == 200, await response.text()
        response.close()

    # An agent running since before the rotation keeps its token; a new bot gets the new key's.
    assert await linked_agent_token(client.app[DB], a_signer, bot.bot_id) == bot.token
    fresh = await launch_bot(BotStatus.ACTIVE)
    assert fresh.token == b_signer.agent_token(fresh.bot_id)
    await _link(replica_b, fresh, agents)


async def test_a_replica_with_another_encryption_key_refuses_to_start(client: Client) -> None:
    stranger = SigningKeyStore(
        client.app[DB],
        TokenCipher(Fernet.generate_key()),
        retention_seconds=3600,
        legacy_file=None,
    )
    with pytest.raises(SigningKeyError, match="MEETBOT_TOKEN_ENCRYPTION_KEY"):
        await StreamTokenSigner.open(stranger)
