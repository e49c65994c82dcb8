"""Realtime decode scheduling: one decode at a time, finals first.

:meth:`DecodeScheduler.apply` hands each ingest :class:`~agent.transcribe.ingest.Batch` to the
:class:`~agent.transcribe.jobs.DecodeQueue` (utterances, and what waits for the decoder);
:meth:`DecodeScheduler.run` is the decode task. It runs one decode at a time in a worker thread
(:class:`~agent.transcribe.passes.DecodePasses`), taking finals first, then speculative decodes
(started when silence begins), then partials, each on the model and in the language
:class:`~agent.transcribe.routing.LanguageRouter` chooses, and hands results to the
:class:`~agent.transcribe.commit.SegmentCommitter`.

Latency path: speech ends → after ``speculate_s`` (160 ms) of silence the utterance is decoded
speculatively → after ``endpoint_s`` (450 ms) of silence it is final, and the speculative
result is the final result. End of speech → final is therefore about max(endpoint,
speculate + one decode). If speech resumes, the speculative text is shown as a partial,
unless it reads a whole sentence: then the utterance is cut in that pause and the text is its
final (``sentence_cuts``; people take turns with gaps shorter than the endpoint).
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

Languages (``language`` None, an English-only model paired with a multilingual one): see
:mod:`agent.transcribe.routing`. In an English meeting each newcomer costs no multilingual
decode, and the idle multilingual model is released until a decode needs it again
(:class:`~agent.transcribe.standby.MultilingualStandby`). No partials are decoded for a speaker
still being detected.

Partials are decoded every ``partial_interval_s`` of an open utterance (never during a pause,
when the speculation may be about to need the decoder), and only when no final or speculative
decode waits. :class:`~agent.transcribe.pace.DecoderPace` sets the interval from the decoder's
speed and pauses partials and speculative decodes while decoding is slower than the audio.
Finals are never skipped. While paused, the finals queued for one speaker are decoded together
(:mod:`agent.transcribe.jobs`, ``metrics.finals_merged``): a decode costs about the
same whether its window holds one utterance or several (Whisper encodes a padded window, at
least ``realtime_window_s``), so a backlog of n turns costs one decode instead of n. On a bot
VM emulated by TCG, where a decode takes minutes, that is what lets a sentence's finals arrive.
The queue's audio past ``backlog_memory_s`` waits on disk (:mod:`agent.transcribe.backlog`), so
a decoder hours behind does not grow the bot by the meeting's speech.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.bot_config import Task
from agent.transcribe.agreement import (
    Agreement,
    agreed_prefix,
    drop_repeated_words,
    sentence_at_pause,
)
from agent.transcribe.commit import SegmentCommitter
from agent.transcribe.engine import DecodeResult, WhisperEngine
from agent.transcribe.filters import TRUSTED_VOICE_S, judge, repeats_a_phrase
from agent.transcribe.ingest import Batch, Ingest
from agent.transcribe.jobs import DecodeQueue, JobKind
from agent.transcribe.languages import LanguageMemory
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.normalize import hesitations, normalize_text
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.pace import DecoderPace
from agent.transcribe.passes import DecodePasses, Redo
from agent.transcribe.routing import LanguageRouter
from agent.transcribe.standby import Loader
from agent.transcribe.utterance import Utterance

log = logging.getLogger(__name__)

# People say 2–3 words per voiced second; fewer than this many means the decode stopped early.
_MIN_WORDS_PER_VOICED_S = 0.7
_RECHECK_VOICED_S = 2.0
# Drop rules that rest on the model's confidence: a final the short encoder window would lose
# by one of them is decoded again with the full 30 s window, whose figures the rules were set
# on. tiny.en on the mixed conversation: "exhibition." (0.7 s voiced) had no-speech 0.72 and
# log-prob -1.04 in a 10 s window, 0.74 and -0.72 in the 30 s one.
_DOUBT_RULES = frozenset({"no_speech", "low_confidence", "repetition", "known_hallucination"})
# A second or more of voice evidence is decoded again with temperature fallback when a doubt
# rule would drop its final, and when the decode read nothing at all: a second of voice read
# as nothing is a decode to doubt (3.6 s of "uh, um, uh, hm, hm, um" of the stress sample,
# lost under ``empty`` in some runs, reads as those hesitations decoded again).
_RETRY_RULES = _DOUBT_RULES | {"empty"}

# Temperatures of the retry of a doubted final with voice evidence (openai/whisper's defaults
# from 0.2 on; the first pass was greedy at 0.0).
_FALLBACK_TEMPERATURES = (0.2, 0.4, 0.6, 0.8, 1.0)


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
        self._router = LanguageRouter(
            engine,
            languages,
            committer,
            metrics,
            options.multilingual_idle_s,
            language=language,
            task=task,
            multilingual=multilingual,
        )
        self._ingest = ingest
        self._commit = committer
        self._metrics = metrics
        self._opts = options
        self._language = language
        # Where a speculation sits after its pause began (None: no cuts at sentence ends).
        self._speculate_s = options.segmenter.speculate_s if options.sentence_cuts else None
        pace = DecoderPace(options, metrics)
        self._queue = DecodeQueue(
            ingest,
            committer,
            self._router,
            pace,
            metrics,
            options,
            track_speakers=track_speakers,
            id_prefix=id_prefix,
        )
        self._passes = DecodePasses(
            engine, pace, metrics, options, self._queue, language=language, task=task
        )
        self._wake = asyncio.Event()
        self._ingest_done = False
        # The meeting's time as the decoder has got to it (epoch seconds): the end of the
        # utterance it decodes, or the audio heard so far while it waits.
        self._clock = 0.0

    # ---- from the ingest (event loop) ----------------------------------------------------

    def partial_done(self, track_id: str, number: int) -> int:
        """Samples of utterance ``number`` on a track the last partial decode covered."""
        return self._queue.partial_done(track_id, number)

    def ingest_finished(self) -> None:
        """No batches will follow: :meth:`run` returns once the pending finals are out."""
        self._ingest_done = True
        self._wake.set()

    def apply(self, batch: Batch) -> None:
        """Turn a batch's segmenter events into utterances and jobs; wake the decoder."""
        self._queue.apply(batch)
        self._wake.set()

    @property
    def detects_languages(self) -> bool:
        """Whether a multilingual model detects languages (loaded, or released until needed)."""
        return self._router.detects_languages

    def attach_multilingual(self, engine: WhisperEngine, loader: Loader | None = None) -> None:
        """Use ``engine`` for detection and non-English speakers from now on.

        Args:
            engine: The loaded multilingual model.
            loader: Loads it again; given, the model is released while the meeting is English
                (``options.multilingual_idle_s``).
        """
        self._router.attach_multilingual(engine, loader, self._clock)

    # ---- the decode task -----------------------------------------------------------------

    async def run(self) -> None:
        """Decode until the ingest finished and every final is out."""
        try:
            await self._passes.probe()
            while True:
                await self._router.release_if_idle(self._clock)
                job = self._queue.next_job()
                if job is None:
                    if self._ingest_done and self._queue.drained:
                        return
                    self._clock = max(self._clock, self._ingest.audio_clock)
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                await self._run_job(*job)
        finally:
            self._queue.close()

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
        multilingual, language, tentative = self._router.route(utt)
        engine = await self._router.engine_of(multilingual, self._clock)
        result = await self._passes.decode(
            kind, engine, audio, language, self._commit.context(utt.track)
        )
        key = self._commit.speaker_key(utt)
        if tentative and kind != "partial":
            unsure = self._router.unsure_in_english(result)
            if unsure and self._router.defers_detection(len(audio) / SAMPLE_RATE):
                self._metrics.detections_deferred += 1
            elif unsure:
                # Unsure in English: detect this speaker's language after all.
                detector = await self._router.detector(self._clock)
                if detector is not None:
                    engine, language = detector, None
                    result = await self._passes.decode(
                        "detect", engine, audio, None, self._commit.context(utt.track)
                    )
            else:
                self._router.settle_english(key)
        self._router.observe(key, language, engine, result)
        if kind == "speculative" and gen == utt.spec_gen and self._doubtful(result, 1.0):
            # Likely the final: check it in the full window during the endpoint wait.
            result = await self._redecode("full_window", utt, result, audio, self._full_window())
        if kind == "partial" and result.words and utt.ended is None:
            self._agree(utt, result, len(audio) / SAMPLE_RATE)
        if kind == "speculative" and gen != utt.spec_gen and utt.ended is None:
            self._sentence_at_pause(utt, result, len(audio) / SAMPLE_RATE)
        await self._handle(kind, utt, result, gen)

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

    def _agree(self, utt: Utterance, result: DecodeResult, audio_s: float) -> None:
        """Compare a long utterance's hypothesis with its previous one; cut what agrees."""
        previous, utt.hypothesis = utt.hypothesis, drop_repeated_words(result.words, utt.repeated)
        if utt.agreed is not None or not previous:
            return
        self._cut(utt, result, agreed_prefix(previous, utt.hypothesis, audio_s))

    def _sentence_at_pause(self, utt: Utterance, result: DecodeResult, audio_s: float) -> None:
        """Cut at the pause a speculative decode covered when it read a whole sentence.

        Speech resumed before the endpoint (``Resume`` bumped the generation); see
        :func:`~agent.transcribe.agreement.sentence_at_pause`.
        """
        if utt.agreed is not None or self._speculate_s is None:
            return
        pause_at_s = audio_s - self._speculate_s
        self._cut(utt, result, sentence_at_pause(result.text, result.stats, pause_at_s, audio_s))

    def _cut(self, utt: Utterance, result: DecodeResult, agreement: Agreement | None) -> None:
        """Ask the ingest to cut ``utt`` where ``agreement`` says (None: nothing to cut).

        Its words become the final of the part before, emitted when that part ends
        (:class:`~agent.transcribe.jobs.DecodeQueue`).
        """
        if agreement is None:
            return
        first = utt.start_sample + round(agreement.cut_from * SAMPLE_RATE)
        last = utt.start_sample + round(agreement.cut_to * SAMPLE_RATE)
        utt.agreed = (agreement, result, first, last)
        self._ingest.commit_at(utt.track, utt.number, first, last)

    async def _final(self, utt: Utterance, result: DecodeResult) -> None:
        self._queue.forget(utt)
        assert utt.ended is not None  # noqa: S101 - finals exist only for ended utterances
        voiced = utt.ended.voiced_s
        if voiced >= _RECHECK_VOICED_S and len(result.text.split()) < (
            _MIN_WORDS_PER_VOICED_S * voiced
        ):
            # Too few words for the voice heard: Whisper ended early (see module docstring).
            recheck = Redo(without_timestamps=False, window_s=self._opts.realtime_window_s)
            again = await self._redecode("recheck", utt, result, utt.ended.audio, recheck)
            if len(again.text.split()) > len(result.text.split()):
                result = again
        if self._doubtful(result, voiced):
            # Doubtful in the short window: only Whisper's own 30 s window may drop it.
            result = await self._redecode(
                "full_window", utt, result, utt.ended.audio, self._full_window()
            )
        if (
            utt.ended.evidence_s >= TRUSTED_VOICE_S
            and judge(result.text, result.stats, voiced).dropped in _RETRY_RULES
        ):
            # A second or more of voice the model doubts or read as nothing: decode again with
            # temperature fallback (openai/whisper's rule) and keep the more confident text;
            # the judge then keeps it on the evidence (``agent.transcribe.filters``). Where
            # the first read nothing, hesitations read again are kept too (counted as such).
            fallback = self._full_window(_FALLBACK_TEMPERATURES)
            again = await self._redecode("fallback", utt, result, utt.ended.audio, fallback)
            if normalize_text(again.text) and (
                again.stats.avg_logprob > result.stats.avg_logprob
                or not normalize_text(result.text)
            ):
                result = again
            elif hesitations(again.text) and not normalize_text(result.text):
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

    def _full_window(self, temperatures: tuple[float, ...] = (0.0,)) -> Redo:
        """A decode again in Whisper's own 30 s window."""
        return Redo(self._opts.realtime_without_timestamps, None, temperatures)

    async def _redecode(
        self,
        kind: str,
        utt: Utterance,
        first: DecodeResult,
        audio: npt.NDArray[np.float32],
        redo: Redo,
    ) -> DecodeResult:
        """Decode an utterance's audio again, in the language its first decode used."""
        language = self._language or first.language
        engine = await self._router.engine_of(self._router.multilingual_for(language), self._clock)
        return await self._passes.decode(
            kind, engine, audio, language, self._commit.context(utt.track), redo
        )
