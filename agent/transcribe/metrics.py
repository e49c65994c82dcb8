"""Counters one transcriber keeps about itself, readable at any time as a flat dict.

Plain per-instance numbers, no global registry: the agent exports :meth:`snapshot` wherever it
publishes metrics (Prometheus gauges, the bench's JSON lines, logs).
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TranscribeMetrics:
    """What a tier did so far.

    Attributes:
        frames_in: Audio frames accepted.
        audio_seconds_in: Seconds of audio accepted (all tracks summed).
        utterances: Utterances the VAD opened.
        utterances_discarded: Utterances closed with too little speech to decode (a click, a
            cough; ``SegmenterOptions.min_speech_s``).
        finals: Final segments emitted (non-empty).
        partials: Partial segments emitted.
        partials_skipped: Partial hypotheses not emitted because the consumer lagged.
        decodes: Decodes run, by kind (``final``, ``speculative``, ``partial``, ``detect`` (a
            tentative English decode redone on the multilingual model), ``recheck``
            (a final decoded again with timestamps), ``deferred``).
        decode_seconds: Wall seconds spent decoding.
        encoded_s: Seconds of encoder window decoded, by kind (a decode in Whisper's full
            window counts 30 s): the encoder is most of a realtime decode's cost, so this is
            where the CPU goes (``encoded_seconds_partial``…).
        speculation_hits: Finals taken from a decode started when silence began.
        speculation_misses: Speculative decodes made stale by speech resuming.
        dropped: Decoded texts dropped, by rule (``no_speech``, ``known_hallucination``…).
        partial_interval_s: Current audio interval between partial decodes.
        partial_degradations: Times the interval grew because decoding fell behind.
        slow_decoder: 1 while decoding is slower than the audio and partials are paused
            (``agent.transcribe.pace``), else 0.
        partials_paused: Partial decodes skipped because the decoder was slow.
        finals_merged: Ended utterances decoded together with the one before them (a slow
            decoder's backlog, see ``agent.transcribe.decoding``).
        finals_spilled: Queued finals whose audio went to disk because the queue held more
            than ``TranscribeOptions.backlog_memory_s`` (``agent.transcribe.backlog``).
        backlog_s: Seconds of audio of the finals waiting for the decoder, now.
        backlog_spilled_s: …of which on disk.
        final_delays_s: Recent delays from speech end (frame clock, as ingested) to emission.
        multilingual_releases: Times the idle multilingual model was released
            (``agent.transcribe.standby``).
        multilingual_loads: Times it was loaded again because a decode needed it.
        clock_reanchors: Times a track's sample → epoch mapping was moved back onto its frames'
            stamps because the two had drifted apart with no gap between frames (a capture
            whose audio clock is not the wall clock's, ``agent.transcribe.ingest``).
        detections_deferred: Unsure English decodes of a new speaker's utterance too short to
            detect a language from; kept as English, the speaker's language left open.
        agreement_commits: Finals committed inside a long utterance from the words two
            hypotheses agreed on (``agent.transcribe.agreement``).
        sentence_cuts: Utterances cut at a pause shorter than the endpoint whose speculative
            decode read a whole sentence (``agent.transcribe.agreement.sentence_at_pause``).
        voice_evidence_s: Seconds of audio (all tracks) an independent test calls voice: the
            VAD's probability at a low threshold and a level well above the track's own noise
            floor (``agent.transcribe.segmenter``, "Voice evidence").
        unaccounted_voice_s: Seconds of that voice evidence that ended in no final text, by
            the rule that lost them: ``vad_closed`` (no utterance opened), ``too_short``
            (discarded as a click), a drop rule of ``agent.transcribe.filters.judge``
            (``no_speech``, ``no_voice``, …), ``sparse_text`` (a final with far fewer words
            than the evidence: the part not covered, at 0.7 words per second).
        hesitation_voice_s: Seconds of voice evidence whose final the decoder read as
            hesitations only (``Um...``, dropped by the ``hesitation`` rule: transcripts
            leave them out), at most 1/0.7 s per hesitation; the rest of such an utterance's
            evidence is unaccounted under ``hesitation``.
    """

    frames_in: int = 0
    audio_seconds_in: float = 0.0
    utterances: int = 0
    utterances_discarded: int = 0
    finals: int = 0
    partials: int = 0
    partials_skipped: int = 0
    decodes: Counter[str] = field(default_factory=Counter)
    decode_seconds: float = 0.0
    encoded_s: dict[str, float] = field(default_factory=dict)
    speculation_hits: int = 0
    speculation_misses: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    partial_interval_s: float = 0.0
    partial_degradations: int = 0
    slow_decoder: int = 0
    partials_paused: int = 0
    final_delays_s: deque[float] = field(default_factory=lambda: deque(maxlen=1000))
    finals_merged: int = 0
    finals_spilled: int = 0
    backlog_s: float = 0.0
    backlog_spilled_s: float = 0.0
    multilingual_releases: int = 0
    multilingual_loads: int = 0
    detections_deferred: int = 0
    clock_reanchors: int = 0
    agreement_commits: int = 0
    sentence_cuts: int = 0
    voice_evidence_s: float = 0.0
    unaccounted_voice_s: dict[str, float] = field(default_factory=dict)
    hesitation_voice_s: float = 0.0

    def lose(self, rule: str, seconds: float, **where: object) -> None:
        """Count voice evidence that ended in no text, and log it (never silently)."""
        if seconds <= 0:
            return
        self.unaccounted_voice_s[rule] = self.unaccounted_voice_s.get(rule, 0.0) + seconds
        log.warning(
            "voice without text",
            extra={
                "rule": rule,
                "seconds": round(seconds, 3),
                "unaccounted_voice_seconds": round(sum(self.unaccounted_voice_s.values()), 3),
                **where,
            },
        )

    def snapshot(self) -> dict[str, float]:
        """Flat ``name → value`` view (``decodes_final``, ``dropped_no_speech``…)."""
        out: dict[str, float] = {
            "frames_in": self.frames_in,
            "audio_seconds_in": round(self.audio_seconds_in, 3),
            "utterances": self.utterances,
            "utterances_discarded": self.utterances_discarded,
            "finals": self.finals,
            "partials": self.partials,
            "partials_skipped": self.partials_skipped,
            "decode_seconds": round(self.decode_seconds, 3),
            "speculation_hits": self.speculation_hits,
            "speculation_misses": self.speculation_misses,
            "partial_interval_s": self.partial_interval_s,
            "partial_degradations": self.partial_degradations,
            "finals_merged": self.finals_merged,
            "finals_spilled": self.finals_spilled,
            "backlog_s": self.backlog_s,
            "backlog_spilled_s": self.backlog_spilled_s,
            "slow_decoder": self.slow_decoder,
            "partials_paused": self.partials_paused,
            "multilingual_releases": self.multilingual_releases,
            "multilingual_loads": self.multilingual_loads,
            "detections_deferred": self.detections_deferred,
            "clock_reanchors": self.clock_reanchors,
            "agreement_commits": self.agreement_commits,
            "sentence_cuts": self.sentence_cuts,
            "voice_evidence_seconds": round(self.voice_evidence_s, 3),
            "unaccounted_voice_seconds": round(sum(self.unaccounted_voice_s.values()), 3),
            "hesitation_voice_seconds": round(self.hesitation_voice_s, 3),
        }
        out.update(
            {
                f"unaccounted_voice_seconds_{rule}": round(s, 3)
                for rule, s in self.unaccounted_voice_s.items()
            }
        )
        out.update({f"decodes_{kind}": n for kind, n in self.decodes.items()})
        out.update({f"encoded_seconds_{kind}": round(s, 3) for kind, s in self.encoded_s.items()})
        out.update({f"dropped_{rule}": n for rule, n in self.dropped.items()})
        return out
