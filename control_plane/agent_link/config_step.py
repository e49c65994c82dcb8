"""The ``agent_token`` config step: each launched bot gets its agent token and the stream key.

The token's digest is stored (``agent_links``) in the launch batch's transaction. The token is
derived from the bot id (:meth:`StreamTokenSigner.agent_token`), and a relaunch (after a crash
between claim and launch, docs/api.md 2.4) updates the bot's existing link row instead of adding
a second: the agent the first launch may have started keeps a valid token.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotConfig
from control_plane.agent_hub.agent_tokens import agent_token_digest
from control_plane.agent_hub.stream_tokens import StreamTokenSigner
from control_plane.bots.config_builder import TransactionRun
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting


def agent_token_step(signer: StreamTokenSigner) -> TransactionRun:
    """A transaction step minting the agent token and adding its ``AgentLink`` row.

    It works inside the batch's transaction only (SQLite would deadlock on a second transaction
    while the batch's holds the write lock): one lookup of the bot's link row, the insert or
    update flushed by the batch's commit.
    """

    async def step(session: AsyncSession, meeting: Meeting, config: BotConfig) -> BotConfig:
        token = signer.agent_token(meeting.bot_id)
        now = datetime.now(UTC)
        link = await session.get(AgentLink, meeting.id)
        if link is None:
            session.add(
                AgentLink(
                    meeting_id=meeting.id, token_digest=agent_token_digest(token), launched_at=now
                )
            )
        else:  # relaunched after a lapsed claim: same token, the connect timeout starts again
            link.token_digest = agent_token_digest(token)
            link.launched_at = now
        return config.model_copy(update={"agent_token": token})

    return step
