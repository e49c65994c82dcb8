"""Agent tokens, minted in one place (:func:`mint_agent_token`) where they are delivered.

A bot's agent token is derived from its id with a key of the shared ring
(:meth:`StreamTokenSigner.agent_token`) and its digest stored in the bot's link row
(``agent_links``). It is minted where the agent receives it:

- a local agent (the ``local`` and ``memory`` launchers) in its ``BotConfig``, which it reads
  from its ``bot.json``: the launch batch's :func:`agent_token_step`;
- a bot machine (a :class:`~control_plane.launchers.base.Bootstrapping` launcher: ``qemu``,
  ``ec2``, ``kubernetes``) in the answer of its bootstrap exchange, on whichever replica it
  lands: :func:`linked_agent_token`. Its launch only adds the link row
  (:func:`machine_link_step`), so the config it is launched with, and the bootstrap store that
  keeps that config, never hold a token.

A relaunch (after a crash between claim and launch, docs/api.md 2.4) updates the bot's existing
link row instead of adding a second, and the token is that of the key that derived the row's
digest when the ring still holds that key: an agent the first launch may have started keeps a
valid token.

The batch's existing link rows are read in one statement before its bots' steps
(:func:`load_links`); a per-bot look-up was two round trips per launched bot (the look-up, and
the flush of the previous bot's row it set off), a quarter of a creation's round trips on
PostgreSQL (bench/api.py mixed run). New rows then go in one insert at the batch's commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

from sqlalchemy import select
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


def mint_agent_token(link: AgentLink, bot_id: UUID, signer: StreamTokenSigner) -> str:
    """Mint ``bot_id``'s agent token (``mat_`` and 43 characters); store its digest in ``link``.

    The token of the key that derived ``link.token_digest`` when this replica's ring holds it,
    else the signing key's (and ``link`` takes its digest).
    """
    token = signer.agent_token(bot_id, digest=link.token_digest)
    link.token_digest = agent_token_digest(token)
    return token


async def load_links(session: AsyncSession, meetings: Sequence[Meeting]) -> None:
    """Read the existing link rows of ``meetings`` (relaunched bots have one) in one statement."""
    ids = [meeting.id for meeting in meetings]
    rows = (await session.scalars(select(AgentLink).where(AgentLink.meeting_id.in_(ids)))).all()
    loaded: dict[int, AgentLink | None] = dict.fromkeys(ids)
    loaded.update((row.meeting_id, row) for row in rows)
    session.info[_LOADED] = loaded


async def _launched_link(session: AsyncSession, meeting: Meeting) -> AgentLink:
    """``meeting``'s link row, added when it has none, launched now (the connect timeout starts).

    The row comes from the batch's :func:`load_links`, or is looked up alone when the batch was
    not prepared for this bot. A new row is flushed by the batch's commit.
    """
    loaded: dict[int, AgentLink | None] = session.info.get(_LOADED, {})
    if meeting.id in loaded:
        link = loaded[meeting.id]
    else:
        link = await session.get(AgentLink, meeting.id)
    if link is None:
        link = AgentLink(meeting_id=meeting.id)
        session.add(link)
    link.launched_at = datetime.now(UTC)
    return link


def agent_token_step(signer: StreamTokenSigner) -> TransactionStep:
    """The step of a local agent: its token minted into its config, its link row launched.

    It works inside the batch's transaction only (SQLite would deadlock on a second transaction
    while the batch's holds the write lock): the batch's link rows are read once
    (:func:`load_links`), the inserts and updates flushed by the batch's commit.
    """

    async def step(session: AsyncSession, meeting: Meeting, config: BotConfig) -> BotConfig:
        link = await _launched_link(session, meeting)
        token = mint_agent_token(link, meeting.bot_id, signer)
        return config.model_copy(update={"agent_token": token})

    return TransactionStep("agent_token", step, prepare=load_links)


def machine_link_step() -> TransactionStep:
    """The step of a bot machine: its link row launched; no token (its exchange mints it).

    In the batch's transaction, like :func:`agent_token_step`; the config is left as it is.
    """

    async def step(session: AsyncSession, meeting: Meeting, config: BotConfig) -> BotConfig:
        await _launched_link(session, meeting)
        return config

    return TransactionStep("agent_link", step, prepare=load_links)


async def linked_agent_token(db: Database, signer: StreamTokenSigner, bot_id: UUID) -> str:
    """Mint the agent token a bot's machine gets at its bootstrap exchange (on any replica).

    A bot whose link row holds a digest already (an earlier machine of the bot exchanged, or
    its launch was a local agent's) gets that token again when a key of the ring derives it:
    when none this replica has read does, the ring is read again first (another replica
    rotated it). Else (no digest, or its key was dropped from the ring) the signing key's token,
    whose digest the row takes.

    Raises:
        LookupError: The bot has no link row (it was never launched).
        SigningKeyError: The ring cannot be read with this replica's cipher.
    """
    of_bot = select(Meeting.id).where(Meeting.bot_id == bot_id).scalar_subquery()
    async with db.reads() as session:
        digest = await session.scalar(
            select(AgentLink.token_digest).where(AgentLink.meeting_id == of_bot)
        )
    if digest is not None and not agent_token_matches(
        signer.agent_token(bot_id, digest=digest), digest
    ):
        await signer.refresh()
    async with db.sessions.begin() as session:
        link = await session.scalar(select(AgentLink).where(AgentLink.meeting_id == of_bot))
        if link is None:
            raise LookupError(f"bot {bot_id} has no agent link")
        return mint_agent_token(link, bot_id, signer)
