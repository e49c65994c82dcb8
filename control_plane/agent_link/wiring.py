"""Plugging the agent link into the app: routes, shared state, hooks and the reaper.

``create_app`` calls :func:`setup_agent_link` once, after the database and launcher contexts
are appended. It adds the link's internal routes and local storage's
(:mod:`control_plane.storage.routes`, handed the link's agent-token check). Its cleanup context
builds the hub, opens the artifact storage (:func:`~control_plane.storage.factory.open_storage`)
and the stream-token
signer over the key ring in the database (:mod:`control_plane.agent_hub.signing_keys`; key
files are read off the event loop), publishes the agent commander, the artifact lister and
purge hook of the meeting record, and owns the reaper's background loop, the ring's re-read
every :data:`RING_REFRESH_S` (a key rotated on another replica signs here too), the link
batcher's writers (:mod:`control_plane.agent_link.batch`) and, for a launcher that lists its
machines, the reconciler's loop (:mod:`control_plane.agent_link.reconciler`).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

from aiohttp import web
from sqlalchemy import select

from agent.contracts.link import Command
from control_plane.agent_hub.hub import AgentHub, AgentNotConnected
from control_plane.agent_hub.keys import AGENT_HUB, STORAGE, STREAM_SIGNER
from control_plane.agent_hub.metrics import LinkMetrics
from control_plane.agent_hub.relay import CommandRelay, asyncpg_dsn
from control_plane.agent_hub.signing_keys import LEGACY_KEY_FILE, SigningKeyStore
from control_plane.agent_hub.stream_tokens import StreamTokenSigner
from control_plane.agent_link import endpoint, machine
from control_plane.agent_link.batch import FRAME_BATCHER, FrameBatcher
from control_plane.agent_link.meeting_parts import artifact_lister, purge_hook
from control_plane.agent_link.reaper import Reaper
from control_plane.agent_link.reconciler import Reconciler
from control_plane.background import BackgroundLoop
from control_plane.db.engine import DB, Database
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.hooks import AGENT_COMMANDS, PURGE_HOOKS, STATUS_HOOKS, AgentCommander
from control_plane.launchers.base import LAUNCHER, Listing
from control_plane.meetings.artifacts import ARTIFACT_LISTER
from control_plane.metrics import METRICS
from control_plane.settings import SETTINGS
from control_plane.storage.factory import open_storage
from control_plane.storage.routes import local_storage_routes
from control_plane.token_cipher import TokenCipher

RING_REFRESH_S = 60.0
"""How often each replica reads the key ring again (a rotation elsewhere signs here after it)."""


def agent_commander(hub: AgentHub) -> AgentCommander:
    """Send a command to a bot's agent; return whether it went out.

    The agent is linked here or, through the relay, to another replica.
    """

    async def send(bot_id: uuid.UUID, command: Command) -> bool:
        try:
            await hub.deliver(bot_id, command)
        except AgentNotConnected:
            return False
        return True

    return send


def heard_lately(db: Database, within_seconds: float) -> Callable[[uuid.UUID], Awaitable[bool]]:
    """Whether a bot's agent sent anything (to any replica) in the last ``within_seconds``."""

    async def check(bot_id: uuid.UUID) -> bool:
        since = datetime.now(UTC) - timedelta(seconds=within_seconds)
        async with db.sessions() as session:
            found = await session.scalar(
                select(AgentLink.meeting_id)
                .join(Meeting, Meeting.id == AgentLink.meeting_id)
                .where(Meeting.bot_id == bot_id, AgentLink.last_seen_at >= since)
            )
        return found is not None

    return check


async def agent_link_ctx(app: web.Application) -> AsyncIterator[None]:
    """Build the agent link's state, register its hooks, and run the reaper while the app runs."""
    settings = app[SETTINGS]
    metrics = LinkMetrics(app[METRICS].registry)
    hub = AgentHub(metrics, settings.stream_window_bytes)
    app[AGENT_HUB] = hub
    storage = await open_storage(app, settings)
    app[STORAGE] = storage
    cipher = await asyncio.to_thread(TokenCipher.from_settings, settings)
    keys = SigningKeyStore(
        app[DB],
        cipher,
        retention_seconds=settings.signing_key_retention_seconds,
        legacy_file=settings.data_dir / LEGACY_KEY_FILE,
    )
    signer = await StreamTokenSigner.open(keys)
    app[STREAM_SIGNER] = signer
    ring_refresh = BackgroundLoop(
        "signing-keys", signer.refresh, interval=RING_REFRESH_S, start_delay=RING_REFRESH_S
    )
    batcher = FrameBatcher(
        app[DB],
        max_frames=settings.link_batch_max_frames,
        writers=settings.link_batch_writers,
        max_wait=settings.link_batch_max_wait_seconds,
        observe=metrics.observe_stage,
    )
    app[FRAME_BATCHER] = batcher
    app[AGENT_COMMANDS] = agent_commander(hub)
    app[ARTIFACT_LISTER] = artifact_lister(storage, settings.presigned_url_ttl_seconds)
    app[PURGE_HOOKS].append(purge_hook(storage))
    reaper = Reaper(
        app[DB],
        app[LAUNCHER],
        hub,
        app[STATUS_HOOKS],
        heartbeat_timeout=settings.heartbeat_timeout_seconds,
        connect_timeout=settings.agent_connect_timeout_seconds,
        teardown_grace=settings.agent_teardown_grace_seconds,
    )
    launcher = app[LAUNCHER]
    reconciler = (
        Reconciler(
            app[DB],
            launcher,
            hub,
            app[STATUS_HOOKS],
            interval=settings.reconcile_interval_seconds,
            grace=settings.reconcile_grace_seconds,
        )
        if isinstance(launcher, Listing)
        else None
    )
    dsn = asyncpg_dsn(settings.effective_database_url)
    relay = CommandRelay(dsn, hub.on_relay, hub.streams.on_relay_now) if dsn is not None else None
    if relay is not None:
        await relay.start()
        hub.relay = relay
        hub.streams.attach_relay(relay)
        hub.heard_lately = heard_lately(app[DB], settings.heartbeat_timeout_seconds)
    batcher.start()
    try:
        async with contextlib.AsyncExitStack() as loops:
            await loops.enter_async_context(reaper.loop.running())
            await loops.enter_async_context(ring_refresh.running())
            if reconciler is not None:  # its machines are listed and compared with live bots
                await loops.enter_async_context(reconciler.loop.running())
            yield
    finally:
        await hub.aclose()
        await batcher.aclose()
        if relay is not None:
            hub.relay = None
            await hub.streams.detach_relay()
            await relay.aclose()


async def _close_links(app: web.Application) -> None:
    # Open WebSockets would hold a graceful shutdown for its whole timeout; agents reconnect
    # (to this process once it is back, or to another replica) and resend from their outbox.
    await app[AGENT_HUB].aclose()


def setup_agent_link(app: web.Application) -> None:
    """Add the internal routes, the agent link's cleanup context and its shutdown step."""
    if PURGE_HOOKS not in app:
        app[PURGE_HOOKS] = []
    app.router.add_routes(endpoint.routes)
    app.router.add_routes(machine.routes)
    # Local storage's URLs (its upload route needs the bot's agent token, checked here).
    app.router.add_routes(local_storage_routes(endpoint.agent_of_request))
    app.cleanup_ctx.append(agent_link_ctx)
    app.on_shutdown.append(_close_links)
