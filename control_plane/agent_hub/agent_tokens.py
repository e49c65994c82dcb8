"""Agent tokens: the bearer secret of one bot's agent link and upload path.

A token is minted when the bot is launched, travels to the agent inside its ``BotConfig``, and
is stored only as a SHA-256 digest (the same treatment API keys get, docs/api.md 2.1).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

AGENT_TOKEN_PREFIX = "mat_"  # noqa: S105 - a public marker, not a secret


def mint_agent_token() -> str:
    """Return a fresh agent token: ``mat_`` and 43 URL-safe characters (256 bits)."""
    return AGENT_TOKEN_PREFIX + secrets.token_urlsafe(32)


def agent_token_digest(token: str) -> str:
    """Return the hex SHA-256 digest under which a token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def agent_token_matches(token: str, digest: str | None) -> bool:
    """Return whether ``token`` hashes to ``digest`` (constant-time; ``None`` never matches)."""
    if digest is None:
        return False
    return hmac.compare_digest(agent_token_digest(token), digest)
