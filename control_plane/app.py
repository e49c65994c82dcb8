"""The control plane's aiohttp application factory.

``create_app(settings)`` wires everything: the database and launcher (``cleanup_ctx``), the
middlewares (observe → errors → auth → idempotency), every resource's routes and the OpenAPI
document generated from them. A resource module exposes ``routes: ApiRoutes`` and is listed once
in :func:`resources`; services get their dependencies in their constructors here; background
work (scheduler, reaper, deliveries) is a ``cleanup_ctx`` that owns its loop and stops it
gracefully (:mod:`control_plane.background`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from importlib import metadata

from aiohttp import web

from control_plane.action_prompts import routes as action_prompts
from control_plane.agent_hub.bootstrap_tokens import BOOTSTRAP_TOKENS, BootstrapTokens
from control_plane.agent_hub.keys import AGENT_HUB, STORAGE, STREAM_SIGNER
from control_plane.agent_link.config_step import agent_token_step, machine_link_step
from control_plane.agent_link.reaper import reconcile_launcher
from control_plane.agent_link.wiring import setup_agent_link
from control_plane.api.http import MAX_BODY_BYTES
from control_plane.api.list_gate import LIST_GATE, list_gate
from control_plane.api.middlewares import (
    auth_middleware,
    error_middleware,
    idempotency_middleware,
    observe_middleware,
)
from control_plane.api.routes import OPENAPI, ROUTE_SPECS, ApiRoutes, build_openapi, spec_index
from control_plane.api_keys import routes as api_keys
from control_plane.auth.key_cache import KEY_CACHE, KeyCache
from control_plane.auth.ratelimit import ADDRESS_RATE_LIMITER, RATE_LIMITER, RateLimiter
from control_plane.bots import live_routes, schedule_routes, stream
from control_plane.bots import routes as bot_routes
from control_plane.bots.config_builder import (
    CONFIG_BUILDER,
    BotConfigBuilder,
    NetworkStep,
    TransactionStep,
)
from control_plane.bots.live_commands import LIVE_COMMANDS, LiveCommands
from control_plane.bots.meeting_schema import state_meeting_rules
from control_plane.bots.schedule_service import SCHEDULE_SERVICE, ScheduleService
from control_plane.bots.scheduler import SCHEDULER, Scheduler
from control_plane.bots.service import BOT_SERVICE, BotService
from control_plane.bots.transcription import transcription_step
from control_plane.bots.url_guard import URL_GUARD, UrlGuard, UrlRefused
from control_plane.dashboard import routes as dashboard
from control_plane.db.checkpoint import WalCheckpointer
from control_plane.db.engine import DB, create_database
from control_plane.hooks import (
    AGENT_COMMANDS,
    PURGE_HOOKS,
    STATUS_HOOKS,
    ZOOM_TOKENS,
)
from control_plane.intelligence.chat_wiring import CHAT_MODEL, chat_model_ctx
from control_plane.intelligence.detection_wiring import detection_ctx, setup_detection
from control_plane.intelligence.stream_offer import hub_publisher
from control_plane.intelligence.summary_wiring import setup_summaries, summary_ctx
from control_plane.invitations import routes as invitations
from control_plane.launchers import create_launcher
from control_plane.launchers.base import LAUNCHER, Bootstrapping, BotLauncher, Reconciling
from control_plane.meetings import routes as meeting_routes
from control_plane.meetings import summary_routes
from control_plane.meetings.artifacts import ARTIFACT_LISTER, first_recording_url
from control_plane.meta import routes as meta
from control_plane.metrics import METRICS, Metrics
from control_plane.settings import SETTINGS, Settings
from control_plane.token_cipher import TokenCipher
from control_plane.webhooks import routes as webhooks
from control_plane.webhooks.wiring import add_to_openapi, target_policy, webhooks_ctx
from control_plane.workspaces import routes as workspaces
from control_plane.zoom import routes as zoom_connections
from control_plane.zoom.config_step import zoom_token_step
from control_plane.zoom.wiring import zoom_ctx
from meetbot_common.ssrf import TargetRefused, check_target


def resources() -> tuple[ApiRoutes, ...]:
    """Every resource's routes, in registration order (add one line per resource module)."""
    return (
        meta.routes,
        schedule_routes.routes,  # before bot_routes: /bots/schedule is not a bot id
        bot_routes.routes,
        meeting_routes.routes,
        webhooks.routes,
        workspaces.routes,
        invitations.routes,
        api_keys.routes,
        zoom_connections.routes,
        action_prompts.routes,
        live_routes.routes,
        stream.routes,
        summary_routes.routes,
    )


