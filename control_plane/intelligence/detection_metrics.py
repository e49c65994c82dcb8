"""Prometheus collectors of the detection worker, registered on the app's registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


class DetectionMetrics:
    """What live action detection did on this replica.

    Args:
        registry: The app's registry (``Metrics.registry``).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.windows = Counter(
            "meetbot_action_windows_total",
            "Windows of live action detection, by outcome: done, failed (given up on after "
            "its tries; its actions are lost, logged once), skipped (no text, no call), "
            "superseded (another replica stored it).",
            ["outcome"],
            registry=registry,
        )
        self.actions = Counter(
            "meetbot_actions_total",
            "Actions the model found, by fate: stored, repeat (dropped as already stored).",
            ["fate"],
            registry=registry,
        )
        self.calls = Counter(
            "meetbot_action_calls_total",
            "Model calls of live action detection (retries included).",
            registry=registry,
        )
        self.retries = Counter(
            "meetbot_action_retries_total",
            "Calls that were retries after a transient failure.",
            registry=registry,
        )
        self.invalid_answers = Counter(
            "meetbot_action_invalid_answers_total",
            "Answers that were not the JSON asked for (the window is given up on).",
            registry=registry,
        )
        self.items_dropped = Counter(
            "meetbot_action_items_dropped_total",
            "Items of valid answers that did not become actions, by reason: malformed (no "
            "known type, no text), no_line (no line of the window), asked (phrased as a "
            "question, not typed one), unasked (typed a question, not phrased as one), "
            "too_short (under two words of substance), ungrounded (no word of substance of "
            "the window's lines), uncommitted (a task where no line commits or asks).",
            ["reason"],
            registry=registry,
        )
        self.tokens = Counter(
            "meetbot_action_tokens_total",
            "Prompt and completion tokens of answered calls.",
            registry=registry,
        )
        self.budget_waits = Counter(
            "meetbot_action_budget_waits_total",
            "Times a call waited for its workspace's budget.",
            registry=registry,
        )
        self.claims = Counter(
            "meetbot_action_claims_total",
            "Meetings this replica claimed for analysis.",
            registry=registry,
        )
        self.stream_offers_failed = Counter(
            "meetbot_action_stream_offers_failed_total",
            "Stored actions their bot's agent did not put on its stream (the control plane's "
            "stream sends them after the agent's end; webhook and record have them), by reason: "
            "no_link (the agent left), refused (it answered with an error, e.g. unknown_command), "
            "timeout (no answer in the window's time), not_offered (that time was spent before "
            "its turn), error (any other failure).",
            ["reason"],
            registry=registry,
        )
        self.latency = Histogram(
            "meetbot_action_latency_seconds",
            "Seconds from the end of a window's last speech to its actions stored (transcription, "
            "the pause that closes the window, budget waits, retries and the call included).",
            registry=registry,
            buckets=(1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0),
        )
        self.call_seconds = Histogram(
            "meetbot_action_call_seconds",
            "Seconds of an answered call, queueing in the model included.",
            registry=registry,
            buckets=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0),
        )
