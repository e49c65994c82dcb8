"""Every ``web.AppKey`` of the control plane (shared application state, typed).

Hooks other parts fill in at start-up (append in a ``cleanup_ctx`` or in ``create_app``):

* :data:`STATUS_HOOKS` — called inside the status-change transaction (see
  ``control_plane.bots.status``); the webhook outbox writes ``bot.status_changed`` here.
* :data:`LAUNCH_HOOKS` — called with the ``BotConfig`` before it goes to the launcher; the agent
  link fills in ``agent_token`` and ``stream_public_key`` here.
* :data:`ZOOM_TOKENS` — usable Zoom connections and OBF minting (part of the Zoom integration).
* :data:`AGENT_COMMANDS` — sends a command to a connected agent (stop, …); absent until the
  agent link registers it.
* :data:`ARTIFACT_LISTER` — recordings and screenshots of a meeting with presigned URLs.
* :data:`PURGE_HOOKS` — in-transaction purge of other parts' meeting data (chat, artifacts).
* :data:`AGENT_HUB`, :data:`STORAGE`, :data:`STREAM_SIGNER` — the agent link's open links and
  pending commands, artifact storage, and the stream-token signer (``control_plane.agent_link``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from control_plane.agent_link.hub import AgentHub
from control_plane.agent_link.stream_tokens import StreamTokenSigner
from control_plane.api.routes import RouteSpec
from control_plane.auth.ratelimit import RateLimiter
from control_plane.db.engine import Database
from control_plane.hooks import (
    AgentCommander,
    ArtifactLister,
    LaunchHook,
    PurgeHook,
    StatusHook,
    ZoomTokenSource,
)
from control_plane.launchers.base import BotLauncher
from control_plane.metrics import Metrics
from control_plane.settings import Settings

if TYPE_CHECKING:  # the scheduler module reads these keys, so import its type lazily
    from control_plane.bots.scheduler import Scheduler
from control_plane.storage.base import ArtifactStorage

SETTINGS = web.AppKey("settings", Settings)
DB = web.AppKey("db", Database)
LAUNCHER = web.AppKey("launcher", BotLauncher)
METRICS = web.AppKey("metrics", Metrics)
RATE_LIMITER = web.AppKey("rate_limiter", RateLimiter)
ROUTE_SPECS: web.AppKey[dict[tuple[str, str], RouteSpec]] = web.AppKey("route_specs")
OPENAPI: web.AppKey[dict[str, Any]] = web.AppKey("openapi")
STATUS_HOOKS: web.AppKey[list[StatusHook]] = web.AppKey("status_hooks")
LAUNCH_HOOKS: web.AppKey[list[LaunchHook]] = web.AppKey("launch_hooks")
ZOOM_TOKENS = web.AppKey("zoom_tokens", ZoomTokenSource)
AGENT_COMMANDS: web.AppKey[AgentCommander] = web.AppKey("agent_commands")
ARTIFACT_LISTER: web.AppKey[ArtifactLister] = web.AppKey("artifact_lister")
PURGE_HOOKS: web.AppKey[list[PurgeHook]] = web.AppKey("purge_hooks")
SCHEDULER: web.AppKey[Scheduler] = web.AppKey("scheduler")
AGENT_HUB = web.AppKey("agent_hub", AgentHub)
STORAGE = web.AppKey("storage", ArtifactStorage)
STREAM_SIGNER = web.AppKey("stream_signer", StreamTokenSigner)
