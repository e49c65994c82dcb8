"""Who spoke when: active-speaker intervals from the meeting UI, matched to segment times.

Platforms that mix every participant into one audio stream still light up an indicator for
whoever talks; the adapter reports those as :class:`agent.audio.SpeakerActivity` on/off
changes. :class:`SpeakerTimeline` keeps them as intervals and names a segment after the
participant whose intervals overlap it most. Where the platform gives one track per
participant, the frame's ``speaker`` (or a track → name map) names it directly and the
timeline is not consulted.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.audio import SpeakerActivity


class SpeakerTimeline:
    """Active-speaker intervals per participant, in epoch seconds.

    Activities may arrive slightly out of order (several adapters poll the page); each name's
    changes are applied in time order. An indicator still on counts as lasting until the
    moment of the query.

    Args:
        activities: Changes known from the start (a deferred pass replays the meeting's).
    """

    def __init__(self, activities: Iterable[SpeakerActivity] = ()) -> None:
        self._changes: dict[str, list[tuple[float, bool]]] = {}
        for activity in activities:
            self.add(activity)

    def add(self, activity: SpeakerActivity) -> None:
        """Record one indicator change."""
        changes = self._changes.setdefault(activity.name, [])
        changes.append((activity.at, activity.speaking))
        if len(changes) > 1 and changes[-2][0] > activity.at:
            changes.sort(key=lambda change: change[0])

    def intervals(self, name: str, until: float) -> list[tuple[float, float]]:
        """Closed speaking intervals of ``name``; an open one is closed at ``until``."""
        out: list[tuple[float, float]] = []
        opened: float | None = None
        for at, speaking in self._changes.get(name, []):
            if speaking and opened is None:
                opened = at
            elif not speaking and opened is not None:
                out.append((opened, at))
                opened = None
        if opened is not None and until > opened:
            out.append((opened, until))
        return out

    def overlap(self, name: str, start: float, end: float) -> float:
        """Seconds of ``[start, end]`` during which ``name``'s indicator was on."""
        total = 0.0
        for lo, hi in self.intervals(name, until=end):
            total += max(0.0, min(hi, end) - max(lo, start))
        return total

    def speaker_for(self, start: float, end: float) -> str | None:
        """The participant with the most indicator time inside ``[start, end]``, or None.

        Ties go to the participant whose indicator came on first in the interval, so the
        answer is deterministic.
        """
        best: tuple[float, float, str] | None = None
        for name in self._changes:
            seconds = self.overlap(name, start, end)
            if seconds <= 0:
                continue
            first_on = min(
                (max(lo, start) for lo, hi in self.intervals(name, end) if hi > start),
                default=end,
            )
            key = (seconds, -first_on, name)
            if best is None or key[:2] > best[:2]:
                best = key
        return best[2] if best else None

    def forget_before(self, at: float) -> None:
        """Drop changes older than ``at`` that no open or later interval needs (bounds memory)."""
        for name, changes in self._changes.items():
            keep_from = 0
            for i, (when, speaking) in enumerate(changes):
                if when >= at:
                    break
                if not speaking:
                    keep_from = i + 1
            self._changes[name] = changes[keep_from:]


class FloorChanges:
    """Turns active-speaker indicator changes into moments when the floor changed hands.

    The floor passes when someone other than the last speaker lights up, or when the last
    speaker's indicator goes off while someone else's is still on (a backchannel ends and the
    speaker it interrupted carries on). The same person's indicator flickering is no change.
    """

    def __init__(self) -> None:
        self._on: dict[str, float] = {}
        self._holder: str | None = None

    def observe(self, activity: SpeakerActivity) -> float | None:
        """Record one change; returns its epoch seconds when the floor changed hands."""
        changed: float | None = None
        if activity.speaking:
            self._on[activity.name] = activity.at
            if self._holder is not None and activity.name != self._holder:
                changed = activity.at
            self._holder = activity.name
        else:
            self._on.pop(activity.name, None)
            if activity.name == self._holder and self._on:
                changed = activity.at
                self._holder = max(self._on, key=lambda name: self._on[name])
        return changed
