"""A track's loudness, window by window: its noise floor, a gain for the VAD, quiet runs.

Silero's speech probability depends on the level of the voice and on the recurrent state the
previous audio left (both measured, ``bench/transcription.py`` section ``vad``): a hoarse voice
(Montreal Forced Aligner's ``cold_corpus.wav``) 0.3 s after a loud read monologue (LJ Speech)
had 29 % of its windows at or above 0.5 instead of 63 % when fed alone at the same level, 0–8 %
at 12 dB quieter; 15 dB quieter it hardly reached 0.5 even alone. Two corrections, both per
track and on the VAD's copy of the audio only (decoders get the audio as it was captured):

- *Level*: each window is scaled so that the recent speech level sits near ``TARGET_DB``
  (at most ``MAX_GAIN_DB`` up, never down). The level is the loud end (90th percentile) of the
  last half second; while it is within ``GATE_DB`` of the noise floor (nobody speaking) the gain
  holds, so background noise is not pulled up to speech level.
- *State*: after ``QUIET_WINDOWS`` windows in a row within ``QUIET_DB`` of the noise floor (a
  pause of a quarter second, as between two speakers) a second detector state starts afresh,
  so what one voice left in the state does not decide whether the next voice is heard
  (``agent.transcribe.vad.SileroVad`` takes the higher of it and the carried state). Shorter
  or shallower pauses (160 ms, 10 dB) also reset inside the hoarse speaker's own breathy
  phrases.

With both, the hoarse voice 0.3 s after the loud one had 55–69 % of its windows at 0.5 or more
(0, −9 and −15 dB) against 58–71 % alone: the order hardly matters any more, nor the level
within 15 dB.

The noise floor starts at the track's first window and follows quiet windows quickly and loud
ones slowly (a time constant of about 16 s of audio), so it settles on the track's own
background, measured over the meeting; a window ``EVIDENCE_DB`` above it is loud enough to
count as voice evidence for the accounting of voiced audio (``agent.transcribe.segmenter``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

TARGET_DB = -22.0
"""Speech level (dBFS, window RMS, loud end of the last half second) the VAD's copy is lifted to."""
MAX_GAIN_DB = 24.0
GATE_DB = 8.0
QUIET_DB = 6.0
QUIET_WINDOWS = 8
EVIDENCE_DB = 12.0
_RECENT_WINDOWS = 16
_SMOOTHING = 0.3
_FLOOR_DOWN = 0.2
_FLOOR_UP = 0.002
_MIN_DB = -100.0


@dataclass(frozen=True, slots=True)
class WindowLevels:
    """What :meth:`LevelTracker.observe` found for a block of windows (one entry per window).

    Attributes:
        gains: Linear gain for the VAD's copy of each window.
        resets: True where the detector should start from a fresh state before the window.
        loud: True where the window is ``EVIDENCE_DB`` or more above the noise floor.
    """

    gains: npt.NDArray[np.float32]
    resets: npt.NDArray[np.bool_]
    loud: npt.NDArray[np.bool_]


class LevelTracker:
    """Per-track level state (see module docstring); feed windows in order, never twice."""

    def __init__(self) -> None:
        self._floor: float | None = None
        self._gain_db = 0.0
        self._quiet_run = 0
        self._recent: deque[float] = deque(maxlen=_RECENT_WINDOWS)

    @property
    def floor_db(self) -> float | None:
        """The track's noise floor now, dBFS (None before the first window)."""
        return self._floor

    def observe(self, windows: npt.NDArray[np.float32]) -> WindowLevels:
        """Levels of ``windows`` (shape ``(n, window)``, float32 in [-1, 1])."""
        n = len(windows)
        gains = np.ones(n, dtype=np.float32)
        resets = np.zeros(n, dtype=np.bool_)
        loud = np.zeros(n, dtype=np.bool_)
        if n == 0:
            return WindowLevels(gains, resets, loud)
        power = np.mean(np.square(windows, dtype=np.float64), axis=1)
        levels = np.maximum(_MIN_DB, 10.0 * np.log10(power + 1e-12))
        floor = levels[0] if self._floor is None else self._floor
        for i, level in enumerate(levels.tolist()):
            rate = _FLOOR_DOWN if level < floor else _FLOOR_UP
            floor = max(_MIN_DB, floor + rate * (level - floor))
            self._recent.append(level)
            loud[i] = level >= floor + EVIDENCE_DB
            if level < floor + QUIET_DB:
                self._quiet_run += 1
                resets[i] = self._quiet_run == QUIET_WINDOWS
            else:
                self._quiet_run = 0
            speech = float(np.percentile(np.fromiter(self._recent, dtype=np.float64), 90))
            if speech > floor + GATE_DB:
                wanted = min(MAX_GAIN_DB, max(0.0, TARGET_DB - speech))
                self._gain_db += _SMOOTHING * (wanted - self._gain_db)
            gains[i] = 10.0 ** (self._gain_db / 20.0)
        self._floor = floor
        return WindowLevels(gains, resets, loud)
