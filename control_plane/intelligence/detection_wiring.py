"""Wires live action detection into the application (docs/api.md 2.9).

:func:`detection_ctx` is a ``cleanup_ctx`` running this replica's
:class:`~control_plane.intelligence.worker.DetectionWorker` over the replica's one
:class:`~control_plane.intelligence.chat.ChatModel` (``chat_key``): its claim loop and one
loop per meeting it holds, stopped by the app's one rule (the window in progress finishes,
then the leases are released). Stored actions are offered to their bot's stream through the
agent hub (``announce_action``), when the app has one; :func:`setup_detection` gives the bots'
streams the actions the agent did not stream, to send after its end.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from control_plane.bots.stream import STREAM_ACTIONS
from control_plane.db.engine import DB
from control_plane.intelligence.chat import ChatModel
from control_plane.intelligence.detection_metrics import DetectionMetrics
from control_plane.intelligence.window_store import unstreamed_actions
from control_plane.intelligence.worker import DetectionOptions, DetectionWorker, PublishAction
from control_plane.metrics import METRICS
from control_plane.settings import SETTINGS, Settings
from control_plane.webhooks.wiring import OUTBOX

DETECTION_WORKER = web.AppKey("detection_worker", DetectionWorker)
"""This replica's detection worker (set while the application runs)."""


def detection_options(settings: Settings) -> DetectionOptions:
    """The worker's options from the ``MEETBOT_INTELLIGENCE_*`` settings."""
    return DetectionOptions(
        window_pause=settings.intelligence_window_pause_seconds,
        window_max_speech=settings.intelligence_window_max_speech_seconds,
        poll=settings.intelligence_poll_seconds,
        lease=settings.intelligence_lease_seconds,
        meetings_at_once=settings.intelligence_meetings_at_once,
        calls_per_minute=settings.intelligence_workspace_calls_per_minute,
        tokens_per_minute=settings.intelligence_workspace_tokens_per_minute,
        window_timeout=settings.intelligence_window_timeout_seconds,
        window_attempts=settings.intelligence_window_attempts,
        retry_base=settings.intelligence_retry_base_seconds,
        retry_max=settings.intelligence_retry_max_seconds,
        max_tokens=settings.intelligence_action_max_tokens,
        offer_timeout=settings.agent_command_timeout_seconds,
        dedupe_similarity=settings.intelligence_dedupe_similarity,
    )


def detection_ctx(
    chat_key: web.AppKey[ChatModel],
    publish: Callable[[web.Application], PublishAction | None] = lambda app: None,
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A ``cleanup_ctx`` running the detection worker over ``app[chat_key]``.

    It must come after the database, the webhooks, the agent link and the model's own context.

    Args:
        chat_key: Where the replica's model is.
        publish: Builds, from the started app, what offers a stored action to its bot's
            stream (None: actions reach the webhook and the record only).
    """

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        worker = DetectionWorker(
            database=app[DB],
            chat=app[chat_key],
            outbox=app[OUTBOX],
            options=detection_options(app[SETTINGS]),
            metrics=DetectionMetrics(app[METRICS].registry),
            publish=publish(app),
            owner=f"actions-{uuid.uuid4().hex[:16]}",
        )
        app[DETECTION_WORKER] = worker
        async with worker.running():
            yield

    return ctx


def setup_detection(app: web.Application) -> None:
    """Give the bots' streams the lookup of the actions their agents did not stream."""
    app[STREAM_ACTIONS] = unstreamed_actions
