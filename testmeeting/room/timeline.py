"""The room's ground truth: every fact, stamped on the room's clock, in order.

The clock is UNIX epoch seconds (``time.time()`` unless a test passes another), the same clock
the agent stamps audio with, so a transcript can be lined up against it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict


class TimelineEvent(BaseModel):
    """One ground-truth fact.

    Attributes:
        type: ``room_created``, ``clock_started``, ``joined``, ``lobby_entered``, ``admitted``,
            ``denied``, ``no_answer``, ``left``, ``removed``, ``speech``, ``chat``,
            ``hand_raised``, ``hand_lowered``, ``mic``, ``camera``, ``screen``,
            ``meeting_ended``, ``page_screen`` (a page showed the screen in ``text``).
        t: UNIX epoch seconds when it happened (for ``speech``: when the audio was sent to
            the pages).
        end: For ``speech``: ``t`` plus the clip's duration.
        participant_id: Who it concerns.
        name: Their display name.
        text: Reference text of speech, chat text.
        file: Audio file of speech, if any.
        value: New state of ``mic``/``camera``/``screen``.
    """

    model_config = ConfigDict(frozen=True)

    type: str
    t: float
    end: float | None = None
    participant_id: str | None = None
    name: str | None = None
    text: str | None = None
    file: str | None = None
    value: bool | None = None


class Timeline:
    """Append-only list of :class:`TimelineEvent`.

    Args:
        clock: Returns UNIX epoch seconds; stamps every event.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._events: list[TimelineEvent] = []

    def record(self, kind: str, **fields: Any) -> None:
        """Append an event of type ``kind`` happening now; ``fields`` are its other attributes."""
        self._events.append(TimelineEvent(type=kind, t=self._clock(), **fields))

    def events(self) -> list[TimelineEvent]:
        """Everything recorded so far, oldest first (a copy)."""
        return list(self._events)
