"""The demo's summary: what happened, how well it was heard, how fast, and what was delivered.

:func:`summarise` turns what the demo observed (status changes, final segments with their
arrival times, the simulator's ground-truth timeline, verified webhook deliveries) into a
:class:`DemoSummary`; :func:`render` prints it with ``rich``; ``--json-summary`` writes
``DemoSummary.model_dump_json()``.

Matching segments to turns: each final segment goes to the scripted utterance *of the
speaker it is named after* whose absolute time span it overlaps most (the utterance widened by
``MATCH_SLACK_S`` on both sides: the WebRTC and capture delay after it, and before it the
timestamps of a one-word utterance, which came out up to 0.5 s before the clip's start in the
2-hour soak); when it overlaps none of theirs (a
misnamed segment), to the utterance of anyone it overlaps most, else to the nearest one. Without
the speaker, a backchannel's segment, which lies wholly inside the turn it was said over,
went to that turn, and the backchannel counted as lost (issue 12). A turn's end-of-utterance
latency is the SSE arrival of the last final segment given to it minus the end of the
utterance's voice: its start on the simulator's timeline plus the clip's last voiced frame
(clips end in up to 2.4 s of silence, which would otherwise count as negative latency). Both
are UNIX epoch seconds on this machine's clock. WER pools every turn with a known reference and
uses the benchmark's normaliser (``agent.transcribe.normalize``), so figures compare.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from agent.transcribe.normalize import normalize_text, word_errors
from testmeeting import TimelineEvent

MATCH_SLACK_S = 1.0
"""Seconds an utterance is widened by on each side when matching segments (capture and
transport delay after it; a short utterance's timestamps before it)."""


class StatusChange(BaseModel):
    """A bot status as the demo saw it (``elapsed_s`` from the launch request)."""

    status: str
    status_reason: str | None
    at: str
    elapsed_s: float


class SegmentOut(BaseModel):
    """A final transcript segment and when it reached the demo over SSE."""

    id: str
    speaker: str | None
    text: str
    start: float
    end: float
    arrived_elapsed_s: float


class TurnOut(BaseModel):
    """One scripted utterance against what the bot transcribed of it.

    ``latency_s`` is end of utterance → SSE arrival of its last final segment; ``None`` when
    no segment matched. ``started_at`` is when the turn's first clip began (epoch seconds):
    a turn may join several clips, so the scenario's clip list does not give it.
    """

    speaker: str
    started_at: float
    reference: str | None
    hypothesis: str
    speakers_heard: list[str]
    wer: float | None
    latency_s: float | None


class WebhookOut(BaseModel):
    """Signed deliveries received by the demo's endpoint (signatures checked)."""

    verified: int
    rejected: int
    by_type: dict[str, int]
    status_changes: list[str]


class DemoSummary(BaseModel):
    """Everything the demo reports at the end (the ``--json-summary`` document)."""

    ok: bool
    error: str | None = None
    platform: str
    speech_source: str
    speech_seconds: float
    bot_id: str | None
    meeting_id: int | None
    statuses: list[StatusChange]
    final_status: str | None
    final_reason: str | None
    segments: list[SegmentOut]
    turns: list[TurnOut]
    wer: float | None
    reference_words: int
    latency_p50_s: float | None
    latency_p95_s: float | None
    speaker_words_right: int = 0
    """Final words whose speaker was voicing when they were said (:func:`speaker_words`)."""
    speaker_words_total: int = 0
    webhooks: WebhookOut
    transcript_url: str | None
    stream_url: str | None
    """The bot's stream as subscribe gave it (the control plane's relay)."""
    stored_segments: int | None
    elapsed_s: float
    load_average_1m: float


def _epoch(value: Any) -> float:
    return datetime.fromisoformat(str(value)).timestamp()


def _match(segment: dict[str, Any], speech: list[TimelineEvent]) -> int | None:
    if not speech:
        return None
    start, end = _epoch(segment["absolute_start_time"]), _epoch(segment["absolute_end_time"])

    def overlap(event: TimelineEvent) -> float:
        stop = (event.end or event.t) + MATCH_SLACK_S
        return min(end, stop) - max(start, event.t - MATCH_SLACK_S)

    def distance(event: TimelineEvent) -> float:
        return min(abs(start - event.t), abs(end - (event.end or event.t)))

    theirs = [i for i, event in enumerate(speech) if event.name == segment.get("speaker")]
    for candidates in (theirs, range(len(speech))):
        best = max(candidates, key=lambda i: overlap(speech[i]), default=None)
        if best is not None and overlap(speech[best]) > 0:
            return best
    return min(range(len(speech)), key=lambda i: distance(speech[i]))


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (linear interpolation), ``None`` for no values."""
    return float(np.percentile(values, q)) if values else None


HOLD_FLOOR_S = 1.0
"""A speaker's next clip after a pause shorter than this continues their turn."""
BACKCHANNEL_MARGIN_S = 0.5
"""A clip with another speaker's voice this close before and after it was said over them."""


def group_turns(
    speech: list[TimelineEvent],
    voiced_ends: tuple[float, ...] = (),
    voiced_starts: tuple[float, ...] = (),
) -> tuple[list[TimelineEvent], tuple[float, ...]]:
    """Clips of one speaker separated by pauses under :data:`HOLD_FLOOR_S` joined as one turn.

    A monologue's sentences are one turn: its end is the end of the last one (issue 12;
    ``testmeeting.conversation.Turn``). A clip said while another speaker holds the floor
    (their voice within :data:`BACKCHANNEL_MARGIN_S` before it starts and after it ends, and
    going on after it: a backchannel) is a turn of its own and does not break theirs.

    Returns:
        The turns as speech events (text joined, ``end`` the last clip's) and, per turn, the
        seconds from its start to its last voiced frame.
    """
    voice = []
    for i, event in enumerate(speech):
        lo = event.t + (voiced_starts[i] if i < len(voiced_starts) else 0.0)
        hi = event.t + voiced_ends[i] if i < len(voiced_ends) else (event.end or event.t)
        voice.append((lo, hi))
    turns: list[tuple[TimelineEvent, float]] = []  # (event, absolute voiced end)
    floor: int | None = None  # index in turns of the last turn not said over someone
    for i, event in enumerate(speech):
        lo, hi = voice[i]
        others = [(speech[j].name, voice[j]) for j in range(len(speech)) if j != i]
        before = {n for n, (a, b) in others if a < lo and b > lo - BACKCHANNEL_MARGIN_S}
        after = {n for n, (a, b) in others if b > hi and a < hi + BACKCHANNEL_MARGIN_S}
        over = bool((before & after) - {event.name})
        if not over and floor is not None:
            held, held_end = turns[floor]
            if held.name == event.name and lo - held_end < HOLD_FLOOR_S:
                text = " ".join(x for x in (held.text, event.text) if x) or None
                turns[floor] = (held.model_copy(update={"end": event.end, "text": text}), hi)
                continue
        turns.append((event, hi))
        if not over:
            floor = len(turns) - 1
    return [e for e, _ in turns], tuple(hi - e.t for e, hi in turns)


def build_turns(
    finals: list[tuple[dict[str, Any], float]],
    speech: list[TimelineEvent],
    voiced_ends: tuple[float, ...] = (),
) -> tuple[list[TurnOut], float | None, int]:
    """Turns with their matched segments, pooled WER and reference word count.

    Args:
        finals: Final segments (SSE payloads) with their arrival epoch, in any order.
        speech: The simulator's ``speech`` timeline events (or turns), in order.
        voiced_ends: Per turn (same order), seconds from the clip's start to its last voiced
            frame; a turn without one counts from the clip's end.
    """
    assigned: list[list[tuple[dict[str, Any], float]]] = [[] for _ in speech]
    for segment, arrived in finals:
        index = _match(segment, speech)
        if index is not None:
            assigned[index].append((segment, arrived))
    turns: list[TurnOut] = []
    errors = words = 0
    for index, (event, matched) in enumerate(zip(speech, assigned, strict=True)):
        matched.sort(key=lambda item: _epoch(item[0]["absolute_start_time"]))
        hypothesis = " ".join(str(s["text"]).strip() for s, _ in matched).strip()
        wer: float | None = None
        if event.text:
            turn_errors, turn_words = word_errors(event.text, hypothesis)
            errors, words = errors + turn_errors, words + turn_words
            wer = turn_errors / turn_words if turn_words else None
        spoken_until = event.end or event.t
        if index < len(voiced_ends):
            spoken_until = min(spoken_until, event.t + voiced_ends[index])
        latency = max(a for _, a in matched) - spoken_until if matched else None
        turns.append(
            TurnOut(
                speaker=event.name or "",
                started_at=event.t,
                reference=event.text,
                hypothesis=hypothesis,
                speakers_heard=sorted({str(s.get("speaker")) for s, _ in matched}),
                wer=wer,
                latency_s=latency,
            )
        )
    pooled = errors / words if words else None
    return turns, pooled, words


SPEAKING_MARGIN_S = 0.25
"""Seconds a voice is widened by when judging a word's speaker (transport delay, edges)."""


def speaker_words(
    finals: list[dict[str, Any]],
    speech: list[TimelineEvent],
    voiced: tuple[tuple[float, float], ...] = (),
) -> tuple[int, int]:
    """Words of the finals attributed to someone whose voice was heard then: ``(right, all)``.

    A final's words are spread evenly over its span; a word is right when the final's speaker
    was voicing at that time (± :data:`SPEAKING_MARGIN_S`), or, in a silence, when the final's
    speaker is the one whose voice was nearest.

    Args:
        finals: Final segments (SSE payloads).
        speech: The simulator's ``speech`` timeline events, in order.
        voiced: Per event (same order), ``(first, last)`` voiced seconds from the clip's
            start; an event without one counts as voiced from its start to its end.
    """
    spans = []
    for index, event in enumerate(speech):
        lo, hi = event.t, event.end or event.t
        if index < len(voiced):
            lo, hi = event.t + voiced[index][0], event.t + voiced[index][1]
        spans.append((event.name, lo, hi))
    right = total = 0
    for segment in finals:
        tokens = normalize_text(str(segment.get("text", ""))).split()
        start = _epoch(segment["absolute_start_time"])
        end = max(_epoch(segment["absolute_end_time"]), start + 1e-3)
        for i in range(len(tokens)):
            at = start + (end - start) * (i + 0.5) / len(tokens)
            who = {
                name
                for name, lo, hi in spans
                if lo - SPEAKING_MARGIN_S <= at <= hi + SPEAKING_MARGIN_S
            }
            if not who and spans:
                who = {min(spans, key=lambda s: min(abs(at - s[1]), abs(at - s[2])))[0]}
            right += segment.get("speaker") in who
            total += 1
    return right, total


def render(summary: DemoSummary, console: Console) -> None:
    """Print the summary as tables."""
    console.rule("[bold]summary")
    statuses = Table(title="bot status", title_justify="left")
    for column in ("elapsed", "status", "reason"):
        statuses.add_column(column)
    for change in summary.statuses:
        statuses.add_row(f"{change.elapsed_s:6.1f} s", change.status, change.status_reason or "")
    console.print(statuses)
    turns = Table(title="turns (reference vs transcript)", title_justify="left")
    for column in ("speaker", "heard as", "WER", "latency", "transcript"):
        turns.add_column(column, overflow="fold")
    for turn in summary.turns:
        turns.add_row(
            turn.speaker,
            ", ".join(turn.speakers_heard) or "-",
            f"{turn.wer:.2f}" if turn.wer is not None else "-",
            f"{turn.latency_s:.2f} s" if turn.latency_s is not None else "-",
            turn.hypothesis or "-",
        )
    console.print(turns)
    figures = Table(show_header=False, box=None)
    figures.add_column(style="bold")
    figures.add_column(overflow="fold")
    wer = (
        "n/a (no reference text)"
        if summary.wer is None
        else (f"{summary.wer:.3f} over {summary.reference_words} reference words")
    )
    p50, p95 = summary.latency_p50_s, summary.latency_p95_s
    latency = "n/a" if p50 is None or p95 is None else f"p50 {p50:.2f} s, p95 {p95:.2f} s"
    hooks = summary.webhooks
    by_type = ", ".join(f"{kind} ×{count}" for kind, count in sorted(hooks.by_type.items()))
    for label, value in (
        ("speech", f"{summary.speech_seconds:.1f} s from {summary.speech_source}"),
        ("final segments", str(len(summary.segments))),
        ("stored segments", str(summary.stored_segments)),
        ("WER", wer),
        ("end-of-utterance latency", latency),
        ("webhooks (signature verified)", f"{hooks.verified}: {by_type or 'none'}"),
        ("webhooks rejected", str(hooks.rejected)),
        ("status webhooks", " → ".join(hooks.status_changes) or "none"),
        ("transcript", summary.transcript_url or "-"),
        ("total time", f"{summary.elapsed_s:.1f} s"),
        ("load average (1 min)", f"{summary.load_average_1m:.1f} on {os.cpu_count()} CPUs"),
    ):
        figures.add_row(label, value)
    console.print(figures)
    if summary.ok:
        console.print("[bold green]demo finished: the bot completed its meeting")
    else:
        console.print(f"[bold red]demo failed: {summary.error}")
