"""The ``agent_token`` config step: a fresh agent token for each launched bot.

Each launched bot gets a fresh agent token and the stream public key; the token's digest is stored
(``agent_links``) in the launch batch's transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotConfig
from control_plane.agent_hub.stream_tokens import StreamTokenSigner
from control_plane.agent_link.agent_tokens import agent_token_digest, mint_agent_token
from control_plane.bots.config_builder import TransactionRun
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting


def agent_token_step(signer: StreamTokenSigner) -> TransactionRun:
    """A transaction step minting the agent token and adding its ``AgentLink`` row.

    No I/O happens here: the row is flushed by the batch's commit (SQLite would deadlock on a
    second transaction while the batch's holds the write lock). One meeting is launched once
    per batch; a second launch of it in one transaction is not supported.
    """

    async def step(session: AsyncSession, meeting: Meeting, config: BotConfig) -> BotConfig:
        token = mint_agent_token()
        session.add(
            AgentLink(
                meeting_id=meeting.id,
                token_digest=agent_token_digest(token),
                launched_at=datetime.now(UTC),
            )
        )
        return config.model_copy(
            update={"agent_token": token, "stream_public_key": signer.public_key_pem}
        )

    return step
