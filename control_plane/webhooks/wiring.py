"""Plugging webhooks into the app: the provider's app key, its cleanup context, the status hook.

``create_app`` appends :func:`webhooks_ctx` after the database context and merges
:func:`~control_plane.webhooks.events.openapi_webhooks` into the OpenAPI document. The context
builds the provider that ``webhook_provider`` names and the
:class:`~control_plane.webhooks.outbox.Outbox` that wakes it after an event commits
(:data:`OUTBOX`, given to whoever emits events), registers
the outbox's ``bot.status_changed`` hook with the status-change service (``STATUS_HOOKS``), and
owns the provider's background task: started after the database is up, stopped (or at worst
cancelled) and awaited at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from control_plane.db.engine import DB
from control_plane.hooks import STATUS_HOOKS, StatusChange, StatusHook
from control_plane.metrics import METRICS
from control_plane.settings import SETTINGS, Settings
from control_plane.token_cipher import TokenCipher
from control_plane.webhooks.embedded import EmbeddedProvider
from control_plane.webhooks.events import BotStatusChanged, EventType, openapi_webhooks
from control_plane.webhooks.metrics import WebhookMetrics
from control_plane.webhooks.outbox import Outbox
from control_plane.webhooks.provider import WebhookProvider
from control_plane.webhooks.sealed_secrets import seal_stored_secrets
from control_plane.webhooks.svix_provider import SvixProvider
from meetbot_common.ssrf import TargetPolicy

log = logging.getLogger(__name__)

WEBHOOK_PROVIDER = web.AppKey("webhook_provider", WebhookProvider)
OUTBOX = web.AppKey("webhook_outbox", Outbox)
"""The outbox bound to this process's worker (emit events through it to have them relayed at
once)."""
# The 15 s request timeout plus time to store the outcomes.
STOP_TIMEOUT_SECONDS = 20.0


def target_policy(settings: Settings) -> TargetPolicy:
    """The SSRF policy the settings ask for."""
    return TargetPolicy(
        allow_http=settings.webhook_allow_http, allow_private=settings.webhook_allow_private
    )


def create_provider(
    settings: Settings,
    sessionmaker: async_sessionmaker[AsyncSession],
    cipher: TokenCipher,
    metrics: WebhookMetrics | None = None,
) -> EmbeddedProvider | SvixProvider:
    """The provider ``settings.webhook_provider`` names (``embedded`` or ``svix``).

    ``cipher`` seals the embedded provider's endpoint secrets (Svix keeps its own).
    """
    if settings.webhook_provider == "svix":
        return SvixProvider(
            sessionmaker,
            api_key=settings.svix_api_key,
            server_url=settings.svix_server_url,
            poll_interval=settings.webhook_poll_interval_seconds,
            metrics=metrics,
        )
    return EmbeddedProvider(
        sessionmaker,
        retry_schedule=settings.webhook_retry_schedule,
        policy=target_policy(settings),
        cipher=cipher,
        poll_interval=settings.webhook_poll_interval_seconds,
        metrics=metrics,
    )


def status_hook(outbox: Outbox) -> StatusHook:
    """A status hook writing ``bot.status_changed`` through ``outbox``.

    The event is written inside the status change's transaction.
    """

    async def hook(session: AsyncSession, change: StatusChange) -> None:
        await _status_changed(outbox, session, change)

    return hook


async def status_changed_hook(session: AsyncSession, change: StatusChange) -> None:
    """Write ``bot.status_changed`` into the outbox without waking a worker (it polls)."""
    await _status_changed(Outbox(), session, change)


async def _status_changed(outbox: Outbox, session: AsyncSession, change: StatusChange) -> None:
    meeting = change.meeting
    await outbox.emit(
        session,
        meeting.workspace_id,
        EventType.BOT_STATUS_CHANGED,
        BotStatusChanged(
            bot_id=str(meeting.bot_id),
            meeting_id=meeting.id,
            status=change.status,
            previous_status=change.previous_status,
            status_reason=change.status_reason,
        ),
        at=change.at,
    )


_ENDPOINT_OPERATIONS = (
    "get_webhook_endpoint",
    "update_webhook_endpoint",
    "delete_webhook_endpoint",
    "get_webhook_endpoint_secret",
    "list_webhook_endpoint_logs",
)


def add_to_openapi(document: dict[str, Any]) -> None:
    """Merge the event catalogue into an OpenAPI 3.1 document (``webhooks`` + schemas).

    The endpoint routes get their links too (:func:`add_endpoint_links`).
    """
    webhooks, schemas = openapi_webhooks()
    document["webhooks"] = webhooks
    document.setdefault("components", {}).setdefault("schemas", {}).update(schemas)
    add_endpoint_links(document)


def add_endpoint_links(document: dict[str, Any]) -> None:
    """State in ``document`` where a webhook route's path values come from (OpenAPI links).

    A created API key names its workspace (``workspace_id``), which the endpoint collection
    takes; a created endpoint's ``id`` is the ``endpoint_id`` of its own routes. Clients and
    stateful testers (schemathesis) follow these; without them nothing in the document said
    where a ``workspace_id`` comes from, so no generated chain reached an endpoint.
    Operations missing from ``document`` (a trimmed app) are skipped.
    """
    paths = document.get("paths", {})
    ops = {
        op.get("operationId"): op
        for item in paths.values()
        for op in item.values()
        if isinstance(op, dict)
    }
    key_created = ops.get("create_api_key", {}).get("responses", {}).get("201")
    if key_created is not None:
        links = key_created.setdefault("links", {})
        for target in ("create_webhook_endpoint", "list_webhook_endpoints"):
            if target in ops:
                links[target] = {
                    "operationId": target,
                    "parameters": {"workspace_id": "$response.body#/workspace_id"},
                }
    created = ops.get("create_webhook_endpoint", {}).get("responses", {}).get("201")
    if created is not None:
        links = created.setdefault("links", {})
        for target in _ENDPOINT_OPERATIONS:
            if target in ops:
                links[target] = {
                    "operationId": target,
                    "parameters": {
                        "workspace_id": "$request.path.workspace_id",
                        "endpoint_id": "$response.body#/id",
                    },
                }


async def webhooks_ctx(app: web.Application) -> AsyncIterator[None]:
    """Cleanup context: provider, status hook, and the provider's owned background task.

    Endpoint secrets stored in plain text by an older version are sealed first.
    """
    sessions = app[DB].sessions
    metrics = WebhookMetrics(app[METRICS].registry)
    cipher = await asyncio.to_thread(TokenCipher.from_settings, app[SETTINGS])
    sealed = await seal_stored_secrets(sessions, cipher)
    if sealed:
        log.info("webhook endpoint secrets sealed", extra={"count": sealed})
    provider = create_provider(app[SETTINGS], sessions, cipher, metrics)
    app[WEBHOOK_PROVIDER] = provider
    outbox = Outbox(wake=provider.wake)
    app[OUTBOX] = outbox
    app[STATUS_HOOKS].append(status_hook(outbox))
    task = asyncio.create_task(provider.run(), name="webhooks")
    yield
    provider.stop()
    # A graceful stop stores the outcome of attempts in flight (each at most 15 s); after
    # that, cancellation (wait_for cancels and awaits the task).
    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
        await asyncio.wait_for(task, STOP_TIMEOUT_SECONDS)
