"""Prometheus metrics of the agent link, registered on the app's own registry (``/metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_STORE_BUCKETS = (
    0.002,
    0.005,
    0.01,
    0.02,
    0.03,
    0.04,
    0.05,
    0.075,
    0.1,
    0.15,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
"""Seconds; fine below 100 ms, where the link's goal lies (issue 16: p99 < 100 ms)."""


class LinkMetrics:
    """Open links, frames stored, command round trips and reaped bots.

    Args:
        registry: The application's registry (``app[METRICS].registry``).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.links_open = Gauge(
            "meetbot_agent_links_open",
            "Agent links (WebSockets) open on this process.",
            registry=registry,
        )
        self.frames = Counter(
            "meetbot_agent_frames_total",
            "Agent frames received, by type and outcome (stored, duplicate, other).",
            ["type", "outcome"],
            registry=registry,
        )
        self.frame_store = Histogram(
            "meetbot_agent_frame_store_seconds",
            "Time from reading a stored frame on its link to its transaction's commit.",
            registry=registry,
            buckets=_STORE_BUCKETS,
        )
        self.link_stages = Histogram(
            "meetbot_agent_link_stage_seconds",
            "Where a stored frame's time goes, by stage: wait (a batch's oldest frame queued →"
            " its transaction begins) and transaction (begin → commit), once per batch; ack"
            " (the commit known → the link's acks written), once per link's run of frames.",
            ["stage"],
            registry=registry,
            buckets=_STORE_BUCKETS,
        )
        self.commands = Histogram(
            "meetbot_agent_command_seconds",
            "Time from sending a command to the agent's result, by command and outcome.",
            ["command", "outcome"],
            registry=registry,
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
        )
        self.reaped = Counter(
            "meetbot_bots_reaped_total",
            "Bots failed by the reaper, by status_reason (agent_lost, launch_failed).",
            ["reason"],
            registry=registry,
        )

    def observe_stage(self, stage: str, seconds: float) -> None:
        """Count ``seconds`` spent in one stage of storing frames (``link_stages``)."""
        self.link_stages.labels(stage).observe(seconds)
