"""Bootstrap tokens: the one-time secret a bot machine's user-data carries instead of its config.

A launcher that boots a machine per bot calls :meth:`BootstrapTokens.issue` with the bot's
``BotConfig``; it gets a fresh token (``mbt_`` and 43 URL-safe characters) to put into the
machine's user-data beside the control-plane URL and the bot id
(:class:`agent.contracts.bootstrap.BootstrapGrant`). The control plane stores only the token's
SHA-256 digest, the config, and an expiry; :meth:`BootstrapTokens.redeem` trades the token for
the config once, in one conditional update (two machines racing with one token: one wins). A
machine's config holds no agent token, and one is refused here: the exchange mints it
(:func:`control_plane.agent_link.config_step.linked_agent_token`). A zoom bot's
``zoom_obf_token`` is stored sealed by the token cipher and opened by :meth:`redeem`: the
database never holds it in plain text (docs/api.md 2.3).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Literal
from uuid import UUID

from aiohttp import web
from sqlalchemy import select, update

from agent.contracts.bootstrap import BOOTSTRAP_TOKEN_PREFIX
from agent.contracts.bot_config import BotConfig
from control_plane.agent_hub.agent_tokens import agent_token_digest
from control_plane.db.engine import Database
from control_plane.db.models.agent_link import BootstrapToken
from control_plane.db.models.bot import Meeting
from control_plane.token_cipher import TokenCipher

RefusalReason = Literal["unknown", "used", "expired"]


def mint_bootstrap_token() -> str:
    """Return a fresh bootstrap token: ``mbt_`` and 43 URL-safe characters (256 bits)."""
    return BOOTSTRAP_TOKEN_PREFIX + secrets.token_urlsafe(32)


class BootstrapRefused(Exception):
    """The token buys nothing: ``unknown`` (or another bot's), ``used`` or ``expired``."""

    def __init__(self, reason: RefusalReason) -> None:
        super().__init__(reason)
        self.reason: RefusalReason = reason


class BootstrapTokens:
    """Issues and redeems the bootstrap tokens of bot machines.

    Args:
        db: The control plane's database.
        ttl_seconds: How long an issued token can be redeemed (a boot under emulation takes
            minutes; ``MEETBOT_BOOTSTRAP_TOKEN_TTL_SECONDS``).
        cipher: Seals a config's ``zoom_obf_token`` while it waits; None: the token is dropped
            from the stored config instead.
    """

    def __init__(self, db: Database, ttl_seconds: float, cipher: TokenCipher | None = None) -> None:
        self._db = db
        self._ttl = timedelta(seconds=ttl_seconds)
        self._cipher = cipher

    async def issue(self, config: BotConfig, *, now: datetime | None = None) -> str:
        """Store a new token for ``config``'s bot and return it (a relaunch replaces the old).

        ``config`` is stored without ``agent_settings`` (the exchange adds them) and with its
        ``zoom_obf_token`` sealed; give it as the machine must see it (its ``control_plane_url``
        reachable from the machine).

        Raises:
            ValueError: ``config`` holds an agent token (a machine's is minted at the exchange:
                a token is never stored).
            LookupError: The bot does not exist.
        """
        if config.agent_token is not None:
            raise ValueError("a machine's config holds no agent token: its exchange mints it")
        token = mint_bootstrap_token()
        at = now or datetime.now(UTC)
        obf = config.zoom_obf_token
        sealed = self._cipher.encrypt(obf) if obf and self._cipher is not None else None
        stored = config.model_copy(
            update={"agent_settings": {}, "zoom_obf_token": sealed}
        ).model_dump_json()
        async with self._db.sessions.begin() as session:
            meeting_id = await session.scalar(
                select(Meeting.id).where(Meeting.bot_id == config.bot_id)
            )
            if meeting_id is None:
                raise LookupError(f"no bot {config.bot_id}")
            row = await session.get(BootstrapToken, meeting_id)
            if row is None:
                row = BootstrapToken(meeting_id=meeting_id)
                session.add(row)
            row.token_digest = agent_token_digest(token)
            row.config = stored
            row.expires_at = at + self._ttl
            row.used_at = None
            row.created_at = at
        return token

    async def redeem(self, bot_id: UUID, token: str, *, now: datetime | None = None) -> BotConfig:
        """Trade ``token`` for ``bot_id``'s stored config (without an agent token), once.

        Raises:
            BootstrapRefused: Unknown token or another bot's (``unknown``), already
                redeemed (``used``), or past its expiry (``expired``).
        """
        at = now or datetime.now(UTC)
        digest = agent_token_digest(token)
        meeting_of_bot = select(Meeting.id).where(Meeting.bot_id == bot_id).scalar_subquery()
        async with self._db.sessions.begin() as session:
            stored = await session.scalar(
                update(BootstrapToken)
                .where(
                    BootstrapToken.token_digest == digest,
                    BootstrapToken.meeting_id == meeting_of_bot,
                    BootstrapToken.used_at.is_(None),
                    BootstrapToken.expires_at > at,
                )
                .values(used_at=at)
                .returning(BootstrapToken.config)
                .execution_options(synchronize_session=False)
            )
            if stored is None:
                row = await session.scalar(
                    select(BootstrapToken).where(
                        BootstrapToken.token_digest == digest,
                        BootstrapToken.meeting_id == meeting_of_bot,
                    )
                )
                if row is None:
                    raise BootstrapRefused("unknown")
                raise BootstrapRefused("used" if row.used_at is not None else "expired")
        config = BotConfig.model_validate_json(stored)
        if config.zoom_obf_token is None:
            return config
        opened = self._cipher.decrypt(config.zoom_obf_token) if self._cipher is not None else None
        return config.model_copy(update={"zoom_obf_token": opened})


BOOTSTRAP_TOKENS = web.AppKey("bootstrap_tokens", BootstrapTokens)
"""The application's bootstrap tokens (set with the launcher)."""
