"""Wires the meeting summary into the application (docs/api.md 2.14).

:func:`setup_summaries` registers, at build time, the status hook that adds a ``pending``
summary when a bot with ``enable_actions`` becomes final and the purge hook that removes it,
gives the bots' streams the summary's lookup (``summary_ready``), and appends
:func:`summary_ctx`, which runs this replica's
:class:`~control_plane.intelligence.summary_worker.SummaryWorker` over the replica's one
:class:`~control_plane.intelligence.chat.ChatModel` (``chat_key``) as an owned loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from aiohttp import web

from control_plane.bots.stream import STREAM_SUMMARY
from control_plane.db.engine import DB
from control_plane.hooks import PURGE_HOOKS, STATUS_HOOKS
from control_plane.intelligence.chat import ChatModel
from control_plane.intelligence.summary_metrics import SummaryMetrics
from control_plane.intelligence.summary_store import (
    purge_summary,
    stream_summary,
    summary_status_hook,
)
from control_plane.intelligence.summary_worker import SummaryPolicy, SummaryWorker
from control_plane.metrics import METRICS
from control_plane.settings import SETTINGS, Settings
from control_plane.webhooks.wiring import OUTBOX

SUMMARY_WORKER = web.AppKey("summary_worker", SummaryWorker)
"""This replica's summary worker (set while the application runs)."""


def summary_policy(settings: Settings) -> SummaryPolicy:
    """The worker's policy from the ``MEETBOT_INTELLIGENCE_SUMMARY_*`` settings."""
    return SummaryPolicy(
        lease=timedelta(seconds=settings.intelligence_summary_lease_seconds),
        transcript_wait=timedelta(seconds=settings.intelligence_summary_transcript_wait_seconds),
        max_attempts=settings.intelligence_summary_max_attempts,
        retry_base=settings.intelligence_summary_retry_base_seconds,
        retry_max=settings.intelligence_summary_retry_max_seconds,
        chunk_chars=settings.intelligence_summary_chunk_chars,
        max_tokens=settings.intelligence_summary_max_tokens,
    )


def summary_ctx(
    chat_key: web.AppKey[ChatModel],
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A ``cleanup_ctx`` running the summary worker over ``app[chat_key]``.

    It must come after the database, the webhooks and the model's own context.
    """

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        settings = app[SETTINGS]
        worker = SummaryWorker(
            database=app[DB],
            chat=app[chat_key],
            outbox=app[OUTBOX],
            policy=summary_policy(settings),
            interval=settings.intelligence_summary_poll_seconds,
            metrics=SummaryMetrics(app[METRICS].registry),
        )
        app[SUMMARY_WORKER] = worker
        async with worker.running():
            yield

    return ctx


def setup_summaries(app: web.Application) -> None:
    """Register the summary's status and purge hooks and the streams' lookup on ``app``."""
    settings = app[SETTINGS]
    app[STATUS_HOOKS].append(
        summary_status_hook(timedelta(seconds=settings.intelligence_summary_settle_seconds))
    )
    app[PURGE_HOOKS].append(purge_summary)
    app[STREAM_SUMMARY] = stream_summary
