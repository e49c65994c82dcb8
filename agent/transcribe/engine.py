"""One loaded Whisper model and the single way both tiers decode with it.

faster-whisper pads every window to Whisper's 30 s of mel frames before encoding: about 0.45 s
for tiny.en and 0.7–1 s for base on two cores (research findings §2), whatever the audio's
length. The engine decodes one utterance per call and never more than one call at a time (a
lock per engine: two decodes at once would only halve each other's speed and double the
latency of both).

*Shorter encoder windows* (``DecodeOptions.window_s``, the realtime tier): CTranslate2's encoder
takes fewer frames, and its cost falls faster than linearly (attention). The window is the
audio plus ``_WINDOW_MARGIN_S`` but never less than ``window_s``: a window just longer than
the audio makes the decoder run past the end and repeat itself (research findings, "Shorter
encoder windows": WER 0.21 with 4 s of padding), while a floor of 10-15 s keeps tiny.en close
to the 30 s window. Whole clips, greedy, no timestamps, 19 corpus clips of 1.8–11 s (310
words) plus one of 26.7 s: 14 errors at 30 s, 14 with a 10 s floor and 1 s margin; decoding
took 4.2 s instead of 16–23 s (load 6–8). Streamed through the realtime tier (utterances cut
by the VAD, 256 words) a 10 s floor made 27 errors, 15 s 17, 30 s 15: the realtime default is
15 s (``TranscribeOptions.realtime_window_s``).

:meth:`WhisperEngine.decode` is blocking; the tiers call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from agent.audio import SAMPLE_RATE
from agent.contracts.bot_config import Task
from agent.contracts.whisper_models import check_model_supports
from agent.transcribe.filters import DecodeStats
from agent.transcribe.models import ResolvedModel, load_whisper_model

# Mel frames per second of audio (hop of 160 samples at 16 kHz) and in Whisper's full window.
_FRAMES_PER_S = 100
_FULL_WINDOW_FRAMES = 3000
# Encoder window beyond the audio's last frame (see module docstring).
_WINDOW_MARGIN_S = 1.0


@dataclass(frozen=True, slots=True)
class WordTiming:
    """A word with its start/end in seconds from the start of the decoded audio."""

    word: str
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class DecodeResult:
    """What one decode produced.

    Attributes:
        text: Joined text of every window, stripped.
        language: Language the model used (given or detected).
        language_probability: Detection confidence (1.0 when the language was given).
        stats: Worst-case confidence figures over the windows.
        seconds: Wall time the decode took.
        words: Word timings when asked for, else empty.
        window_s: Encoder window when shorter than Whisper's 30 s, seconds; None: the full one.
    """

    text: str
    language: str
    language_probability: float
    stats: DecodeStats
    seconds: float
    words: tuple[WordTiming, ...] = ()
    window_s: float | None = None


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """Per-call decoding choices.

    Attributes:
        beam_size: 1 (greedy) for the realtime tier, 5 for the deferred one.
        temperatures: ``(0.0,)`` means no fallback; more values allow fallback re-decodes.
        without_timestamps: One text per window, no timestamp tokens (cheaper, realtime).
        word_timestamps: Align words (deferred tier with a speaker timeline).
        window_s: Least encoder window, seconds: the audio plus 1 s, at least this much
            (see module docstring); None encodes Whisper's full 30 s window.
    """

    beam_size: int = 1
    temperatures: tuple[float, ...] = (0.0,)
    without_timestamps: bool = True
    word_timestamps: bool = False
    window_s: float | None = None


class WhisperEngine:
    """A loaded model plus its decode lock.

    Args:
        model: The faster-whisper ``WhisperModel``.
        name: The model setting it came from (for checks and metrics).
        multilingual: Whether the model knows languages besides English.
    """

    def __init__(self, model: Any, name: str, multilingual: bool) -> None:
        self._model = model
        self.name = name
        self.multilingual = multilingual
        self._lock = threading.Lock()
        # Frames the next encode keeps (None: all); set under the lock by `decode`.
        self._window_frames: int | None = None
        full_encode = model.encode

        def encode(features: Any) -> Any:
            # faster-whisper pads each window to 30 s and encodes it here, its one encoder call
            # (transcription and language detection alike); this cuts the padding back.
            frames = self._window_frames
            if frames is not None and features.shape[-1] > frames:
                features = features[..., :frames]
            return full_encode(features)

        model.encode = encode

    @classmethod
    def load(cls, resolved: ResolvedModel, cpu_threads: int = 2) -> Self:
        """Load the model (blocking, 0.3–1 s); call through ``asyncio.to_thread``."""
        model = load_whisper_model(resolved, cpu_threads)
        return cls(model, resolved.name, bool(model.model.is_multilingual))

    def check(self, language: str | None, task: Task | str) -> None:
        """Raise ``UnsupportedTranscriptionOptions`` when this model cannot serve the options."""
        check_model_supports(self.name, language, task)

    def decode(
        self,
        audio: npt.NDArray[np.float32],
        *,
        language: str | None,
        task: Task,
        options: DecodeOptions,
        prompt: str | None = None,
    ) -> DecodeResult:
        """Transcribe (or translate) one utterance. Blocking; serialised per engine.

        Args:
            audio: float32 mono samples at 16 kHz, at most 30 s for the realtime tier (longer
                audio is decoded window by window).
            language: Language code, or None to detect it (multilingual models only; the
                English-only ones always use ``en``).
            task: Transcribe or translate to English.
            options: Beam, temperatures, timestamps.
            prompt: Text said just before (Whisper's ``initial_prompt``), for continuity of
                spelling and punctuation across utterances.
        """
        if not self.multilingual:
            language = "en"
        duration = len(audio) / SAMPLE_RATE
        # A token budget proportional to the audio stops a repetition loop early; fast
        # speech runs at about 4 tokens per second.
        max_new_tokens = min(220, int(duration * 8) + 12)
        kwargs: dict[str, Any] = {
            "language": language,
            "task": task.value,
            "beam_size": options.beam_size,
            "best_of": 1,
            "temperature": list(options.temperatures),
            "condition_on_previous_text": False,
            "without_timestamps": options.without_timestamps and not options.word_timestamps,
            "word_timestamps": options.word_timestamps,
            "vad_filter": False,
            "initial_prompt": prompt or None,
            # Own drop rules apply afterwards (filters.judge); faster-whisper's would skip
            # windows silently and hide the figures.
            "no_speech_threshold": None,
            "log_prob_threshold": None if len(options.temperatures) == 1 else -1.0,
            "compression_ratio_threshold": None if len(options.temperatures) == 1 else 2.4,
        }
        if options.without_timestamps and len(audio) <= 30 * SAMPLE_RATE:
            kwargs["max_new_tokens"] = max_new_tokens
        frames = _window_frames(duration, options.window_s)
        with self._lock:
            self._window_frames = frames
            began = time.perf_counter()
            try:
                segments, info = self._model.transcribe(audio, **kwargs)
                parts = list(segments)
            finally:
                self._window_frames = None
            elapsed = time.perf_counter() - began
        return _result(parts, info, elapsed, None if frames is None else frames / _FRAMES_PER_S)


def _window_frames(duration: float, window_s: float | None) -> int | None:
    """Mel frames to encode for ``duration`` seconds of audio (None: the full 30 s window)."""
    if window_s is None:
        return None
    frames = round(max(window_s, duration + _WINDOW_MARGIN_S) * _FRAMES_PER_S)
    return None if frames >= _FULL_WINDOW_FRAMES else frames


def _result(
    parts: Sequence[Any], info: Any, elapsed: float, window_s: float | None
) -> DecodeResult:
    text = "".join(part.text for part in parts).strip()
    if parts:
        stats = DecodeStats(
            no_speech_prob=max(float(p.no_speech_prob) for p in parts),
            avg_logprob=min(float(p.avg_logprob) for p in parts),
            compression_ratio=max(float(p.compression_ratio) for p in parts),
        )
    else:
        stats = DecodeStats(no_speech_prob=1.0, avg_logprob=-10.0, compression_ratio=0.0)
    words = tuple(
        WordTiming(w.word, float(w.start), float(w.end)) for p in parts for w in (p.words or ())
    )
    return DecodeResult(
        text=text,
        language=str(info.language),
        language_probability=float(info.language_probability),
        stats=stats,
        seconds=elapsed,
        words=words,
        window_s=window_s,
    )
