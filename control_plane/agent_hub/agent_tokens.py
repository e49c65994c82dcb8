"""Agent tokens: the bearer secret of one bot's agent link and upload path.

A token is minted where it is delivered (:mod:`control_plane.agent_link.config_step`: into a
local agent's ``BotConfig``, or at a bot machine's bootstrap exchange), derived from the bot id
with a key of the ring (:func:`control_plane.agent_hub.stream_tokens.derive_agent_token`), and
stored only as a SHA-256 digest (the same treatment API keys get, docs/api.md 2.1).
"""

from __future__ import annotations

import hashlib
import hmac

AGENT_TOKEN_PREFIX = "mat_"  # noqa: S105 - a public marker, not a secret


def agent_token_digest(token: str) -> str:
    """Return the hex SHA-256 digest under which a token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def agent_token_matches(token: str, digest: str | None) -> bool:
    """Return whether ``token`` hashes to ``digest`` (constant-time; ``None`` never matches)."""
    if digest is None:
        return False
    return hmac.compare_digest(agent_token_digest(token), digest)
