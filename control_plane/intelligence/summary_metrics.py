"""Prometheus collectors of the summary worker, registered on the app's registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class SummaryMetrics:
    """What the meeting summary worker did on this replica (docs/api.md 2.14).

    Args:
        registry: The app's registry (``Metrics.registry``).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.attempts = Counter(
            "meetbot_summary_attempts_total",
            "Attempts at a meeting summary, by outcome: ready (written), retried (a transient "
            "failure or an answer out of shape; tried again later), failed (given up on, logged "
            "once), superseded (the meeting was purged or claimed again meanwhile; not written).",
            ["outcome"],
            registry=registry,
        )
        self.calls = Counter(
            "meetbot_summary_calls_total",
            "Model calls of written summaries (parts and merges).",
            registry=registry,
        )
        self.tokens = Counter(
            "meetbot_summary_tokens_total",
            "Prompt and completion tokens of written summaries.",
            registry=registry,
        )
        self.items_dropped = Counter(
            "meetbot_summary_items_dropped_total",
            "Decisions and action items dropped from answers for citing no line of their part.",
            registry=registry,
        )
