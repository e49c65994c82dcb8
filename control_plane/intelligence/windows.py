"""Which stored segments make a meeting's next detection window (docs/api.md 2.9).

Pure rules, no I/O: the worker reads the segments stored after the meeting's cursor (in
arrival order, ``segments.id``) and :func:`next_window` says whether a window is complete.
A window closes

- at a pause: a gap of at least ``pause`` seconds (meeting time) between the end of the
  window's latest line and the start of the next segment;
- once its lines hold ``max_speech`` seconds of speech (the segment that reaches it included);
- when no new segment arrived for ``pause`` seconds of wall-clock time (``quiet``: the caller
  watches arrivals), or the meeting is final (every segment it will get is stored).

A segment not yet completed stops the scan while the meeting is live (the window waits for it,
so the cursor never passes a segment that may still be finished later); once the meeting is
final it is skipped. Completed segments with empty text are skipped. A scan that only skipped
segments gives a window without lines, which moves the cursor and asks nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from control_plane.intelligence.detection import WindowLine

_ACTION_IDS = uuid.UUID("6d7c1e52-5b0e-4a8e-9b61-34a1c0ffee34")
"""Namespace of the UUIDv5 action ids (any fixed UUID; changing it would change every id)."""


@dataclass(frozen=True, slots=True)
class StoredLine:
    """One stored segment after the cursor.

    Attributes:
        row: Its ``segments.id`` (arrival order; the cursor's unit).
        completed: Whether the segment is final (``segments.completed``).
        line: The segment as the model sees it.
        ended_at: When its speech ended (``absolute_end_time``, UTC); None when unknown.
    """

    row: int
    completed: bool
    line: WindowLine
    ended_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Window:
    """A complete window.

    Attributes:
        lines: Its lines in meeting-time order (by start); empty when the scan only skipped
            segments (the cursor moves, no call is made).
        last_row: The highest ``segments.id`` the window covers: the cursor after it.
        closed_by: ``pause``, ``speech``, ``quiet`` or ``final`` (see the module docstring);
            ``skip`` for a window without lines.
        ended_at: When the speech of its latest line ended (UTC), if known: where the
            latency from speech to stored actions is measured from.
    """

    lines: tuple[WindowLine, ...]
    last_row: int
    closed_by: Literal["pause", "speech", "quiet", "final", "skip"]
    ended_at: datetime | None = None


def next_window(
    rows: Sequence[StoredLine],
    *,
    pause: float,
    max_speech: float,
    final: bool,
    quiet: bool,
) -> Window | None:
    """The next complete window of ``rows``, or None while it is still open.

    Args:
        rows: Segments stored after the cursor, in ``row`` order.
        pause: Seconds of gap (meeting time) that close a window.
        max_speech: Seconds of speech that close a window.
        final: The meeting is final (no segment will be added or completed).
        quiet: No new segment arrived for ``pause`` seconds of wall-clock time.

    Returns:
        The window (see :class:`Window`), or None when none is complete yet (also when
        ``rows`` is empty).
    """
    lines: list[WindowLine] = []
    ended: list[datetime] = []
    last_row = 0
    latest_end = 0.0
    speech = 0.0
    for stored in rows:
        if not stored.completed:
            if final:
                last_row = stored.row
                continue
            return _open(lines, last_row)
        line = stored.line
        if not line.text.strip():
            last_row = stored.row
            continue
        if lines and line.start - latest_end >= pause:
            return _closed(lines, last_row, "pause", ended)
        lines.append(line)
        if stored.ended_at is not None:
            ended.append(stored.ended_at)
        last_row = stored.row
        latest_end = max(latest_end, line.end)
        speech += max(0.0, line.end - line.start)
        if speech >= max_speech:
            return _closed(lines, last_row, "speech", ended)
    if not last_row:
        return None
    if not lines:
        return Window((), last_row, "skip")
    if final:
        return _closed(lines, last_row, "final", ended)
    if quiet:
        return _closed(lines, last_row, "quiet", ended)
    return None


def _open(lines: list[WindowLine], last_row: int) -> Window | None:
    """Where a live scan stops at an unfinished segment: only skipped rows may move on."""
    if last_row and not lines:
        return Window((), last_row, "skip")
    return None


def _closed(
    lines: list[WindowLine],
    last_row: int,
    closed_by: Literal["pause", "speech", "quiet", "final"],
    ended: list[datetime],
) -> Window:
    ordered = tuple(sorted(lines, key=lambda line: (line.start, line.segment_id)))
    return Window(ordered, last_row, closed_by, max(ended) if ended else None)


def action_id(meeting_id: int, window: Window, index: int) -> str:
    """The stable id of the ``index``-th action stored from ``window`` of ``meeting_id``.

    A UUIDv5 of the meeting, the window's segment ids and the index: a window analysed again
    (after a replica's crash) names its actions alike, so storing them by id keeps one copy.
    """
    ids = ",".join(line.segment_id for line in window.lines)
    return str(uuid.uuid5(_ACTION_IDS, f"{meeting_id}|{ids}|{index}"))
