"""Knobs of both tiers, one frozen object the agent builds from its settings."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.contracts.bot_config import Task
from agent.contracts.whisper_models import DEFAULT_MODEL, deferred_model_for
from agent.transcribe.segmenter import SegmenterOptions


class TranscribeOptions(BaseModel):
    """How to transcribe; every duration is seconds of audio.

    Attributes:
        model: Registry name (``tiny.en``, ``base``) or a local CTranslate2 directory.
        deferred_model: Model of the deferred pass; None picks ``model`` for English and
            ``base`` when the language is not English, unknown, or the task is translate.
        models_dir: Cache of assembled models (the joined ``base``).
        cpu_threads: CTranslate2 threads per decode.
        vad: ``silero`` (default, measured) or ``energy``.
        segmenter: Utterance cutting thresholds.
        partials: Decode partial hypotheses while someone speaks.
        partial_interval_s: Audio between two partial decodes of one utterance.
        partial_interval_max_s: Ceiling the interval degrades to when the CPU falls behind.
        realtime_beam_size: Beam of the realtime tier's partial and agreement decodes (1:
            greedy, measured best for latency).
        final_beam_size: Beam of its finals (and of the speculative decodes that become
            them). None: chosen at start from the decoder's measured speed
            (``agent.transcribe.passes``, ``_FINAL_BEAM``; greedy when partials are off, as
            nothing is probed, and while the decoder is slower than the audio): tiny.en on
            the conversational set, 15 s window, made 0.156 WER at beam 5 and 0.175 at beam
            1 for 1.65x the decode time; ``base`` greedy also 0.156, at 2.3x.
        realtime_without_timestamps: Decode utterances without timestamp tokens (one text per
            utterance; fewer tokens to generate).
        realtime_window_s: Least encoder window of realtime decodes (the utterance plus 1 s,
            at least this long; ``agent.transcribe.engine``); None: Whisper's full 30 s.
            tiny.en streaming the 14 bench clips (256 words): 15 errors at 30 s, 17 at 15 s,
            27 at 10 s (a phrase repeated past the end of the audio, even with those rechecked).
        partial_window_s: Least encoder window of partial decodes and agreement hypotheses;
            None: ``realtime_window_s``. A shorter one is cheaper, but not the default: the
            conversational set as one mixed track at 1x (``bench.stress --cases 0``, load
            12-17) made 0.668 CPU s per audio s at 15 s, WER 0.240, end of utterance to final
            p50/p95 0.36/0.44 s, and 0.594, 0.231, 0.37/0.42 s at 8 s; yet at 8 s the stress
            grid's ``triple-025`` (no speaker signal) got an agreement commit holding the end
            of one speaker and three words of the next, every run, and at 15 s none.
        deferred_beam_size: Beam of the deferred pass.
        context_words: Words of the track's previous final passed as prompt (0: none). Off by
            default: on the bench meeting 40 words cut tiny.en's errors from 12 to 10 of 256
            words (not significant), and in translation a German name prompt made the next
            utterance come out as names only.
        frame_queue_size: Frames buffered before ``feed`` waits (backpressure, never drop).
        segment_queue_size: Segments buffered for the consumer; partials are skipped, finals
            wait, when it is full.
        language_lock_probability: Detection confidence that fixes a speaker's language.
        multilingual_idle_s: Seconds of meeting audio without a multilingual decode after
            which a bot with no ``language`` releases its multilingual model while every
            locked speaker speaks English (about 180 MB; ``agent.transcribe.standby``); it is
            loaded again when a decode needs it. None: keep it loaded.
        backlog_memory_s: Seconds of audio (all tracks) the finals waiting for a decoder that
            fell behind keep in memory; the rest waits on disk (``agent.transcribe.backlog``).
            120 s is 7.7 MB; a decoder that keeps up never queues more than a few seconds.
        backlog_dir: Where that disk is (the agent's data folder); None: the temporary folder.
        agreement_after_s: Open utterances longer than this commit their stable words as
            finals while the speaker goes on (LocalAgreement-2, ``agent.transcribe.agreement``):
            without a pause or a speaker change to end it, a final never lags its speech by
            more than about two hops. None: only pauses, speaker changes and the hard cap end
            an utterance.
        agreement_hop_s: Audio between two hypotheses of such an utterance.
        sentence_cuts: Cut an utterance at a pause shorter than the endpoint when the
            speculative decode of that pause reads a whole sentence (terminal punctuation,
            confident): that decode is its final, the voice after the pause goes on as the
            next utterance (``agent.transcribe.agreement.sentence_at_pause``). False: such a
            pause ends nothing, and the words before it wait for agreement.
        tracks_per_participant: Each remote track carries one participant whom the platform
            does not name (Google Meet): tracks are never cut at active-speaker changes, and
            are named from the indicators (``agent.transcribe.speakers.TrackNames``). False:
            a track without a name is a mixed one (Zoom, Teams).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = DEFAULT_MODEL
    deferred_model: str | None = None
    models_dir: Path = Path("./data/models")
    cpu_threads: int = Field(default=2, ge=1, le=64)
    vad: Literal["silero", "energy"] = "silero"
    segmenter: SegmenterOptions = SegmenterOptions()
    partials: bool = True
    partial_interval_s: float = Field(default=2.0, gt=0.2)
    partial_interval_max_s: float = Field(default=8.0, gt=0.2)
    realtime_beam_size: int = Field(default=1, ge=1, le=10)
    final_beam_size: int | None = Field(default=None, ge=1, le=10)
    realtime_without_timestamps: bool = True
    realtime_window_s: float | None = Field(default=15.0, ge=2.0, le=30.0)
    partial_window_s: float | None = Field(default=None, ge=2.0, le=30.0)
    context_words: int = Field(default=0, ge=0, le=200)
    deferred_beam_size: int = Field(default=5, ge=1, le=10)
    frame_queue_size: int = Field(default=256, ge=1)
    segment_queue_size: int = Field(default=1024, ge=1)
    language_lock_probability: float = Field(default=0.8, gt=0, le=1)
    multilingual_idle_s: float | None = Field(default=60.0, gt=0)
    backlog_memory_s: float = Field(default=120.0, gt=0)
    backlog_dir: Path | None = None
    agreement_after_s: float | None = Field(default=2.0, gt=0.5)
    agreement_hop_s: float = Field(default=1.0, ge=0.3)
    sentence_cuts: bool = True
    tracks_per_participant: bool = False

    def deferred_model_for(self, language: str | None, translate: bool) -> str:
        """The model the deferred pass loads for this bot's language and task."""
        task = Task.TRANSLATE if translate else Task.TRANSCRIBE
        return deferred_model_for(self.model, language, task, self.deferred_model)
