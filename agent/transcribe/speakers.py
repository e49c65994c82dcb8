"""Who spoke when: active-speaker intervals from the meeting UI, matched to segment times.

Platforms that mix every participant into one audio stream still light up an indicator for
whoever talks; the adapter reports those as :class:`agent.capture.audio.SpeakerActivity` on/off
changes. :class:`SpeakerTimeline` keeps them as intervals and names a segment after the
participant whose intervals overlap it most. Where the platform gives one track per
participant, the frame's ``speaker`` (or a track → name map) names it directly and the
timeline is not consulted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from agent.capture.audio import SpeakerActivity


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

    def names(self) -> list[str]:
        """Every name whose indicator changed (and is still remembered)."""
        return list(self._changes)

    def changes_of(self, name: str) -> list[tuple[float, bool]]:
        """``(epoch, speaking)`` changes of ``name``'s indicator, in time order."""
        return list(self._changes.get(name, []))

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


def floor_holding(timeline: SpeakerTimeline, start: float, end: float) -> dict[str, float]:
    """Seconds of ``[start, end]`` (epoch) each participant held the floor.

    The floor holder is whoever lit up last among those whose indicator is on: a backchannel
    said over the speaker holds the floor while its indicator is on, and the speaker it
    interrupted holds it again after.
    """
    changes = sorted(
        (at, speaking, name)
        for name in timeline.names()
        for at, speaking in timeline.changes_of(name)
        if at < end
    )
    lit: dict[str, float] = {}
    held: dict[str, float] = {}
    holder: str | None = None
    since = start
    for at, speaking, name in [*changes, (end, False, "")]:
        if holder is not None and at > since:
            held[holder] = held.get(holder, 0.0) + min(at, end) - since
        since = max(since, at)
        if not name:
            break
        if speaking:
            lit[name] = at
        else:
            lit.pop(name, None)
        holder = max(lit, key=lambda n: lit[n]) if lit else None
    return held


def floor_holder_for(timeline: SpeakerTimeline, start: float, end: float) -> str | None:
    """Who held the floor longest inside ``[start, end]`` (a mixed track's segment), or None.

    See :func:`floor_holding`. Naming by indicator time alone would give a backchannel to the
    speaker under it, whose indicator is on all through it (issue 12). Where indicators never
    overlap this is the same answer as :meth:`SpeakerTimeline.speaker_for`.
    """
    held = floor_holding(timeline, start, end)
    return max(held, key=lambda n: (held[n], n)) if held else None


class TrackNames:
    """Names of per-participant tracks (Google Meet) learned from the speaking indicators.

    The page does not say which remote track is whose; its tiles say who is speaking. Each
    final on a track adds *solo evidence*: the seconds of its span during which exactly one
    name was lit. A name belongs to the track with the most solo evidence for it (at least
    ``_MIN_OWN_S``: an indicator lights up to a poll late, so a backchannel's first moments
    show only the speaker under it), and a track is named after the name it owns with the most
    evidence. A segment is named after its track's owner when that owner was lit within
    ``_OWNER_NEAR_S`` of it (or nobody was lit during it). Otherwise, or before the track owns
    a name, after the name no other track owns (or was given for an overlapping final) that lit
    up nearest its start (a voice and its tile start together), else after
    whoever held the floor longest during it (:func:`floor_holding`) among those names. A
    backchannel said over the speaker is then named after the one who said it, also before
    the speaker's first final: the speaker's name, lit all through it, belongs to the
    speaker's own track, and the backchannel's tile lights up as it starts (issue 12).

    Args:
        timeline: The meeting's indicator intervals.
    """

    _STEP_S = 0.05
    _MIN_OWN_S = 1.0
    # The owner's indicator this near the segment names it (indicators are read late).
    _OWNER_NEAR_S = 1.0
    # A free name lit this soon around the start of a segment of a track nobody owns yet.
    _ONSET_BEFORE_S = 0.5
    _ONSET_AFTER_S = 1.0
    _GIVEN_KEPT = 8

    def __init__(self, timeline: SpeakerTimeline) -> None:
        self._timeline = timeline
        self._solo: dict[str, dict[str, float]] = {}
        self._given: dict[str, deque[tuple[str, float, float]]] = {}

    def remember(self, track: str, name: str | None, start: float, end: float) -> None:
        """Note the name a final of ``track`` spanning ``[start, end]`` was given."""
        if name is not None:
            self._given.setdefault(track, deque(maxlen=self._GIVEN_KEPT)).append((name, start, end))

    def observe(self, track: str, start: float, end: float) -> None:
        """Add the solo evidence of a final spanning ``[start, end]`` (epoch) on ``track``."""
        evidence = self._solo.setdefault(track, {})
        spans = {n: self._timeline.intervals(n, until=end) for n in self._timeline.names()}
        at = start
        while at < end:
            lit = [n for n, ivs in spans.items() if any(lo <= at < hi for lo, hi in ivs)]
            if len(lit) == 1:
                evidence[lit[0]] = evidence.get(lit[0], 0.0) + self._STEP_S
            at += self._STEP_S

    def owner(self, track: str) -> str | None:
        """The name ``track`` owns (see class docstring), or None."""
        best: tuple[float, str] | None = None
        for name, seconds in self._solo.get(track, {}).items():
            rival = max(
                (ev.get(name, 0.0) for other, ev in self._solo.items() if other != track),
                default=0.0,
            )
            if seconds < self._MIN_OWN_S or seconds <= rival:
                continue
            if best is None or (seconds, name) > best:
                best = (seconds, name)
        return best[1] if best else None

    def name(self, track: str, start: float, end: float) -> str | None:
        """The speaker of a segment spanning ``[start, end]`` (epoch) on ``track``."""
        own = self.owner(track)
        near = (start - self._OWNER_NEAR_S, end + self._OWNER_NEAR_S)
        if own is not None and (
            self._timeline.overlap(own, *near) > 0
            or not any(self._timeline.overlap(n, start, end) > 0 for n in self._timeline.names())
        ):
            return own
        owned = {self.owner(other) for other in self._solo if other != track}
        # Someone else's track was named for this moment: two voices at once are two people.
        owned |= {
            n
            for other, given in self._given.items()
            if other != track
            for n, lo, hi in given
            if lo < end and hi > start
        }
        onsets = {
            n: min(abs(at - start) for at in on)
            for n in self._timeline.names()
            if n not in owned
            and (
                on := [
                    at
                    for at, speaking in self._timeline.changes_of(n)
                    if speaking
                    and start - self._ONSET_BEFORE_S <= at <= start + self._ONSET_AFTER_S
                ]
            )
        }
        if onsets:
            return min(onsets, key=lambda n: (onsets[n], n))
        held = floor_holding(self._timeline, start, end)
        free = {n: s for n, s in held.items() if n not in owned} or held
        if not free:
            return own
        return max(free, key=lambda n: (free[n], n))
