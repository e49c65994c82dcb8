"""Prometheus collectors of webhook delivery, registered on the app's own registry."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram


@dataclass
class WebhookMetrics:
    """Counters of the outbox relay and of delivery attempts.

    Args:
        registry: The registry ``/metrics`` exposes (``app[METRICS].registry``).
    """

    registry: CollectorRegistry

    def __post_init__(self) -> None:
        self.relayed = Counter(
            "meetbot_webhook_messages_relayed_total",
            "Outbox messages handed to the webhook provider by this process.",
            registry=self.registry,
        )
        self.attempts = Counter(
            "meetbot_webhook_attempts_total",
            "Delivery attempts made by this process, by outcome (success, failed).",
            ["outcome"],
            registry=self.registry,
        )
        self.attempt_seconds = Histogram(
            "meetbot_webhook_attempt_duration_seconds",
            "Time from sending a webhook to the receiver's answer (or giving up).",
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0),
        )
        self.endpoints_disabled = Counter(
            "meetbot_webhook_endpoints_disabled_total",
            "Endpoints disabled after failing for 5 days.",
            registry=self.registry,
        )