def _version() -> str:
    try:
        return metadata.version("meetbot")
    except metadata.PackageNotFoundError:
        return "0.0.0"


async def _database_ctx(app: web.Application) -> AsyncIterator[None]:
    database = create_database(app[SETTINGS].effective_database_url, background_checkpoints=True)
    app[DB] = database
    if database.checkpoint_path is None:
        yield
    else:
        async with WalCheckpointer(database.checkpoint_path).running():
            yield
    await database.dispose()


def _launcher_ctx(
    launcher: BotLauncher | None,
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        # A launcher passed in belongs to the caller, who closes it; one we build is ours.
        owned = launcher is None
        app[LAUNCHER] = create_launcher(app[SETTINGS]) if launcher is None else launcher
        built = app[LAUNCHER]
        # The cipher seals a zoom bot's OBF token in the waiting config (may create its key file).
        cipher = await asyncio.to_thread(TokenCipher.from_settings, app[SETTINGS])
        tokens = BootstrapTokens(app[DB], app[SETTINGS].bootstrap_token_ttl_seconds, cipher)
        app[BOOTSTRAP_TOKENS] = tokens
        if isinstance(built, Bootstrapping):  # its machines trade a token for their config
            built.use_bootstrap(tokens.issue)
        if isinstance(built, Reconciling):  # its VMs outlive this process
            await reconcile_launcher(built, app[DB])
        yield
        if owned:
            await app[LAUNCHER].aclose()

    return ctx


def bot_config_builder(app: web.Application) -> BotConfigBuilder:
    """THE list of steps that build a launched bot's ``BotConfig``, in order.

    See :mod:`control_plane.bots.config_builder`; needs the launcher, Zoom and agent-link
    contexts started. The agent token is minted where it is delivered: into the config of a
    local agent; for a bot machine (a ``Bootstrapping`` launcher) at its bootstrap exchange, so
    its launch only adds the link row.
    """
    settings = app[SETTINGS]
    link_step = (
        machine_link_step()
        if isinstance(app[LAUNCHER], Bootstrapping)
        else agent_token_step(app[STREAM_SIGNER])
    )
    return BotConfigBuilder(
        database=app[DB],
        control_plane_url=settings.effective_public_url,
        network_steps=(NetworkStep("zoom_obf_token", zoom_token_step(app[ZOOM_TOKENS])),),
        transaction_steps=(
            TransactionStep("transcription_models", transcription_step(settings)),
            link_step,
        ),
    )


async def _bots_ctx(app: web.Application) -> AsyncIterator[None]:
    """The bot service, the config builder and the scheduler's owned loop.

    The loop stops after the pass in progress, before the rest shuts down.
    """
    settings = app[SETTINGS]
    builder = bot_config_builder(app)
    status_hooks = app[STATUS_HOOKS]
    lister = app.get(ARTIFACT_LISTER)
    app[CONFIG_BUILDER] = builder
    hub, storage = app.get(AGENT_HUB), app.get(STORAGE)
    live = None
    if hub is not None and storage is not None:
        live = LiveCommands(hub, storage, app[DB], settings)
        app[LIVE_COMMANDS] = live
    app[BOT_SERVICE] = BotService(
        database=app[DB],
        settings=settings,
        launcher=app[LAUNCHER],
        status_hooks=status_hooks,
        zoom_connections=app[ZOOM_TOKENS],
        agent_commands=app.get(AGENT_COMMANDS),
        recording_url=first_recording_url(lister) if lister is not None else None,
        live_commands=live,
    )
    app[SCHEDULE_SERVICE] = ScheduleService(
        database=app[DB], settings=settings, status_hooks=status_hooks
    )
    scheduler = Scheduler(
        database=app[DB],
        launcher=app[LAUNCHER],
        config_builder=builder,
        status_hooks=status_hooks,
        metrics=app[METRICS],
        interval=settings.scheduler_interval_seconds,
        lease=timedelta(seconds=settings.launch_lease_seconds),
        launch_concurrency=settings.launch_concurrency,
    )
    app[SCHEDULER] = scheduler
    async with scheduler.loop.running():
        yield


def media_url_guard(settings: Settings) -> UrlGuard:
    """The webhook SSRF rules as the check of URLs a bot fetches (``bots.url_guard``)."""
    policy = target_policy(settings)

    async def guard(url: str) -> None:
        try:
            await check_target(url, policy)
        except TargetRefused as exc:
            raise UrlRefused(str(exc)) from exc
        except (OSError, ValueError) as exc:
            raise UrlRefused("host does not resolve or URL is malformed") from exc

    return guard


def create_app(settings: Settings, *, launcher: BotLauncher | None = None) -> web.Application:
    """Build the control plane application.

    Args:
        settings: The process's settings.
        launcher: A launcher to use instead of the one ``settings.launcher`` names (tests
            pass a :class:`~control_plane.launchers.memory.MemoryLauncher`); the caller closes it.

    Returns:
        The application; its database schema must be migrated already
        (:func:`control_plane.db.migrate.upgrade`).
    """
    app = web.Application(
        client_max_size=MAX_BODY_BYTES,
        middlewares=[observe_middleware, error_middleware, auth_middleware, idempotency_middleware],
    )
    app[SETTINGS] = settings
    app[METRICS] = Metrics()
    app[RATE_LIMITER] = RateLimiter(
        rate=settings.rate_limit_per_second, burst=settings.rate_limit_burst
    )
    app[ADDRESS_RATE_LIMITER] = RateLimiter(
        rate=settings.address_rate_limit_per_second, burst=settings.address_rate_limit_burst
    )
    app[KEY_CACHE] = KeyCache(ttl=settings.auth_cache_ttl_seconds)
    app[LIST_GATE] = list_gate(settings.list_concurrency, settings.list_concurrency_idle)
    app[URL_GUARD] = media_url_guard(settings)
    app[STATUS_HOOKS] = []
    app[STATUS_HOOKS].append(app[METRICS].count_status_change)
    app[PURGE_HOOKS] = []
    setup_summaries(app)
    setup_detection(app)
    all_routes = resources()
    for res in all_routes:
        app.router.add_routes(res.table)
    app.router.add_routes(dashboard.routes)  # the web UI: files only, not in the OpenAPI
    app[ROUTE_SPECS] = spec_index(all_routes)
    app[OPENAPI] = build_openapi(all_routes, title="meetbot API", version=_version())
    add_to_openapi(app[OPENAPI])
    state_meeting_rules(app[OPENAPI], settings.extra_meeting_hosts)
    action_prompts.state_prompt_models(app[OPENAPI], settings)
    app.cleanup_ctx.append(_database_ctx)
    app.cleanup_ctx.append(_launcher_ctx(launcher))
    app.cleanup_ctx.append(zoom_ctx)
    app.cleanup_ctx.append(webhooks_ctx)
    # The replica's one language model, before the workers that share it.
    app.cleanup_ctx.append(chat_model_ctx)
    setup_agent_link(app)
    # Live action detection over that model, streaming through the agent link (issue 34).
    app.cleanup_ctx.append(detection_ctx(CHAT_MODEL, hub_publisher))
    # The summary at each meeting's end over the same model (issue 34, docs/api.md 2.14).
    app.cleanup_ctx.append(summary_ctx(CHAT_MODEL))
    # Last to start, first to stop: no launch runs while the rest shuts down.
    app.cleanup_ctx.append(_bots_ctx)
    return app
