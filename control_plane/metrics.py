"""Prometheus metrics of one application, in its own ``CollectorRegistry`` (no global state)."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.hooks import StatusChange


@dataclass
class Metrics:
    """The control plane's metrics; ``registry`` is what ``/metrics`` exposes.

    Other parts register their own collectors on ``registry``.
    """

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.http_requests = Counter(
            "meetbot_http_requests_total",
            "HTTP requests answered, by route template, method and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.http_latency = Histogram(
            "meetbot_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template and method.",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
        )
        self.bots_launched = Counter(
            "meetbot_bots_launched_total",
            "Bots handed to the launcher, by outcome (ok, failed).",
            ["outcome"],
            registry=self.registry,
        )
        self.scheduler_claimed = Counter(
            "meetbot_scheduler_claimed_total",
            "Scheduled bots claimed for launch by this process.",
            registry=self.registry,
        )
        self.status_changes = Counter(
            "meetbot_bot_status_changes_total",
            "Bot status changes written, by new status.",
            ["status"],
            registry=self.registry,
        )

    async def count_status_change(self, session: AsyncSession, change: StatusChange) -> None:
        """A status hook (``control_plane.hooks.StatusHook``) counting changes by new status."""
        del session  # counting needs no database
        self.status_changes.labels(change.status).inc()


METRICS = web.AppKey("metrics", Metrics)
"""The application's metrics."""
