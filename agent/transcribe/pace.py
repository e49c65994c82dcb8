"""How fast the realtime decoder is, and what it may spend on partials.

Finals are never skipped; partials (and speculative decodes, which only save the last
``endpoint_s - speculate_s`` of waiting) are the work that can go when the decoder is short of
time. :class:`DecoderPace` watches every decode's wall time against the audio it covered and
decides two things:

- *The partial interval* (audio between two partial decodes of one utterance): at least
  ``_PARTIAL_SHARE`` times the recent decode time, so partials take at most about a third of
  the decoder, since finals queue behind a running partial. It doubles up to
  ``partial_interval_max_s`` when a partial's audio is older than an interval (decoding fell
  behind) and shrinks back when the decoder keeps up (``metrics.partial_degradations``).
- *Slow mode*: while decoding is slower than the audio (real-time factor above ``_SLOW_RTF``:
  an overloaded host, a CPU emulated by TCG where one decode takes minutes) or one decode
  outlasts a third of the widest interval, partials and speculative decodes are paused, so the
  decoder only does finals and keeps up with the meeting as far as it can. Slow mode ends when
  the real-time factor, still measured on the finals, drops below ``_FAST_RTF``. Each switch
  is logged (``partials paused`` / ``partials resumed``); ``metrics.slow_decoder`` is 1 while
  paused and ``metrics.partials_paused`` counts the partial decodes skipped.

The real-time factor is a moving ratio of decode seconds to audio seconds (both averaged with
weight ``_EMA``), so a long utterance weighs more than a one-word one. Before the first
utterance the scheduler decodes one second of silence to learn the decoder's speed
(:data:`PROBE_SECONDS`): on a machine where that alone outlasts the audio, no partial is ever
started.
"""

from __future__ import annotations

import logging

from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.options import TranscribeOptions

log = logging.getLogger(__name__)

# Partial decodes get at most ~1/3 of the decoder: interval ≥ 3 × recent decode time.
_PARTIAL_SHARE = 3.0
# Weight of the newest decode in the moving real-time factor, and in the decode time the
# partial interval follows. A decode covers at least ``_MIN_AUDIO_S`` of audio in the factor:
# a one-word utterance costs a decoder as much as a second of speech. At load 8, two decodes
# of 0.5 s fragments again in the 30 s window (1.5 s each) paused partials with a weight of
# 0.5 and no floor, in a meeting the decoder kept up with.
_EMA = 0.25
_INTERVAL_EMA = 0.3
_MIN_AUDIO_S = 1.0
# Slower than the audio: pause partials. Faster than twice the audio: resume them.
_SLOW_RTF = 1.0
_FAST_RTF = 0.5
# Audio of the speed probe decoded before the first utterance (silence), seconds.
PROBE_SECONDS = 1.0


class DecoderPace:
    """Speed of one meeting's decoder and the partial policy that follows from it.

    Args:
        options: ``partial_interval_s`` (floor) and ``partial_interval_max_s`` (ceiling).
        metrics: Where ``partial_interval_s``, ``partial_degradations``, ``slow_decoder`` and
            ``partials_paused`` are kept.
    """

    def __init__(self, options: TranscribeOptions, metrics: TranscribeMetrics) -> None:
        self._opts = options
        self._metrics = metrics
        self._decode_ema = 0.0
        self._decode_s = 0.0
        self._audio_s = 0.0
        self.slow = False

    @property
    def rtf(self) -> float | None:
        """Moving real-time factor (decode seconds per audio second); None before any decode."""
        return self._decode_s / self._audio_s if self._audio_s > 0 else None

    def observe(self, decode_s: float, audio_s: float, *, finals_waiting: bool) -> None:
        """Account one decode that took ``decode_s`` (wall) for ``audio_s`` seconds of new audio.

        A decode of audio already accounted (a final decoded again) passes ``audio_s`` 0.
        """
        self._decode_s = (1 - _EMA) * self._decode_s + _EMA * decode_s
        self._audio_s = (1 - _EMA) * self._audio_s + _EMA * (
            max(audio_s, _MIN_AUDIO_S) if audio_s > 0 else 0.0
        )
        self._tune_interval(decode_s, finals_waiting)
        rtf = self.rtf
        assert rtf is not None  # noqa: S101 - just measured
        too_long = _PARTIAL_SHARE * self._decode_ema > self._opts.partial_interval_max_s
        if not self.slow and (rtf > _SLOW_RTF or too_long):
            self._switch(slow=True, rtf=rtf)
        elif self.slow and rtf < _FAST_RTF and not too_long:
            self._switch(slow=False, rtf=rtf)
            # Partials resume at the pace the decoder affords now, not the slow one's.
            self._decode_ema = decode_s
            self._metrics.partial_interval_s = max(
                self._opts.partial_interval_s, _PARTIAL_SHARE * decode_s
            )

    def skip_partial(self) -> None:
        """Count a partial decode not run because the decoder is slow."""
        self._metrics.partials_paused += 1

    def behind(self, seconds: float) -> None:
        """A partial is about to decode audio whose end is ``seconds`` behind the ingest."""
        interval = self._metrics.partial_interval_s
        if seconds > interval:
            self._raise_interval(interval * 2, seconds)

    def _switch(self, *, slow: bool, rtf: float) -> None:
        self.slow = slow
        self._metrics.slow_decoder = 1 if slow else 0
        (log.warning if slow else log.info)(
            "partials paused: decoding is slower than the audio"
            if slow
            else "partials resumed: the decoder keeps up again",
            extra={
                "rtf": round(rtf, 3),
                "decode_s": round(self._decode_ema, 3),
                "partials_paused": self._metrics.partials_paused,
            },
        )

    def _tune_interval(self, decode_s: float, finals_waiting: bool) -> None:
        """Keep partial decoding to about a third of the decoder's time."""
        self._decode_ema = (1 - _INTERVAL_EMA) * self._decode_ema + _INTERVAL_EMA * decode_s
        needed = _PARTIAL_SHARE * self._decode_ema
        interval = self._metrics.partial_interval_s
        if needed > interval * 1.1:
            self._raise_interval(needed, 0.0)
        elif not finals_waiting and needed < interval:
            self._metrics.partial_interval_s = max(
                self._opts.partial_interval_s, needed, interval * 0.75
            )

    def _raise_interval(self, wanted: float, behind: float) -> None:
        capped = min(self._opts.partial_interval_max_s, max(self._opts.partial_interval_s, wanted))
        if capped <= self._metrics.partial_interval_s:
            return
        self._metrics.partial_interval_s = capped
        self._metrics.partial_degradations += 1
        log.info(
            "partial interval raised",
            extra={"interval_s": round(capped, 2), "behind_s": round(behind, 2)},
        )
