"""The agent link's application keys: open links, artifact storage, stream-token signer."""

from __future__ import annotations

from aiohttp import web

from control_plane.agent_hub.hub import AgentHub
from control_plane.agent_hub.stream_tokens import StreamTokenSigner
from control_plane.storage.base import ArtifactStorage

AGENT_HUB = web.AppKey("agent_hub", AgentHub)
"""Open agent links and pending commands of this process."""
STORAGE = web.AppKey("storage", ArtifactStorage)
"""Artifact storage (recordings, screenshots)."""
STREAM_SIGNER = web.AppKey("stream_signer", StreamTokenSigner)
"""Signs the stream tokens of ``POST /api/v1/bots/{bot_id}/subscribe``."""
