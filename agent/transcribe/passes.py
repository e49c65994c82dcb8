"""Each kind of realtime decode pass: its options, its worker thread, and its counts.

Kinds (``metrics.decodes[kind]`` and ``metrics.encoded_s[kind]``, exported as
``decodes_<kind>`` and ``encoded_seconds_<kind>``): ``probe`` (the start-up timing),
``partial``, ``speculative``, ``final``, ``detect`` (a tentative English decode redone on the
multilingual model), ``recheck``, ``full_window`` and ``fallback`` (a final decoded again).

Realtime decodes encode the realtime window (``realtime_window_s``), partials the partial
window; a partial of an utterance long enough for agreement (``agreement_after_s``) is decoded
with word timestamps in one pass. Finals get the wider beam when the start-up probe (one second
of silence, the realtime window) decodes within ``_FINAL_BEAM_PROBE_S``: tiny.en does in
0.1-0.2 s on two cores, where beam 5 keeps a final within the endpoint wait; a VM under
software emulation takes seconds and stays greedy. Finals are greedy too while the decoder is
slower than the audio (:class:`~agent.transcribe.pace.DecoderPace`), which every pass informs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.bot_config import Task
from agent.transcribe.engine import DecodeOptions, DecodeResult, WhisperEngine
from agent.transcribe.jobs import DecodeQueue
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.pace import PROBE_SECONDS, DecoderPace

log = logging.getLogger(__name__)

_FINAL_BEAM = 5
_FINAL_BEAM_PROBE_S = 0.3
FULL_WINDOW_S = 30.0
"""Whisper's own encoder window, seconds (a decode with ``window_s`` None encodes this much)."""


@dataclass(frozen=True, slots=True)
class Redo:
    """How audio decoded before is decoded again (always with the finals' beam).

    Attributes:
        without_timestamps: Decode without timestamp tokens.
        window_s: Encoder window in seconds; None: Whisper's own 30 s.
        temperatures: Temperature fallback sequence.
    """

    without_timestamps: bool
    window_s: float | None
    temperatures: tuple[float, ...] = (0.0,)


class DecodePasses:
    """Runs one decode pass at a time in a worker thread, with its kind's options, and counts it.

    Args:
        engine: The English (or only) model: the one the start-up probe times.
        pace: Told each pass's decode and audio seconds; slow, finals go greedy.
        metrics: ``decodes``, ``decode_seconds`` and ``encoded_s`` by kind.
        options: The tier's knobs (windows, beams, ``agreement_after_s``, ``partials``).
        queue: Whether finals wait (the pace's interval tuning reads it after each pass).
        language: Fixed language code (the probe's; English when None).
        task: Transcribe, or translate to English.
    """

    def __init__(
        self,
        engine: WhisperEngine,
        pace: DecoderPace,
        metrics: TranscribeMetrics,
        options: TranscribeOptions,
        queue: DecodeQueue,
        *,
        language: str | None,
        task: Task,
    ) -> None:
        self._engine = engine
        self._pace = pace
        self._metrics = metrics
        self._opts = options
        self._queue = queue
        self._language = language
        self._task = task
        self._options = DecodeOptions(
            beam_size=options.realtime_beam_size,
            without_timestamps=options.realtime_without_timestamps,
            window_s=options.realtime_window_s,
        )
        self._partial_window_s = options.partial_window_s or options.realtime_window_s
        self._final_beam = options.final_beam_size or options.realtime_beam_size

    async def probe(self) -> None:
        """Learn the decoder's speed on a second of silence before the first utterance.

        Without partials nothing is probed (finals keep the configured beam).
        """
        if not self._opts.partials:
            return
        audio = np.zeros(round(PROBE_SECONDS * SAMPLE_RATE), dtype=np.float32)
        result = await asyncio.to_thread(
            self._engine.decode,
            audio,
            language=self._language or "en",
            task=self._task,
            options=self._options,
        )
        self._account("probe", result, audio)
        if self._opts.final_beam_size is None and result.seconds <= _FINAL_BEAM_PROBE_S:
            self._final_beam = _FINAL_BEAM
        log.info(
            "final decoding chosen",
            extra={
                "model": self._engine.name,
                "final_beam": self._final_beam,
                "probe_s": round(result.seconds, 3),
                "reason": "pinned by setting"
                if self._opts.final_beam_size is not None
                else f"probe {'within' if self._final_beam > 1 else 'over'} "
                f"{_FINAL_BEAM_PROBE_S} s",
            },
        )

    async def decode(
        self,
        kind: str,
        engine: WhisperEngine,
        audio: npt.NDArray[np.float32],
        language: str | None,
        prompt: str | None,
        redo: Redo | None = None,
    ) -> DecodeResult:
        """Decode ``audio`` as a pass of ``kind``, in a worker thread, and count it.

        Args:
            kind: A first pass (``partial``, ``speculative``, ``final``, ``detect``), or with
                ``redo`` a pass again (``recheck``, ``full_window``, ``fallback``).
            engine: The engine.
            audio: 16 kHz mono float32 samples.
            language: The language code (None: detect it).
            prompt: The track's context.
            redo: How audio decoded before is decoded again; its time counts in the metrics,
                its audio not again.
        """
        if redo is None:
            options = self._first_pass(kind, len(audio))
        else:
            options = DecodeOptions(
                beam_size=self._beam_for_finals(),
                without_timestamps=redo.without_timestamps,
                window_s=redo.window_s,
                temperatures=redo.temperatures,
            )
        result = await asyncio.to_thread(
            engine.decode, audio, language=language, task=self._task, options=options, prompt=prompt
        )
        self._account(kind, result, audio if redo is None else None)
        return result

    def _first_pass(self, kind: str, samples: int) -> DecodeOptions:
        """The options of a first pass of ``kind`` over ``samples`` of audio."""
        options = self._options
        if kind == "partial":
            options = dataclasses.replace(options, window_s=self._partial_window_s)
        if kind == "partial" and self._agreeing(samples):
            options = dataclasses.replace(options, word_timestamps=True, single_pass=True)
        elif kind in ("final", "speculative", "detect"):
            options = dataclasses.replace(options, beam_size=self._beam_for_finals())
        return options

    def _agreeing(self, samples: int) -> bool:
        """Whether an open utterance this long is decoded for agreement."""
        after = self._opts.agreement_after_s
        return after is not None and samples >= after * SAMPLE_RATE

    def _beam_for_finals(self) -> int:
        """The finals' beam now: greedy while the decoder is slower than the audio."""
        return self._opts.realtime_beam_size if self._pace.slow else self._final_beam

    def _account(
        self, kind: str, result: DecodeResult, audio: npt.NDArray[np.float32] | None
    ) -> None:
        """Count a decode; ``audio`` None: audio decoded before (its time counts, not it)."""
        self._metrics.decodes[kind] += 1
        self._metrics.decode_seconds += result.seconds
        window_s = FULL_WINDOW_S if result.window_s is None else result.window_s
        self._metrics.encoded_s[kind] = self._metrics.encoded_s.get(kind, 0.0) + window_s
        audio_s = 0.0 if audio is None else len(audio) / SAMPLE_RATE
        self._pace.observe(result.seconds, audio_s, finals_waiting=self._queue.finals_waiting)
