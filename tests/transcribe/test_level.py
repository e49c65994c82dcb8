"""A track's level: the VAD's gain, its fresh starts after pauses, loud windows."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from agent.transcribe.level import MAX_GAIN_DB, QUIET_WINDOWS, TARGET_DB, LevelTracker
from agent.transcribe.vad import WINDOW

pytestmark = pytest.mark.unit


def _tone(db: float, windows: int, seed: int = 0) -> npt.NDArray[np.float32]:
    """Noise-like windows at ``db`` dBFS RMS, shape ``(windows, WINDOW)``."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((windows, WINDOW)) * 10 ** (db / 20)).astype(np.float32)


def _db(gain: float) -> float:
    return float(20 * np.log10(gain))


@pytest.mark.parametrize("voice_db", [-20.0, -30.0, -38.0])
def test_a_voice_is_lifted_towards_the_target_whatever_its_level(voice_db: float) -> None:
    tracker = LevelTracker()
    tracker.observe(_tone(-75.0, 40))  # the room
    levels = tracker.observe(_tone(voice_db, 60, seed=1))
    settled = _db(float(levels.gains[-1]))
    assert settled == pytest.approx(min(MAX_GAIN_DB, max(0.0, TARGET_DB - voice_db)), abs=1.5)
    assert levels.loud[-20:].all()


def test_background_alone_is_not_lifted_and_is_not_loud() -> None:
    tracker = LevelTracker()
    levels = tracker.observe(_tone(-50.0, 600))  # 19 s of steady noise, nobody speaking
    assert _db(float(levels.gains[-1])) < 3.0
    assert not levels.loud[-100:].any()


def test_the_detector_starts_afresh_once_per_pause() -> None:
    tracker = LevelTracker()
    tracker.observe(_tone(-75.0, 40))
    speech, pause = _tone(-25.0, 30, seed=2), _tone(-75.0, 20, seed=3)
    levels = tracker.observe(np.concatenate([speech, pause, speech, pause[: QUIET_WINDOWS - 1]]))
    resets = np.flatnonzero(levels.resets).tolist()
    assert resets == [30 + QUIET_WINDOWS - 1]  # one pause long enough, the short one not
