"""Audio and speaker-activity records passed from capture to transcription inside the agent.

Capture (``agent/capture``) produces :class:`AudioFrame`s and the platform adapters produce
:class:`SpeakerActivity`; transcription (``agent/transcribe``) consumes both. Times are UNIX
epoch seconds (``time.time()`` clock) so browser-side and Python-side events line up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000
"""Samples per second of every :class:`AudioFrame` (mono)."""


@dataclass(frozen=True, slots=True)
class AudioFrame:
    """A block of 16 kHz mono PCM from one remote audio track.

    Attributes:
        track_id: Stable id of the source track (a WebRTC track id, or ``"mix"`` when the
            platform delivers one mixed stream).
        start_time: UNIX epoch seconds of the first sample.
        pcm: int16 samples, shape ``(n,)``, at :data:`SAMPLE_RATE`.
        speaker: Name of the participant this track belongs to, when the platform tells.
    """

    track_id: str
    start_time: float
    pcm: npt.NDArray[np.int16]
    speaker: str | None = None

    @property
    def duration(self) -> float:
        """Length of the frame in seconds."""
        return len(self.pcm) / SAMPLE_RATE

    @property
    def end_time(self) -> float:
        """UNIX epoch seconds just after the last sample."""
        return self.start_time + self.duration


@dataclass(frozen=True, slots=True)
class SpeakerActivity:
    """An active-speaker indicator turned on or off in the meeting's UI.

    Attributes:
        name: Participant name as the platform shows it.
        speaking: True when the indicator lit up, False when it went dark.
        at: UNIX epoch seconds of the change.
    """

    name: str
    speaking: bool
    at: float
