"""The ``agent_token`` config step: each launched bot gets its agent token and the stream key.

The token's digest is stored (``agent_links``) in the launch batch's transaction. The token is
derived from the bot id with a key of the shared ring (:meth:`StreamTokenSigner.agent_token`),
and a relaunch (after a crash between claim and launch, docs/api.md 2.4) updates the bot's
existing link row instead of adding a second, keeping the token of the key that derived it when
the ring still holds that key: the agent the first launch may have started keeps a valid token.
A bot machine gets the same token at its bootstrap exchange (:func:`linked_agent_token`), on
whichever replica it lands.

The batch's existing link rows are read in one statement before its bots' steps
(:func:`load_links`); a per-bot look-up was two round trips per launched bot (the look-up, and
the flush of the previous bot's row it set off), a quarter of a creation's round trips on
PostgreSQL (bench/api.py mixed run). New rows then go in one insert at the batch's commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotConfig
from control_plane.agent_hub.agent_tokens import agent_token_digest, agent_token_matches
from control_plane.agent_hub.stream_tokens import StreamTokenSigner
from control_plane.bots.config_builder import TransactionStep
from control_plane.db.engine import Database
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting

_LOADED = "agent_token.links"
"""``session.info`` key: the link rows of the batch's bots, by meeting id (:func:`load_links`)."""


async def load_links(session: AsyncSession, meetings: Sequence[Meeting]) -> None:
    """Read the existing link rows of ``meetings`` (relaunched bots have one) in one statement."""
    ids = [meeting.id for meeting in meetings]
    rows = (await session.scalars(select(AgentLink).where(AgentLink.meeting_id.in_(ids)))).all()
    loaded: dict[int, AgentLink | None] = dict.fromkeys(ids)
    loaded.update((row.meeting_id, row) for row in rows)
    session.info[_LOADED] = loaded


def agent_token_step(signer: StreamTokenSigner) -> TransactionStep:
    """A transaction step minting the agent token and adding its ``AgentLink`` row.

    It works inside the batch's transaction only (SQLite would deadlock on a second transaction
    while the batch's holds the write lock): the batch's link rows are read once
    (:func:`load_links`), the inserts and updates flushed by the batch's commit.
    """

    async def step(session: AsyncSession, meeting: Meeting, config: BotConfig) -> BotConfig:
        now = datetime.now(UTC)
        loaded: dict[int, AgentLink | None] = session.info.get(_LOADED, {})
        if meeting.id in loaded:
            link = loaded[meeting.id]
        else:  # not prepared for this bot: look it up alone
            link = await session.get(AgentLink, meeting.id)
        token = signer.agent_token(
            meeting.bot_id, digest=link.token_digest if link is not None else None
        )
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

    return TransactionStep("agent_token", step, prepare=load_links)


async def linked_agent_token(db: Database, signer: StreamTokenSigner, bot_id: UUID) -> str:
    """The agent token a bot's machine gets at its bootstrap exchange (on any replica).

    The token whose digest the bot's link row holds: derived at launch, by whichever replica,
    with whichever key of the ring. When no key this replica has read derives it, the ring is
    read again (another replica rotated it). When still none does (the key was dropped from
    the ring), the signing key's token, and the link row takes its digest: the machine holds no
    token before this exchange.

    Raises:
        SigningKeyError: The ring cannot be read with this replica's cipher.
    """
    async with db.reads() as session:
        digest = await session.scalar(
            select(AgentLink.token_digest)
            .join(Meeting, Meeting.id == AgentLink.meeting_id)
            .where(Meeting.bot_id == bot_id)
        )
    if digest is None:
        return signer.agent_token(bot_id)
    token = signer.agent_token(bot_id, digest=digest)
    if agent_token_matches(token, digest):
        return token
    await signer.refresh()
    token = signer.agent_token(bot_id, digest=digest)
    if not agent_token_matches(token, digest):
        async with db.sessions.begin() as session:
            await session.execute(
                update(AgentLink)
                .where(AgentLink.token_digest == digest)
                .values(token_digest=agent_token_digest(token))
            )
    return token
