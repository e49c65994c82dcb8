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

import dataclasses
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import numpy.typing as npt
from faster_whisper.tokenizer import Tokenizer

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.bot_config import Task
from agent.contracts.whisper_models import check_model_supports
from agent.transcribe.filters import DecodeStats
from agent.transcribe.models import ResolvedModel, load_whisper_model

# Mel frames per second of audio (hop of 160 samples at 16 kHz) and in Whisper's full window.
_FRAMES_PER_S = 100
_FULL_WINDOW_FRAMES = 3000
# Encoder window beyond the audio's last frame (see module docstring).
_WINDOW_MARGIN_S = 1.0
_SAMPLES_PER_FRAME = SAMPLE_RATE // _FRAMES_PER_S
# Punctuation that joins the next / the previous word: faster-whisper's transcribe defaults.
_PREPEND_PUNCTUATION = "\"'“¿([{-"
_APPEND_PUNCTUATION = "\"'.。,，!！?？:：”)]}、"


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
        word_timestamps: Align words (the deferred tier with a speaker timeline; the realtime
            tier's agreement hypotheses). Decodes with timestamp tokens.
        single_pass: With ``word_timestamps`` and at most 30 s of audio: decode the window
            once and align its words on that decode's own encoding (:func:`_align_words`).
            faster-whisper's word path then decodes again from the last word's end, a second
            encode and decode that doubles the cost (9.5 against 6.9 CPU s on 8 clips of 4-12
            s, tiny.en, 1 thread) and only adds words after the last one, which an open
            utterance's next hypothesis hears anyway. False: faster-whisper's path (the
            deferred tier, where that second look may still find trailing speech).
        window_s: Least encoder window, seconds: the audio plus 1 s, at least this much
            (see module docstring); None encodes Whisper's full 30 s window.
    """

    beam_size: int = 1
    temperatures: tuple[float, ...] = (0.0,)
    without_timestamps: bool = True
    word_timestamps: bool = False
    single_pass: bool = False
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
        # The first window's encoder output in a decode, kept under the lock for its words.
        self._encoding: Any = None
        full_encode = model.encode

        def encode(features: Any) -> Any:
            # faster-whisper pads each window to 30 s and encodes it here, its one encoder call
            # (transcription and language detection alike); this cuts the padding back.
            frames = self._window_frames
            if frames is not None and features.shape[-1] > frames:
                features = features[..., :frames]
            encoding = full_encode(features)
            if self._encoding is None:
                self._encoding = encoding  # the first window's, for `_align_words`
            return encoding

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
        # Words aligned here, on the one decode of the one window (DecodeOptions.single_pass).
        align_once = (
            options.word_timestamps
            and options.single_pass
            and len(audio) <= _FULL_WINDOW_FRAMES * _SAMPLES_PER_FRAME
        )
        kwargs: dict[str, Any] = {
            "language": language,
            "task": task.value,
            "beam_size": options.beam_size,
            "best_of": 1,
            "temperature": list(options.temperatures),
            "condition_on_previous_text": False,
            "without_timestamps": options.without_timestamps and not options.word_timestamps,
            "word_timestamps": options.word_timestamps and not align_once,
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
                words = (
                    _align_words(self._model, parts, self._encoding, info, task, len(audio))
                    if align_once and parts
                    else None
                )
            finally:
                self._window_frames = None
                self._encoding = None
            elapsed = time.perf_counter() - began
        result = _result(parts, info, elapsed, None if frames is None else frames / _FRAMES_PER_S)
        return result if words is None else dataclasses.replace(result, words=words)


def _align_words(
    model: Any, parts: Sequence[Any], encoding: Any, info: Any, task: Task, samples: int
) -> tuple[WordTiming, ...]:
    """Word timings of a decode's first window, from that window's own encoder output.

    faster-whisper's ``add_word_timestamps`` (cross-attention alignment plus its clean-up of
    long words) on the decoded text tokens, as its own ``word_timestamps`` path runs it, but
    once: that path then decodes again from the last word's end. Words of a later window
    (faster-whisper seeks on when the first one ends on an unfinished segment) are left out:
    the text keeps them, the next hypothesis of an open utterance times them. Punctuation
    attaches as in faster-whisper's ``transcribe`` defaults.
    """
    tokenizer = Tokenizer(
        model.hf_tokenizer, model.model.is_multilingual, task=task.value, language=info.language
    )
    segment: list[dict[str, Any]] = [
        {"seek": 0, "start": float(part.start), "end": float(part.end), "tokens": list(part.tokens)}
        for part in parts
        if part.seek == 0  # the first window: the encoding kept (a later one seeks on)
    ]
    if not segment:
        return ()
    model.add_word_timestamps(
        [segment],
        tokenizer,
        encoding,
        min(_FULL_WINDOW_FRAMES, samples // _SAMPLES_PER_FRAME),
        _PREPEND_PUNCTUATION,
        _APPEND_PUNCTUATION,
        last_speech_timestamp=0.0,
    )
    return tuple(
        WordTiming(str(w["word"]), float(w["start"]), float(w["end"]))
        for sub in segment
        for w in sub.get("words", ())
    )


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
