"""The control plane's aiohttp application factory.

``create_app(settings)`` wires everything: the database and launcher (``cleanup_ctx``), the
middlewares (observe → errors → auth), every resource's routes and the OpenAPI document
generated from them. A resource module exposes ``routes: ApiRoutes`` and is listed once in
:func:`resources`; background work (scheduler, deliveries) is a ``cleanup_ctx`` that owns its
task and cancels and awaits it on shutdown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from importlib import metadata

from aiohttp import web

from control_plane.action_prompts import action_prompts_ctx
from control_plane.agent_link.wiring import setup_agent_link
from control_plane.api import (
    action_prompts,
    api_keys,
    invitations,
    meta,
    webhooks,
    workspaces,
    zoom_connections,
)
from control_plane.api.http import MAX_BODY_BYTES
from control_plane.api.middlewares import auth_middleware, error_middleware, observe_middleware
from control_plane.api.routes import ApiRoutes, build_openapi, spec_index
from control_plane.auth.key_cache import KEY_CACHE, KeyCache
from control_plane.auth.ratelimit import RateLimiter
from control_plane.bots import live_routes, schedule_routes
from control_plane.bots import routes as bot_routes
from control_plane.bots.scheduler import scheduler_ctx
from control_plane.bots.transcription import launch_hook as transcription_launch_hook
from control_plane.db.engine import create_database
from control_plane.keys import (
    DB,
    LAUNCH_HOOKS,
    LAUNCHER,
    METRICS,
    OPENAPI,
    PURGE_HOOKS,
    RATE_LIMITER,
    ROUTE_SPECS,
    SETTINGS,
    STATUS_HOOKS,
)
from control_plane.launchers import create_launcher
from control_plane.launchers.base import BotLauncher
from control_plane.meetings import routes as meeting_routes
from control_plane.metrics import Metrics
from control_plane.settings import Settings
from control_plane.webhooks.wiring import add_to_openapi, webhooks_ctx
from control_plane.zoom.wiring import zoom_ctx


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
    )


def _version() -> str:
    try:
        return metadata.version("meetbot")
    except metadata.PackageNotFoundError:
        return "0.0.0"


async def _database_ctx(app: web.Application) -> AsyncIterator[None]:
    database = create_database(app[SETTINGS].effective_database_url)
    app[DB] = database
    yield
    await database.dispose()


def _launcher_ctx(
    launcher: BotLauncher | None,
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        # A launcher passed in belongs to the caller, who closes it; one we build is ours.
        owned = launcher is None
        app[LAUNCHER] = create_launcher(app[SETTINGS]) if launcher is None else launcher
        yield
        if owned:
            await app[LAUNCHER].aclose()

    return ctx


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
        middlewares=[observe_middleware, error_middleware, auth_middleware],
    )
    app[SETTINGS] = settings
    app[METRICS] = Metrics()
    app[RATE_LIMITER] = RateLimiter(
        rate=settings.rate_limit_per_second, burst=settings.rate_limit_burst
    )
    app[KEY_CACHE] = KeyCache(ttl=settings.auth_cache_ttl_seconds)
    app[STATUS_HOOKS] = []
    app[STATUS_HOOKS].append(app[METRICS].count_status_change)
    app[LAUNCH_HOOKS] = [transcription_launch_hook(settings)]
    app[PURGE_HOOKS] = []
    all_routes = resources()
    for res in all_routes:
        app.router.add_routes(res.table)
    app[ROUTE_SPECS] = spec_index(all_routes)
    app[OPENAPI] = build_openapi(all_routes, title="meetbot API", version=_version())
    add_to_openapi(app[OPENAPI])
    app.cleanup_ctx.append(_database_ctx)
    app.cleanup_ctx.append(_launcher_ctx(launcher))
    app.cleanup_ctx.append(zoom_ctx)
    app.cleanup_ctx.append(action_prompts_ctx)
    app.cleanup_ctx.append(webhooks_ctx)
    setup_agent_link(app)
    # Last to start, first to stop: no launch runs while the rest shuts down.
    app.cleanup_ctx.append(scheduler_ctx)
    return app
