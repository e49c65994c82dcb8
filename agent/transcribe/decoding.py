"""Realtime decode scheduling: one decode at a time, finals first.

:meth:`DecodeScheduler.apply` turns each ingest :class:`~agent.transcribe.ingest.Batch` into
utterances and decode jobs; :meth:`DecodeScheduler.run` is the decode task. It runs one decode
at a time in a worker thread, picking finals first, then speculative decodes (started when
silence begins), then partials.

Latency path: speech ends → after ``speculate_s`` (160 ms) of silence the utterance is decoded
speculatively → after ``endpoint_s`` (450 ms) of silence it is final, and the speculative
result is the final result. End of speech → final is therefore about max(endpoint,
speculate + one decode). If speech resumes, the speculative text is shown as a partial.
Realtime decodes encode the utterance plus 1 s, at least ``realtime_window_s`` (15 s), not
Whisper's padded 30 s (``agent.transcribe.engine``): a decode of tiny.en then takes a half to
a quarter of the time, so the final is there about when the endpoint is. A
result one of the confidence rules would drop (``_DOUBT_RULES``) is decoded again in the full
window first, during the endpoint wait when it came from a speculation.

A final whose text is far too short for the voice the VAD heard (under
``_MIN_WORDS_PER_VOICED_S`` words per voiced second over at least ``_RECHECK_VOICED_S``) is
decoded again with timestamp tokens before it is committed. Decoding without timestamps, Whisper
often ends its text after the first speaker of a window: tiny.en on 0.5 s of one voice, a gap
and a 22 s monologue of another wrote "No." (1 word for 59); with timestamps it wrote all 59.
That early end is what made monologues that followed another speaker vanish (issue 12).

Languages (``language`` None, an English-only model paired with a multilingual one): a
speaker's utterances are decoded by the multilingual model, which detects their language,
until it is locked (:class:`~agent.transcribe.languages.LanguageMemory`); English speakers then
go to the fast English model, the others stay on the multilingual one. Once two speakers are
locked to English, a new speaker is tried on the English model first and sent to detection
only when that decode is unsure (``_FOREIGN_LOGPROB``) or loops and the utterance is long
enough to tell a language by (``_DETECT_MIN_AUDIO_S``): in an English meeting each
newcomer then costs no multilingual decode, and the idle multilingual model is released until
a decode needs it again (:class:`~agent.transcribe.standby.MultilingualStandby`). No partials
are decoded for a speaker still being detected.

Partials are decoded every ``partial_interval_s`` of an open utterance (never during a pause,
when the speculation may be about to need the decoder), and only when no final or speculative
decode waits. :class:`~agent.transcribe.pace.DecoderPace` sets the interval from the decoder's
speed and pauses partials and speculative decodes while decoding is slower than the audio.
Finals are never skipped. While paused, the finals queued for one speaker are decoded together,
up to ``_MERGE_MAX_S`` of their track's audio (gaps kept as silence, so times stay true), as
one segment under the first one's id (``metrics.finals_merged``): a decode costs about the
same whether its window holds one utterance or several (Whisper encodes a padded window, at
least ``realtime_window_s``), so a backlog of n turns costs one decode instead of n. On a bot
VM emulated by TCG, where a decode takes minutes, that is what lets a sentence's finals arrive.
The queue's audio past ``backlog_memory_s`` waits on disk (:mod:`agent.transcribe.backlog`), so
a decoder hours behind does not grow the bot by the meeting's speech.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import deque
from collections.abc import Mapping
from typing import Literal

import numpy as np
import numpy.typing as npt

from agent.audio import SAMPLE_RATE
from agent.contracts.bot_config import Task
from agent.transcribe.agreement import agreed_prefix, drop_repeated_words, tail_of
from agent.transcribe.backlog import FinalsBacklog
from agent.transcribe.commit import SegmentCommitter
from agent.transcribe.engine import DecodeOptions, DecodeResult, WhisperEngine
from agent.transcribe.filters import TRUSTED_VOICE_S, judge, repeats_a_phrase
from agent.transcribe.ingest import Batch, Ingest
from agent.transcribe.languages import LanguageMemory
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.normalize import normalize_text
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.pace import PROBE_SECONDS, DecoderPace
from agent.transcribe.segmenter import (
    UNHEARD_MIN_S,
    Discarded,
    Ended,
    Resume,
    Speculate,
    Started,
)
from agent.transcribe.standby import Loader, MultilingualStandby
from agent.transcribe.utterance import Utterance
from agent.transcribe.vad import WINDOW

log = logging.getLogger(__name__)

# A new speaker in a meeting whose speakers all spoke English is tried on the English model
# first; a decode this unsure (or looping) is taken as another language and detected on the
# multilingual one. tiny.en on real speech: English -0.05…-0.58, Spanish/French/German/
# Chinese clips -0.57…-1.83 (the -0.57 one looping, compression ratio > 2.2).
_FOREIGN_LOGPROB = -0.5
_FOREIGN_COMPRESSION = 2.2
# …unless the utterance is shorter than this (seconds of audio): a lone "No." or "Six." is
# unsure in English because it is short, not foreign, and detecting a language from it loaded
# the released multilingual model for nothing (the soak's guests: the tree's peaks, and a
# short answer's final 5 s late). The speaker stays untried; their next longer one decides.
_DETECT_MIN_AUDIO_S = 1.5
# People say 2–3 words per voiced second; fewer than this many means the decode stopped early.
_MIN_WORDS_PER_VOICED_S = 0.7
_RECHECK_VOICED_S = 2.0
# Drop rules that rest on the model's confidence: a final the short encoder window would lose
# by one of them is decoded again with the full 30 s window, whose figures the rules were set
# on. tiny.en on the mixed conversation: "exhibition." (0.7 s voiced) had no-speech 0.72 and
# log-prob -1.04 in a 10 s window, 0.74 and -0.72 in the 30 s one.
_DOUBT_RULES = frozenset({"no_speech", "low_confidence", "repetition", "known_hallucination"})

# Finals get the wider beam when the start-up probe (one second of silence, the realtime window)
# decodes within this many seconds: tiny.en does in 0.1-0.2 s on two cores, where beam 5 keeps
# a final within the endpoint wait; a VM under software emulation takes seconds and stays greedy.
_FINAL_BEAM = 5
_FINAL_BEAM_PROBE_S = 0.3

# Temperatures of the retry of a doubted final with voice evidence (openai/whisper's defaults
# from 0.2 on; the first pass was greedy at 0.0).
_FALLBACK_TEMPERATURES = (0.2, 0.4, 0.6, 0.8, 1.0)
# Whisper's own encoder window, seconds (a decode with ``window_s`` None encodes this much).
_FULL_WINDOW_S = 30.0

# A slow decoder's merged finals stay inside Whisper's 30 s window.
_MERGE_MAX_S = 28.0

JobKind = Literal["final", "speculative", "partial"]


class DecodeScheduler:
    """Utterances of one meeting and the single decoder they share.

    Args:
        engine: Loaded model (decodes are serialised here).
        ingest: Where the tracks are (samples heard so far, per-track speaker, index).
        committer: Where results become segments.
        languages: Per-speaker language memory (used when ``language`` is None).
        metrics: Decode counts and times, speculation hits and misses, the partial interval.
        options: Tier knobs (``partial_interval_s``, ``partial_interval_max_s``, beam size …).
        language: Fixed language code, or None to detect it per speaker.
        task: Transcribe, or translate to English.
        track_speakers: Track id → participant name, when the platform tells it that way.
        id_prefix: Prefix of segment ids.
        multilingual: Multilingual model beside an English-only ``engine`` (``language``
            None): it decodes a speaker's utterances until their language is known, then
            those of speakers not speaking English; English ones go to ``engine``.
    """

    def __init__(
        self,
        engine: WhisperEngine,
        ingest: Ingest,
        committer: SegmentCommitter,
        languages: LanguageMemory,
        metrics: TranscribeMetrics,
        options: TranscribeOptions,
        *,
        language: str | None,
        task: Task,
        track_speakers: Mapping[str, str],
        id_prefix: str,
        multilingual: WhisperEngine | None = None,
    ) -> None:
        self._engine = engine
        self._multilingual = MultilingualStandby(metrics, options.multilingual_idle_s)
        if multilingual is not None:
            self._multilingual.attach(multilingual, None, 0.0)
        self._ingest = ingest
        self._commit = committer
        self._languages = languages
        self._metrics = metrics
        self._opts = options
        self._language = language
        self._task = task
        self._track_speakers = track_speakers
        self._id_prefix = id_prefix
        self._decode_options = DecodeOptions(
            beam_size=options.realtime_beam_size,
            without_timestamps=options.realtime_without_timestamps,
            window_s=options.realtime_window_s,
        )
        self._partial_window_s = options.partial_window_s or options.realtime_window_s
        self._pace = DecoderPace(options, metrics)
        self._final_beam = options.final_beam_size or options.realtime_beam_size
        self._utterances: dict[str, dict[int, Utterance]] = {}  # track → number → utterance
        self._finals = FinalsBacklog(options.backlog_memory_s, metrics, options.backlog_dir)
        self._speculative: deque[Utterance] = deque()
        # Last words of each track's latest agreement commit, for the utterance after the cut.
        self._committed_tail: dict[str, tuple[str, ...]] = {}
        self._partial_due: dict[str, tuple[Utterance, npt.NDArray[np.float32]]] = {}
        self._wake = asyncio.Event()
        self._ingest_done = False
        # The meeting's time as the decoder has got to it (epoch seconds): the end of the
        # utterance it decodes, or the audio heard so far while it waits.
        self._clock = 0.0

    # ---- from the ingest (event loop) ----------------------------------------------------

    def partial_done(self, track_id: str, number: int) -> int:
        """Samples of utterance ``number`` on a track the last partial decode covered."""
        utt = self._utterances.get(track_id, {}).get(number)
        return utt.partial_samples if utt else 0

    def ingest_finished(self) -> None:
        """No batches will follow: :meth:`run` returns once the pending finals are out."""
        self._ingest_done = True
        self._wake.set()

    def apply(self, batch: Batch) -> None:
        """Turn a batch's segmenter events into utterances and jobs; wake the decoder."""
        for track_id, event, epoch0 in batch.events:
            utterances = self._utterances.setdefault(track_id, {})
            if isinstance(event, Started):
                self._metrics.utterances += 1
                track = self._ingest.tracks[track_id]
                utterances[event.utterance] = Utterance(
                    track=track_id,
                    number=event.utterance,
                    segment_id=f"{self._id_prefix}-{track.index}-{event.utterance}",
                    start_epoch=epoch0 + event.start_sample / SAMPLE_RATE,
                    start_sample=event.start_sample,
                    speaker_hint=self._track_speakers.get(track_id),
                    repeated=self._committed_tail.pop(track_id, ()),
                )
            elif isinstance(event, Speculate):
                utt = utterances.get(event.utterance)
                if utt is not None:
                    utt.spec_gen += 1
                    utt.spec_audio = event.audio
                    utt.spec_result = None
                    if utt.spec_state != "queued":
                        self._speculative.append(utt)
                    utt.spec_state = "queued"
                    self._partial_due.pop(track_id, None)
            elif isinstance(event, Resume):
                utt = utterances.get(event.utterance)
                if utt is not None and utt.ended is None:
                    self._unspeculate(utt)
            elif isinstance(event, Ended):
                self._ended(track_id, event, batch.wall, batch.lag_s)
            elif isinstance(event, Discarded):
                self._metrics.utterances_discarded += 1
                if event.evidence_s >= UNHEARD_MIN_S:
                    self._metrics.lose("too_short", event.evidence_s, track=track_id)
                utt = utterances.pop(event.utterance, None)
                if utt is not None:
                    self._unspeculate(utt)
                    self._partial_due.pop(track_id, None)
                    if utt.partial_text is not None:
                        self._commit.clear_partial(utt)
        for track_id, number, samples, audio in batch.partials:
            utt = self._utterances.get(track_id, {}).get(number)
            if utt is not None and utt.ended is None and utt.spec_state == "none":
                utt.partial_samples = samples
                if self._pace.slow:
                    self._pace.skip_partial()  # due again one interval later
                else:
                    self._partial_due[track_id] = (utt, audio)
        self._wake.set()

    def _unspeculate(self, utt: Utterance) -> None:
        if utt.spec_state == "queued":
            with contextlib.suppress(ValueError):
                self._speculative.remove(utt)
            utt.spec_state = "none"
        elif utt.spec_state in ("running", "done"):
            self._metrics.speculation_misses += 1
        utt.spec_state = "none"
        utt.spec_gen += 1
        utt.spec_audio = None
        utt.spec_result = None

    def _ended(self, track_id: str, event: Ended, wall: float, lag_s: float) -> None:
        utt = self._utterances.get(track_id, {}).get(event.utterance)
        if utt is None:
            return
        utt.ended = event
        agreed = self._agreed_result(utt, event)
        utt.ended_wall = wall
        utt.ended_lag_s = lag_s
        speech_end_s = (len(event.audio) - event.trail) / SAMPLE_RATE
        silence_heard = (event.trail if event.speculated else 0) / SAMPLE_RATE
        # Wall time when the last voiced sample arrived, as far as this batch tells.
        utt.end_wall = wall - max(0.0, silence_heard) if speech_end_s > 0 else wall
        self._partial_due.pop(track_id, None)
        if agreed is not None:
            # Cut where two hypotheses agreed: their words are the final, no decode needed.
            self._metrics.agreement_commits += 1
            assert utt.agreed is not None  # noqa: S101 - set with its result
            self._committed_tail[track_id] = tail_of(utt.agreed[0])
            if utt.spec_state == "queued":
                with contextlib.suppress(ValueError):
                    self._speculative.remove(utt)
            utt.spec_state = "done"
            utt.spec_gen += 1
            utt.spec_audio = None
            utt.spec_result = agreed
            self._finals.append(utt)
        elif event.speculated and utt.spec_state == "done" and utt.spec_result is not None:
            self._metrics.speculation_hits += 1
            self._finals.append(utt)  # decoded already: the decode task only emits it
        elif event.speculated and utt.spec_state == "running":
            return  # the running speculative decode finishes it
        else:
            if utt.spec_state == "queued":
                with contextlib.suppress(ValueError):
                    self._speculative.remove(utt)
            utt.spec_state = "none"
            utt.spec_gen += 1
            utt.spec_audio = None  # a copy of the ended audio: a queued final holds it once
            utt.spec_result = None
            self._finals.append(utt)

    @staticmethod
    def _agreed_result(utt: Utterance, event: Ended) -> DecodeResult | None:
        """The agreed words as the final of ``event``, when it is the cut they asked for."""
        if utt.agreed is None or event.speculated:
            return None
        agreement, hypothesis, first, last = utt.agreed
        end = event.start_sample + len(event.audio)
        if not first - 2 * WINDOW <= end <= last + 2 * WINDOW:
            return None  # ended some other way (a pause, a speaker change): decode it
        return dataclasses.replace(hypothesis, text=agreement.text, words=agreement.words)

    def _agree(self, utt: Utterance, result: DecodeResult, audio_s: float) -> None:
        """Compare a long utterance's hypothesis with its previous one; cut what agrees."""
        previous, utt.hypothesis = utt.hypothesis, drop_repeated_words(result.words, utt.repeated)
        if utt.agreed is not None or not previous:
            return
        agreement = agreed_prefix(previous, utt.hypothesis, audio_s)
        if agreement is None:
            return
        first = utt.start_sample + round(agreement.cut_from * SAMPLE_RATE)
        last = utt.start_sample + round(agreement.cut_to * SAMPLE_RATE)
        utt.agreed = (agreement, result, first, last)
        self._ingest.commit_at(utt.track, utt.number, first, last)

    # ---- the decode task -----------------------------------------------------------------

    async def run(self) -> None:
        """Decode until the ingest finished and every final is out."""
        try:
            await self._probe()
            while True:
                prior = self._languages.prior()
                await self._multilingual.release_if_idle(self._clock, prior == "en")
                job = self._next_job()
                if job is None:
                    if self._ingest_done and not self._finals and not self._speculative:
                        return
                    self._clock = max(self._clock, self._ingest.audio_clock)
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                await self._run_job(*job)
        finally:
            self._finals.close()

    async def _run_job(
        self, kind: JobKind, utt: Utterance, audio: npt.NDArray[np.float32], gen: int
    ) -> None:
        """Decode one job and hand its result on (the engines it used are not kept)."""
        self._clock = max(self._clock, utt.start_epoch + len(audio) / SAMPLE_RATE)
        if kind == "final" and utt.spec_result is not None:
            await self._final(utt, utt.spec_result)
            return
        if kind == "final":
            utt.final_wall = time.monotonic()
        multilingual, language, tentative = self._route(utt)
        engine = await self._engine_of(multilingual)
        result = await self._decode(kind, engine, audio, language, utt)
        key = self._commit.speaker_key(utt)
        if tentative and kind != "partial":
            unsure = (
                result.stats.avg_logprob < _FOREIGN_LOGPROB
                or result.stats.compression_ratio > _FOREIGN_COMPRESSION
            )
            if unsure and len(audio) < _DETECT_MIN_AUDIO_S * SAMPLE_RATE:
                self._metrics.detections_deferred += 1
            elif unsure:
                # Unsure in English: detect this speaker's language after all.
                detector = await self._multilingual.get(self._clock)
                if detector is not None:
                    engine, language = detector, None
                    result = await self._decode("detect", engine, audio, None, utt)
            else:
                self._languages.observe(key, "en", 1.0)
        if self._language is None and language is None and engine.multilingual:
            self._languages.observe(key, result.language, result.language_probability)
        if kind == "speculative" and gen == utt.spec_gen and self._doubtful(result, 1.0):
            # Likely the final: check it in the full window during the endpoint wait.
            result = await self._redecode(
                "full_window",
                utt,
                result,
                audio,
                without_timestamps=self._opts.realtime_without_timestamps,
                window_s=None,
            )
        if kind == "partial" and result.words and utt.ended is None:
            self._agree(utt, result, len(audio) / SAMPLE_RATE)
        await self._handle(kind, utt, result, gen)

    async def _engine_of(self, multilingual: bool) -> WhisperEngine:
        """The English (or only) engine, or the multilingual one, loaded again if released."""
        if multilingual:
            engine = await self._multilingual.get(self._clock)
            if engine is not None:
                return engine
        return self._engine

    async def _decode(
        self,
        kind: str,
        engine: WhisperEngine,
        audio: npt.NDArray[np.float32],
        language: str | None,
        utt: Utterance,
    ) -> DecodeResult:
        options = self._decode_options
        if kind == "partial":
            options = dataclasses.replace(options, window_s=self._partial_window_s)
        if kind == "partial" and self._agreeing(len(audio)):
            options = dataclasses.replace(options, word_timestamps=True, single_pass=True)
        elif kind in ("final", "speculative", "detect"):
            options = dataclasses.replace(options, beam_size=self._beam_for_finals())
        result = await asyncio.to_thread(
            engine.decode,
            audio,
            language=language,
            task=self._task,
            options=options,
            prompt=self._commit.context(utt.track),
        )
        self._account(kind, result, audio)
        return result

    async def _probe(self) -> None:
        """Learn the decoder's speed on a second of silence before the first utterance."""
        if not self._opts.partials:
            return
        audio = np.zeros(round(PROBE_SECONDS * SAMPLE_RATE), dtype=np.float32)
        result = await asyncio.to_thread(
            self._engine.decode,
            audio,
            language=self._language or "en",
            task=self._task,
            options=self._decode_options,
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

    def _beam_for_finals(self) -> int:
        """The finals' beam now: greedy while the decoder is slower than the audio."""
        return self._opts.realtime_beam_size if self._pace.slow else self._final_beam

    def _account(
        self, kind: str, result: DecodeResult, audio: npt.NDArray[np.float32] | None
    ) -> None:
        """Count a decode; ``audio`` None: audio decoded before (its time counts, not it)."""
        self._metrics.decodes[kind] += 1
        self._metrics.decode_seconds += result.seconds
        window_s = _FULL_WINDOW_S if result.window_s is None else result.window_s
        self._metrics.encoded_s[kind] = self._metrics.encoded_s.get(kind, 0.0) + window_s
        audio_s = 0.0 if audio is None else len(audio) / SAMPLE_RATE
        self._pace.observe(result.seconds, audio_s, finals_waiting=bool(self._finals))

    @property
    def detects_languages(self) -> bool:
        """Whether a multilingual model detects languages (loaded, or released until needed)."""
        return self._multilingual.available

    def attach_multilingual(self, engine: WhisperEngine, loader: Loader | None = None) -> None:
        """Use ``engine`` for detection and non-English speakers from now on.

        Args:
            engine: The loaded multilingual model.
            loader: Loads it again; given, the model is released while the meeting is English
                (``options.multilingual_idle_s``).
        """
        if self._language is None and self._task is Task.TRANSCRIBE:
            self._multilingual.attach(engine, loader, self._clock)

    def _route(self, utt: Utterance) -> tuple[bool, str | None, bool]:
        """Choose the model that decodes ``utt`` and its language.

        Returns whether the multilingual model decodes it (else the English one), the language
        (None: detect it), and whether the language is only the meeting's so far (tentative:
        checked on the result).
        """
        if self._language is not None:
            return False, self._language, False
        known = self._languages.language_for(self._commit.speaker_key(utt))
        if known is not None or not self._multilingual.available:
            return self._multilingual_for(known), known, False
        if self._task is Task.TRANSCRIBE and self._languages.prior() == "en":
            # Everyone so far spoke English: try the fast English model first.
            return False, "en", True
        return True, None, False

    def _multilingual_for(self, language: str | None) -> bool:
        """Whether ``language`` needs the multilingual model (all but English transcription)."""
        if not self._multilingual.available:
            return False
        return not (language == "en" and self._task is Task.TRANSCRIBE)

    def _next_job(self) -> tuple[JobKind, Utterance, npt.NDArray[np.float32], int] | None:
        if self._finals:
            utt = self._finals.popleft()
            if self._pace.slow and utt.spec_result is None:
                utt = self._merge_queued(utt)
            ended = utt.ended
            assert ended is not None  # noqa: S101 - only ended utterances are queued
            return ("final", utt, ended.audio, utt.spec_gen)
        if self._pace.slow:
            # Speculation only saves the last part of the endpoint wait; a slow decoder waits
            # for the end instead (the queued ones become finals there), and skips partials.
            self._speculative = deque(u for u in self._speculative if u.spec_state == "queued")
            for _ in self._partial_due:
                self._pace.skip_partial()
            self._partial_due.clear()
            return None
        while self._speculative:
            utt = self._speculative.popleft()
            if utt.spec_state == "queued" and utt.spec_audio is not None:
                utt.spec_state = "running"
                return ("speculative", utt, utt.spec_audio, utt.spec_gen)
        while self._partial_due:
            track_id = next(iter(self._partial_due))
            utt, audio = self._partial_due.pop(track_id)
            if self._multilingual.available and self._route(utt)[1] is None:
                # The speaker's language is still being detected: a partial would cost a
                # multilingual decode (2-3 times tiny.en's) that only delays their final.
                continue
            self._maybe_degrade(utt, len(audio))
            return ("partial", utt, audio, utt.spec_gen)
        return None

    def _merge_queued(self, first: Utterance) -> Utterance:
        """``first`` with the queued finals of its track and speaker that follow it.

        Each one's audio lands at its own place on the track (the gaps between them silence),
        up to ``_MERGE_MAX_S``; the merged ones leave the queue and their partials are cleared.
        """
        assert first.ended is not None  # noqa: S101 - only ended utterances are queued
        speaker = self._commit.speaker_key(first)
        merged = [first]
        end = first.ended.start_sample + len(first.ended.audio)
        while (nxt := self._finals.peek()) is not None:
            nxt_ended = nxt.ended
            if (
                nxt.track != first.track
                or nxt_ended is None
                or nxt.spec_result is not None
                or self._commit.speaker_key(nxt) != speaker
            ):
                break
            nxt_end = nxt_ended.start_sample + len(nxt_ended.audio)
            if nxt_end - first.ended.start_sample > _MERGE_MAX_S * SAMPLE_RATE:
                break
            merged.append(self._finals.popleft())
            end = max(end, nxt_end)
        if len(merged) == 1:
            return first
        audio = np.zeros(end - first.ended.start_sample, dtype=np.float32)
        for utt in merged:
            assert utt.ended is not None  # noqa: S101 - checked above
            at = utt.ended.start_sample - first.ended.start_sample
            audio[at : at + len(utt.ended.audio)] = utt.ended.audio
        last = merged[-1]
        assert last.ended is not None  # noqa: S101 - checked above
        for utt in merged[1:]:
            self._utterances.get(utt.track, {}).pop(utt.number, None)
            if utt.partial_text is not None:
                self._commit.clear_partial(utt)
        self._metrics.finals_merged += len(merged) - 1
        ended = Ended(
            utterance=first.number,
            start_sample=first.ended.start_sample,
            audio=audio,
            speculated=False,
            voiced_s=sum(utt.ended.voiced_s for utt in merged if utt.ended is not None),
            evidence_s=sum(utt.ended.evidence_s for utt in merged if utt.ended is not None),
            lead=first.ended.lead,
            trail=last.ended.trail,
        )
        return dataclasses.replace(first, ended=ended, end_wall=last.end_wall)

    def _agreeing(self, samples: int) -> bool:
        """Whether an open utterance this long is decoded for agreement."""
        after = self._opts.agreement_after_s
        return after is not None and samples >= after * SAMPLE_RATE

    async def _handle(self, kind: JobKind, utt: Utterance, result: DecodeResult, gen: int) -> None:
        if kind == "final":
            await self._final(utt, result)
        elif kind == "speculative":
            if gen != utt.spec_gen:
                if utt.ended is None:
                    await self._commit.partial(utt, result)
            elif utt.ended is not None and utt.ended.speculated:
                self._metrics.speculation_hits += 1
                await self._final(utt, result)
            else:
                utt.spec_state = "done"
                utt.spec_result = result
                await self._commit.partial(utt, result)
        elif utt.ended is None:
            await self._commit.partial(utt, result)

    async def _final(self, utt: Utterance, result: DecodeResult) -> None:
        self._utterances.get(utt.track, {}).pop(utt.number, None)
        assert utt.ended is not None  # noqa: S101 - finals exist only for ended utterances
        voiced = utt.ended.voiced_s
        if voiced >= _RECHECK_VOICED_S and len(result.text.split()) < (
            _MIN_WORDS_PER_VOICED_S * voiced
        ):
            # Too few words for the voice heard: Whisper ended early (see module docstring).
            again = await self._redecode(
                "recheck",
                utt,
                result,
                utt.ended.audio,
                without_timestamps=False,
                window_s=self._opts.realtime_window_s,
            )
            if len(again.text.split()) > len(result.text.split()):
                result = again
        if self._doubtful(result, voiced):
            # Doubtful in the short window: only Whisper's own 30 s window may drop it.
            result = await self._redecode(
                "full_window",
                utt,
                result,
                utt.ended.audio,
                without_timestamps=self._opts.realtime_without_timestamps,
                window_s=None,
            )
        if (
            utt.ended.evidence_s >= TRUSTED_VOICE_S
            and judge(result.text, result.stats, voiced).dropped in _DOUBT_RULES
        ):
            # A second or more of voice the model doubts: decode again with temperature
            # fallback (openai/whisper's rule) and keep the more confident text; the judge
            # then keeps it on the evidence (``agent.transcribe.filters``).
            again = await self._redecode(
                "fallback",
                utt,
                result,
                utt.ended.audio,
                without_timestamps=self._opts.realtime_without_timestamps,
                window_s=None,
                temperatures=_FALLBACK_TEMPERATURES,
            )
            if normalize_text(again.text) and (
                again.stats.avg_logprob > result.stats.avg_logprob
                or not normalize_text(result.text)
            ):
                result = again
        await self._commit.final(utt, result)

    @staticmethod
    def _doubtful(result: DecodeResult, voiced_s: float) -> bool:
        """Whether a short-window result needs the full window to be believed.

        It does when a confidence rule would drop it (``_DOUBT_RULES``) or when it repeats a
        phrase (the decoder ran past the end of the audio in the short window).
        """
        return result.window_s is not None and (
            judge(result.text, result.stats, voiced_s).dropped in _DOUBT_RULES
            or repeats_a_phrase(result.text)
        )

    async def _redecode(
        self,
        kind: str,
        utt: Utterance,
        first: DecodeResult,
        audio: npt.NDArray[np.float32],
        *,
        without_timestamps: bool,
        window_s: float | None,
        temperatures: tuple[float, ...] = (0.0,),
    ) -> DecodeResult:
        """Decode an utterance's audio again, in the language its first decode used."""
        language = self._language or first.language
        engine = await self._engine_of(self._multilingual_for(language))
        again = await asyncio.to_thread(
            engine.decode,
            audio,
            language=language,
            task=self._task,
            options=DecodeOptions(
                beam_size=self._beam_for_finals(),
                without_timestamps=without_timestamps,
                window_s=window_s,
                temperatures=temperatures,
            ),
            prompt=self._commit.context(utt.track),
        )
        self._account(kind, again, None)
        return again

    # ---- partial rate --------------------------------------------------------------------

    def _maybe_degrade(self, utt: Utterance, partial_samples: int) -> None:
        heard = self._ingest.tracks[utt.track].segmenter.samples_seen - utt.start_sample
        self._pace.behind((heard - partial_samples) / SAMPLE_RATE)
