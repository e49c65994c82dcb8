"""Voice activity detection on streaming 16 kHz audio, one state per track.

Two detectors share one shape: feed float32 samples in any block size, get back one speech
probability per 512-sample window (32 ms), in order, and whether each window was loud above
the track's noise floor (:class:`VadWindows`).

- :class:`SileroVad` runs the Silero VAD v6 ONNX model that faster-whisper ships
  (``faster_whisper/assets/silero_vad_v6.onnx``) through onnxruntime, carrying the LSTM state
  and the 64-sample context between calls. It sees the audio level-normalised, and a second
  state started afresh after each pause runs beside the carried one (:mod:`agent.transcribe.level`):
  carried across speakers, the state of a loud voice kept a quieter, hoarse one after it under
  the threshold for seconds (issue 32). About 5 ms of CPU per second of audio.
- :class:`EnergyVad` maps the window's level above an adaptive noise floor to a
  probability; no model, but it takes steady noise for speech more easily.

``bench/transcription.py`` measures both on the multi-speaker sequence; Silero is the default.
Both are blocking CPU work: call them from a worker thread.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from agent.transcribe.level import LevelTracker

WINDOW = 512
"""Samples per VAD decision (32 ms at 16 kHz)."""
_CONTEXT = 64


@dataclass(frozen=True, slots=True)
class VadWindows:
    """One detector call's completed windows, in order.

    Attributes:
        probs: Speech probability of each window, 0–1.
        loud: Whether each window was well above the track's noise floor
            (``agent.transcribe.level.EVIDENCE_DB``): with a probability at the low
            ``SegmenterOptions.evidence_threshold``, voice evidence for the accounting of
            voiced audio, independent of the segmenter's own thresholds.
    """

    probs: npt.NDArray[np.float32]
    loud: npt.NDArray[np.bool_]

    @staticmethod
    def none() -> VadWindows:
        """No completed window."""
        return VadWindows(np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.bool_))


class VoiceDetector(Protocol):
    """Streaming speech detector for one track."""

    def process(self, samples: npt.NDArray[np.float32]) -> VadWindows:
        """Consume samples (float32 in [-1, 1]); return the completed windows."""
        ...


class SileroSession:
    """The loaded Silero ONNX model; one per transcriber, shared by its tracks' detectors.

    onnxruntime sessions accept concurrent ``run`` calls, and each :class:`SileroVad` keeps its
    own recurrent state, so sharing is safe.
    """

    def __init__(self, path: Path | None = None) -> None:
        # onnxruntime and the asset path come from faster-whisper's install; imported here so
        # the module stays importable where whisper is not wanted.
        import onnxruntime  # type: ignore[import-untyped]  # ships no type hints
        from faster_whisper.utils import get_assets_path

        model_path = path or Path(get_assets_path()) / "silero_vad_v6.onnx"
        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        opts.enable_cpu_mem_arena = False
        opts.log_severity_level = 4
        self._session: Any = onnxruntime.InferenceSession(
            str(model_path), providers=["CPUExecutionProvider"], sess_options=opts
        )

    def run(
        self,
        batch: npt.NDArray[np.float32],
        h: npt.NDArray[np.float32],
        c: npt.NDArray[np.float32],
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Run windows ``(n, 576)`` (64 context + 512 samples) with state; return probs, h, c."""
        probs, h_out, c_out = self._session.run(None, {"input": batch, "h": h, "c": c})
        return (
            np.asarray(probs, dtype=np.float32).reshape(-1),
            np.asarray(h_out, dtype=np.float32),
            np.asarray(c_out, dtype=np.float32),
        )

    def detector(self) -> SileroVad:
        """A fresh detector with zeroed state for one track."""
        return SileroVad(self)


class _State:
    """Silero's recurrent state and the 64 samples of context before the next window."""

    def __init__(self) -> None:
        self.h = np.zeros((1, 1, 128), dtype=np.float32)
        self.c = np.zeros((1, 1, 128), dtype=np.float32)
        self.context = np.zeros(_CONTEXT, dtype=np.float32)

    def run(
        self, session: SileroSession, windows: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        contexts = np.concatenate([self.context[None, :], windows[:-1, -_CONTEXT:]], axis=0)
        self.context = windows[-1, -_CONTEXT:].copy()
        batch = np.ascontiguousarray(np.concatenate([contexts, windows], axis=1))
        probs, self.h, self.c = session.run(batch, self.h, self.c)
        return probs


class SileroVad:
    """Silero VAD over a stream (see module docstring).

    Two states read the same level-normalised audio: one carried across the whole track (its
    slow decay holds an utterance open over a phrase pause, as before), one started afresh
    after every pause (``agent.transcribe.level``), so a voice is judged on its own and not
    through what the previous speaker left; a window's probability is the higher of the two.
    """

    def __init__(self, session: SileroSession) -> None:
        self._session = session
        self._levels = LevelTracker()
        self._pending = np.zeros(0, dtype=np.float32)
        self._carried = _State()
        self._fresh = _State()

    def process(self, samples: npt.NDArray[np.float32]) -> VadWindows:
        """Consume samples; return the completed 512-sample windows."""
        data = np.concatenate([self._pending, samples]) if len(self._pending) else samples
        usable = len(data) - len(data) % WINDOW
        self._pending = data[usable:].copy()
        if usable == 0:
            return VadWindows.none()
        windows = data[:usable].reshape(-1, WINDOW)
        levels = self._levels.observe(windows)
        scaled = np.clip(windows * levels.gains[:, None], -1.0, 1.0).astype(np.float32)
        carried = self._carried.run(self._session, scaled)
        cuts = sorted({0, *np.flatnonzero(levels.resets).tolist(), len(scaled)})
        fresh = []
        for lo, hi in itertools.pairwise(cuts):
            if levels.resets[lo]:
                self._fresh = _State()  # a pause: the next voice is judged on its own
            fresh.append(self._fresh.run(self._session, scaled[lo:hi]))
        return VadWindows(np.maximum(carried, np.concatenate(fresh)), levels.loud)


class EnergyVad:
    """Level-based detector: window RMS against a slowly tracked noise floor.

    The probability rises from 0 at ``margin_db`` above the floor to 1 at ``2 * margin_db``.
    The floor follows quiet windows quickly and loud ones slowly, so it settles on the
    background level of the track.
    """

    def __init__(self, margin_db: float = 12.0, floor_db: float = -70.0) -> None:
        self._margin = margin_db
        self._floor = floor_db
        self._pending = np.zeros(0, dtype=np.float32)

    def process(self, samples: npt.NDArray[np.float32]) -> VadWindows:
        """Consume samples; return the completed 512-sample windows."""
        data = np.concatenate([self._pending, samples]) if len(self._pending) else samples
        usable = len(data) - len(data) % WINDOW
        self._pending = data[usable:].copy()
        windows = data[:usable].reshape(-1, WINDOW)
        rms = np.sqrt(np.mean(np.square(windows, dtype=np.float64), axis=1) + 1e-12)
        levels = 20.0 * np.log10(rms)
        out = np.empty(len(levels), dtype=np.float32)
        for i, level in enumerate(levels):
            rate = 0.2 if level < self._floor else 0.002
            self._floor = max(-90.0, self._floor + rate * (float(level) - self._floor))
            above = float(level) - self._floor
            out[i] = min(1.0, max(0.0, (above - self._margin) / self._margin))
        return VadWindows(out, out > 0.0)
