"""Voice activity detection on streaming 16 kHz audio, one state per track.

Two detectors share one shape: feed float32 samples in any block size, get back one speech
probability per 512-sample window (32 ms), in order.

- :class:`SileroVad` runs the Silero VAD v6 ONNX model that faster-whisper ships
  (``faster_whisper/assets/silero_vad_v6.onnx``) through onnxruntime, carrying the LSTM state
  and the 64-sample context between calls; chunked calls give bit-identical probabilities to
  faster-whisper's whole-file call. About 2 ms of CPU per second of audio.
- :class:`EnergyVad` maps the window's level above an adaptive noise floor to a
  probability; no model, but it takes steady noise for speech more easily.

``bench/transcription.py`` measures both on the multi-speaker sequence; Silero is the default.
Both are blocking CPU work: call them from a worker thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

WINDOW = 512
"""Samples per VAD decision (32 ms at 16 kHz)."""
_CONTEXT = 64


class VoiceDetector(Protocol):
    """Streaming speech detector for one track."""

    def process(self, samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Consume samples (float32 in [-1, 1]); return probabilities of the completed windows."""
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


class SileroVad:
    """Silero VAD over a stream, state carried across calls (see module docstring)."""

    def __init__(self, session: SileroSession) -> None:
        self._session = session
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(_CONTEXT, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)

    def process(self, samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Consume samples; return one probability per completed 512-sample window."""
        data = np.concatenate([self._pending, samples]) if len(self._pending) else samples
        usable = len(data) - len(data) % WINDOW
        self._pending = data[usable:].copy()
        if usable == 0:
            return np.zeros(0, dtype=np.float32)
        windows = data[:usable].reshape(-1, WINDOW)
        contexts = np.concatenate([self._context[None, :], windows[:-1, -_CONTEXT:]], axis=0)
        self._context = windows[-1, -_CONTEXT:].copy()
        batch = np.ascontiguousarray(np.concatenate([contexts, windows], axis=1))
        probs, self._h, self._c = self._session.run(batch, self._h, self._c)
        return probs


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

    def process(self, samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Consume samples; return one probability per completed 512-sample window."""
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
        return out
