"""Wire constants shared by the agent and the control plane: paths, headers, token claims.

Both sides import these names instead of spelling the strings; the frames themselves are in
:mod:`agent.contracts.link`.
"""

from __future__ import annotations

AGENT_LINK_PATH = "/internal/v1/agents/{bot_id}"
"""The agent link WebSocket on the control plane (``GET``, upgraded)."""

AGENT_UPLOADS_PATH = "/internal/v1/agents/{bot_id}/uploads"
"""Where an agent asks the control plane for an upload slot (``POST``, body ``UploadRequest``)."""

AGENT_ARTIFACTS_PATH = "/internal/v1/agents/{bot_id}/artifacts"
"""Where a bot's machine reports an artifact uploaded after its agent exited (``POST``, body
``ArtifactReport``)."""

AGENT_BOOTSTRAP_PATH = "/internal/v1/agents/{bot_id}/bootstrap"
"""Where a bot's machine trades its one-time bootstrap token for its ``BotConfig`` (``POST``,
``Authorization: Bearer <bootstrap token>``, no body)."""

ARTIFACT_UPLOAD_PREFIX = "/internal/v1/artifacts/"
"""Local storage's signed upload URLs: ``PUT {prefix}{key}?expires=…&signature=…``."""

AUTHORIZATION_HEADER = "Authorization"
"""The header that carries agent and stream tokens."""

BEARER_SCHEME = "Bearer"
"""The scheme of :data:`AUTHORIZATION_HEADER`: ``Bearer <token>``."""

STREAM_AUDIENCE = "bot-stream"
"""The ``aud`` claim of a stream token."""

STREAM_ALGORITHM = "EdDSA"
"""The stream token's JWT algorithm (Ed25519 keys)."""

STREAM_REQUIRED_CLAIMS = ("sub", "aud", "exp")
"""Claims a stream token must carry (``sub`` is the bot id)."""


def agent_link_path(bot_id: object) -> str:
    """:data:`AGENT_LINK_PATH` for ``bot_id`` (a UUID or its string)."""
    return AGENT_LINK_PATH.format(bot_id=bot_id)


def agent_uploads_path(bot_id: object) -> str:
    """:data:`AGENT_UPLOADS_PATH` for ``bot_id`` (a UUID or its string)."""
    return AGENT_UPLOADS_PATH.format(bot_id=bot_id)


def agent_artifacts_path(bot_id: object) -> str:
    """:data:`AGENT_ARTIFACTS_PATH` for ``bot_id`` (a UUID or its string)."""
    return AGENT_ARTIFACTS_PATH.format(bot_id=bot_id)


def agent_bootstrap_path(bot_id: object) -> str:
    """:data:`AGENT_BOOTSTRAP_PATH` for ``bot_id`` (a UUID or its string)."""
    return AGENT_BOOTSTRAP_PATH.format(bot_id=bot_id)


def bearer(token: str) -> dict[str, str]:
    """The header mapping that presents ``token``: ``{"Authorization": "Bearer <token>"}``."""
    return {AUTHORIZATION_HEADER: f"{BEARER_SCHEME} {token}"}


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization`` header value (``Bearer <token>``, scheme in any case).

    None when the value is absent or names another scheme.
    """
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != BEARER_SCHEME.lower() or not token.strip():
        return None
    return token.strip()
