"""Realtime tier: streaming transcription of per-track audio frames with faster-whisper.

Two owned tasks do the work:

- the *ingest* task takes frames from a bounded queue (``feed`` waits when it is full, so
  audio is never dropped), runs VAD and the per-track :class:`UtteranceSegmenter` in a worker
  thread, and turns their events into decode jobs;
- the *decode* task runs one decode at a time in a worker thread, picking finals first,
  then speculative decodes (started when silence begins), then partials.

Each track has its own VAD state and segmenter, so two people talking over each other on
separate tracks never end up in one segment. Endpointing counts samples, not wall time.

Latency path: speech ends → after ``speculate_s`` (160 ms) of silence the utterance is decoded
speculatively → after ``endpoint_s`` (450 ms) of silence it is final, and the speculative
result is the final result. End of speech → final is therefore about max(endpoint,
speculate + one decode). If speech resumes, the speculative text is shown as a partial.

Partials are decoded every ``partial_interval_s`` of an open utterance (never during a pause,
when the speculation may be about to need the decoder). The interval stays at least three times
the recent decode time, so partials take at most about a third of the decoder. When decoding falls
behind (finals waiting, or the partial's audio is older than an interval) the interval doubles
up to ``partial_interval_max_s`` (``metrics.partial_degradations``) and shrinks back when the
decoder keeps up. Finals are never skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter, deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Literal

import numpy as np
import numpy.typing as npt

from agent.audio import SAMPLE_RATE, AudioFrame, SpeakerActivity
from agent.contracts.bot_config import Task
from agent.contracts.link import Segment
from agent.transcribe.engine import DecodeOptions, DecodeResult, WhisperEngine
from agent.transcribe.errors import TranscriberClosed
from agent.transcribe.filters import judge
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.segmenter import (
    Discarded,
    Ended,
    Resume,
    SegmenterEvent,
    Speculate,
    Started,
    UtteranceSegmenter,
)
from agent.transcribe.speakers import SpeakerTimeline
from agent.transcribe.vad import EnergyVad, SileroSession, VoiceDetector

log = logging.getLogger(__name__)

# A gap in a track's frames longer than this is silence the segmenter must hear, so an
# utterance whose track went quiet (muted, left) still ends.
_GAP_TOLERANCE_S = 0.1
_MAX_GAP_FILL_S = 1.0
# A live track silent this long (wall clock) while someone is speaking on it gets silence.
_IDLE_AFTER_S = 0.3
# Active-speaker history kept behind the latest final (utterances are at most ~25 s).
_TIMELINE_KEEP_S = 300.0
# Frames stamped within this many seconds of the wall clock come from a live capture.
_LIVE_WITHIN_S = 5.0

# Partial decodes get at most ~1/3 of the decoder: interval ≥ 3 × recent decode time.
_PARTIAL_SHARE = 3.0

JobKind = Literal["final", "speculative", "partial"]


@dataclass(slots=True)
class _Utterance:
    track: str
    number: int
    segment_id: str
    start_epoch: float
    start_sample: int
    speaker_hint: str | None
    spec_state: Literal["none", "queued", "running", "done"] = "none"
    # Bumped by every Speculate/Resume/unspeculated end: a speculative decode whose
    # generation is no longer current is only a partial.
    spec_gen: int = 0
    spec_audio: npt.NDArray[np.float32] | None = None
    spec_result: DecodeResult | None = None
    ended: Ended | None = None
    end_wall: float | None = None
    partial_text: str | None = None
    partial_samples: int = 0


@dataclass(slots=True)
class _Track:
    track_id: str
    index: int
    detector: VoiceDetector
    segmenter: UtteranceSegmenter
    epoch0: float
    expected_next: float
    # Live tracks (frame times close to the wall clock) that stop sending frames mid-utterance
    # get silence synthesised, so the utterance still ends (see _idle_frames).
    live: bool = False
    last_arrival: float = 0.0
    speakers: Counter[str] = field(default_factory=Counter)
    context: str = ""
    utterances: dict[int, _Utterance] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Batch:
    # (track, event, epoch of the track's sample 0 when the event happened)
    events: list[tuple[str, SegmenterEvent, float]]
    partials: list[tuple[str, int, int, npt.NDArray[np.float32]]]
    wall: float


class LanguageMemory:
    """Keeps each speaker's language stable once detection is confident.

    A speaker's language is locked after one utterance detected with probability ≥
    ``lock_probability``, or after three utterances by majority; until then each utterance is
    detected anew.
    """

    def __init__(self, lock_probability: float) -> None:
        self._lock_probability = lock_probability
        self._locked: dict[str, str] = {}
        self._votes: dict[str, Counter[str]] = {}

    def language_for(self, speaker: str) -> str | None:
        """The locked language of ``speaker``, or None while still detecting."""
        return self._locked.get(speaker)

    def observe(self, speaker: str, language: str, probability: float) -> None:
        """Record one detection for ``speaker``."""
        if speaker in self._locked:
            return
        votes = self._votes.setdefault(speaker, Counter())
        votes[language] += 1
        if probability >= self._lock_probability or sum(votes.values()) >= 3:
            self._locked[speaker] = (
                language if probability >= self._lock_probability else votes.most_common(1)[0][0]
            )


class RealtimeTranscriber:
    """Streaming transcriber of one meeting (the ``Transcriber`` protocol, realtime tier).

    Use as ``async with RealtimeTranscriber(...) as t:``; feed frames with :meth:`feed`,
    speaker changes with :meth:`speaker_activity`, read :meth:`segments` concurrently, and
    leave the block (or call :meth:`close`) to flush the last utterances.

    Args:
        engine: Loaded model (shared by whoever needs it; decodes are serialised).
        join_time: Epoch seconds when the bot joined; segment ``start``/``end`` count from it.
        language: Language code, or None to detect it per speaker.
        task: Transcribe, or translate to English (multilingual models only).
        options: Tier knobs.
        vad_session: Loaded Silero model (``options.vad == "silero"``); created when None.
        track_speakers: Track id → participant name, when the platform tells it that way.
        timeline: Active-speaker intervals for mixed tracks; created empty when None.
        id_prefix: Prefix of segment ids (unique per meeting); random when None.

    Raises:
        UnsupportedTranscriptionOptions: The model cannot serve ``language``/``task``.
    """

    def __init__(
        self,
        engine: WhisperEngine,
        *,
        join_time: float,
        language: str | None = None,
        task: Task = Task.TRANSCRIBE,
        options: TranscribeOptions | None = None,
        vad_session: SileroSession | None = None,
        track_speakers: Mapping[str, str] | None = None,
        timeline: SpeakerTimeline | None = None,
        id_prefix: str | None = None,
    ) -> None:
        engine.check(language, task)
        self._engine = engine
        self._join_time = join_time
        self._language = language
        self._task = task
        self._opts = options or TranscribeOptions()
        if self._opts.vad == "silero" and vad_session is None:
            vad_session = SileroSession()
        self._vad_session = vad_session
        self._track_speakers = dict(track_speakers or {})
        self.timeline = timeline or SpeakerTimeline()
        self._id_prefix = id_prefix or f"rt-{uuid.uuid4().hex[:8]}"
        self._languages = LanguageMemory(self._opts.language_lock_probability)
        self.metrics = TranscribeMetrics(partial_interval_s=self._opts.partial_interval_s)

        self._frames: asyncio.Queue[AudioFrame | None] = asyncio.Queue(self._opts.frame_queue_size)
        self._out: asyncio.Queue[Segment | None] = asyncio.Queue(self._opts.segment_queue_size)
        self._tracks: dict[str, _Track] = {}
        self._finals: deque[_Utterance] = deque()
        self._speculative: deque[_Utterance] = deque()
        self._partial_due: dict[str, tuple[_Utterance, npt.NDArray[np.float32]]] = {}
        self._wake = asyncio.Event()
        self._ingest_done = False
        self._closing = False
        self._tasks: list[asyncio.Task[None]] = []
        self._decode_options = DecodeOptions(
            beam_size=self._opts.realtime_beam_size,
            without_timestamps=self._opts.realtime_without_timestamps,
        )
        self._decode_ema = 0.0

    async def __aenter__(self) -> RealtimeTranscriber:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self.close()
        else:
            await self.abort()

    def start(self) -> None:
        """Start the ingest and decode tasks (idempotent)."""
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._ingest_loop(), name="transcribe-ingest"),
            asyncio.create_task(self._decode_loop(), name="transcribe-decode"),
        ]

    async def feed(self, frame: AudioFrame) -> None:
        """Queue one frame; waits while the queue is full (backpressure, nothing dropped).

        Raises:
            TranscriberClosed: After :meth:`close` began.
        """
        if self._closing:
            raise TranscriberClosed("transcriber is closing")
        await self._frames.put(frame)

    def speaker_activity(self, activity: SpeakerActivity) -> None:
        """Record an active-speaker change (names segments of tracks without a speaker)."""
        self.timeline.add(activity)

    async def segments(self) -> AsyncIterator[Segment]:
        """Partial (``completed=False``) and final segments, in emission order, until closed.

        A final with the same ``id`` replaces earlier partials. A partial with empty ``text``
        clears earlier partials whose utterance turned out to be no speech (no final follows).
        Finals always have text.
        """
        while True:
            segment = await self._out.get()
            if segment is None:
                return
            yield segment

    async def close(self) -> None:
        """Flush: end open utterances, decode every pending final, then end :meth:`segments`."""
        if not self._tasks:
            self.start()
        if not self._closing:
            self._closing = True
            await self._frames.put(None)
        try:
            await asyncio.gather(*self._tasks)
        finally:
            await self._out.put(None)

    async def abort(self) -> None:
        """Stop at once: cancel both tasks and await them; pending utterances are lost."""
        self._closing = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(asyncio.QueueFull):
            self._out.put_nowait(None)

    # ---- ingest -------------------------------------------------------------------------

    def _track(self, frame: AudioFrame) -> _Track:
        track = self._tracks.get(frame.track_id)
        if track is None:
            detector: VoiceDetector = (
                self._vad_session.detector() if self._vad_session is not None else EnergyVad()
            )
            track = _Track(
                track_id=frame.track_id,
                index=len(self._tracks),
                detector=detector,
                segmenter=UtteranceSegmenter(self._opts.segmenter),
                epoch0=frame.start_time,
                expected_next=frame.start_time,
            )
            self._tracks[frame.track_id] = track
        return track

    def _analyse(self, frames: list[AudioFrame], partial_every: int, flush: bool) -> _Batch:
        """VAD + segmentation of a batch; runs in a worker thread, the only one touching them."""
        events: list[tuple[str, SegmenterEvent, float]] = []
        for frame in frames:
            track = self._tracks[frame.track_id]
            gap = frame.start_time - track.expected_next
            if gap > _GAP_TOLERANCE_S:
                fill = np.zeros(int(min(gap, _MAX_GAP_FILL_S) * SAMPLE_RATE), dtype=np.float32)
                events += [(track.track_id, e, track.epoch0) for e in self._push(track, fill)]
            if abs(gap) > _GAP_TOLERANCE_S:
                # Re-anchor the sample → epoch mapping on this frame (after a gap, or after
                # synthesised silence that real frames now overlap).
                track.epoch0 = frame.start_time - track.segmenter.samples_pushed / SAMPLE_RATE
            samples = frame.pcm.astype(np.float32) / 32768.0
            events += [(track.track_id, e, track.epoch0) for e in self._push(track, samples)]
            track.expected_next = frame.end_time
        if flush:
            for track in self._tracks.values():
                events += [(track.track_id, e, track.epoch0) for e in track.segmenter.flush()]
        partials: list[tuple[str, int, int, npt.NDArray[np.float32]]] = []
        if partial_every > 0 and not flush:
            for track in self._tracks.values():
                if track.segmenter.pausing:
                    continue  # speech may be ending: leave the decoder to the speculation
                current = track.segmenter.current()
                if current is None:
                    continue
                number, _, audio = current
                utt = track.utterances.get(number)
                done = utt.partial_samples if utt else 0
                if len(audio) - done >= partial_every:
                    partials.append((track.track_id, number, len(audio), audio))
        return _Batch(events, partials, time.monotonic())

    def _push(self, track: _Track, samples: npt.NDArray[np.float32]) -> list[SegmenterEvent]:
        probs = track.detector.process(samples)
        return track.segmenter.push(samples, probs)

    def _idle_frames(self) -> list[AudioFrame]:
        """Silence for live tracks that went quiet mid-utterance (muted, left, stalled)."""
        now = time.monotonic()
        out = []
        for track in self._tracks.values():
            idle = now - track.last_arrival
            if track.live and track.segmenter.speaking and idle > _IDLE_AFTER_S:
                samples = int(min(idle, _MAX_GAP_FILL_S) * SAMPLE_RATE)
                out.append(
                    AudioFrame(track.track_id, track.expected_next,
                               np.zeros(samples, dtype=np.int16))
                )
                track.last_arrival = now
        return out

    async def _ingest_loop(self) -> None:
        try:
            while True:
                frames: list[AudioFrame] = []
                try:
                    async with asyncio.timeout(_IDLE_AFTER_S):
                        first = await self._frames.get()
                except TimeoutError:
                    synthetic = self._idle_frames()
                    if synthetic:
                        self._apply(await asyncio.to_thread(self._analyse, synthetic, 0, False))
                    continue
                stop = first is None
                if first is not None:
                    frames.append(first)
                while not stop and not self._frames.empty():
                    nxt = self._frames.get_nowait()
                    if nxt is None:
                        stop = True
                    else:
                        frames.append(nxt)
                for frame in frames:
                    self.metrics.frames_in += 1
                    self.metrics.audio_seconds_in += frame.duration
                    # Tracks are created and named here, on the loop, so the worker thread
                    # never adds to what the decode side reads.
                    track = self._track(frame)
                    if frame.speaker:
                        track.speakers[frame.speaker] += 1
                    track.last_arrival = time.monotonic()
                    track.live = abs(time.time() - frame.end_time) < _LIVE_WITHIN_S
                every = (
                    int(self.metrics.partial_interval_s * SAMPLE_RATE) if self._opts.partials else 0
                )
                batch = await asyncio.to_thread(self._analyse, frames, every, stop)
                self._apply(batch)
                if stop:
                    return
        finally:
            self._ingest_done = True
            self._wake.set()

    def _apply(self, batch: _Batch) -> None:
        for track_id, event, epoch0 in batch.events:
            track = self._tracks[track_id]
            if isinstance(event, Started):
                self.metrics.utterances += 1
                track.utterances[event.utterance] = _Utterance(
                    track=track_id,
                    number=event.utterance,
                    segment_id=f"{self._id_prefix}-{track.index}-{event.utterance}",
                    start_epoch=epoch0 + event.start_sample / SAMPLE_RATE,
                    start_sample=event.start_sample,
                    speaker_hint=self._track_speakers.get(track_id),
                )
            elif isinstance(event, Speculate):
                utt = track.utterances.get(event.utterance)
                if utt is not None:
                    utt.spec_gen += 1
                    utt.spec_audio = event.audio
                    utt.spec_result = None
                    if utt.spec_state != "queued":
                        self._speculative.append(utt)
                    utt.spec_state = "queued"
                    self._partial_due.pop(track_id, None)
            elif isinstance(event, Resume):
                utt = track.utterances.get(event.utterance)
                if utt is not None and utt.ended is None:
                    self._unspeculate(utt)
            elif isinstance(event, Ended):
                self._ended(track, event, batch.wall)
            elif isinstance(event, Discarded):
                utt = track.utterances.pop(event.utterance, None)
                if utt is not None:
                    self._unspeculate(utt)
                    self._partial_due.pop(track_id, None)
                    if utt.partial_text is not None:
                        self._clear_partial(utt)
        for track_id, number, samples, audio in batch.partials:
            utt = self._tracks[track_id].utterances.get(number)
            if utt is not None and utt.ended is None and utt.spec_state == "none":
                utt.partial_samples = samples
                self._partial_due[track_id] = (utt, audio)
        self._wake.set()

    def _unspeculate(self, utt: _Utterance) -> None:
        if utt.spec_state == "queued":
            with contextlib.suppress(ValueError):
                self._speculative.remove(utt)
            utt.spec_state = "none"
        elif utt.spec_state in ("running", "done"):
            self.metrics.speculation_misses += 1
        utt.spec_state = "none"
        utt.spec_gen += 1
        utt.spec_audio = None
        utt.spec_result = None

    def _ended(self, track: _Track, event: Ended, wall: float) -> None:
        utt = track.utterances.get(event.utterance)
        if utt is None:
            return
        utt.ended = event
        speech_end_s = (len(event.audio) - event.trail) / SAMPLE_RATE
        silence_heard = (event.trail if event.speculated else 0) / SAMPLE_RATE
        # Wall time when the last voiced sample arrived, as far as this batch tells.
        utt.end_wall = wall - max(0.0, silence_heard) if speech_end_s > 0 else wall
        self._partial_due.pop(track.track_id, None)
        if event.speculated and utt.spec_state == "done" and utt.spec_result is not None:
            self.metrics.speculation_hits += 1
            self._finals.append(utt)  # decoded already: the decode task only emits it
        elif event.speculated and utt.spec_state == "running":
            return  # the running speculative decode finishes it
        else:
            if utt.spec_state == "queued":
                with contextlib.suppress(ValueError):
                    self._speculative.remove(utt)
            utt.spec_state = "none"
            utt.spec_gen += 1
            utt.spec_result = None
            self._finals.append(utt)

    # ---- decode -------------------------------------------------------------------------

    def _next_job(self) -> tuple[JobKind, _Utterance, npt.NDArray[np.float32], int] | None:
        if self._finals:
            utt = self._finals.popleft()
            assert utt.ended is not None  # noqa: S101 - only ended utterances are queued
            return ("final", utt, utt.ended.audio, utt.spec_gen)
        while self._speculative:
            utt = self._speculative.popleft()
            if utt.spec_state == "queued" and utt.spec_audio is not None:
                utt.spec_state = "running"
                return ("speculative", utt, utt.spec_audio, utt.spec_gen)
        if self._partial_due:
            track_id = next(iter(self._partial_due))
            utt, audio = self._partial_due.pop(track_id)
            self._maybe_degrade(utt, len(audio))
            return ("partial", utt, audio, utt.spec_gen)
        return None

    def _maybe_degrade(self, utt: _Utterance, partial_samples: int) -> None:
        heard = self._tracks[utt.track].segmenter.samples_seen - utt.start_sample
        behind = (heard - partial_samples) / SAMPLE_RATE
        interval = self.metrics.partial_interval_s
        if behind > interval:
            self._set_partial_interval(interval * 2, behind)

    def _tune_partials(self, decode_seconds: float) -> None:
        """Keep partial decoding to about a third of the decoder's time.

        Partials are the only work that can wait; finals and speculative decodes queue behind
        a running partial, so its share of the decoder is what they pay in latency.
        """
        self._decode_ema = 0.7 * self._decode_ema + 0.3 * decode_seconds
        needed = _PARTIAL_SHARE * self._decode_ema
        interval = self.metrics.partial_interval_s
        if needed > interval * 1.1:
            self._set_partial_interval(needed, 0.0)
        elif not self._finals and needed < interval:
            self.metrics.partial_interval_s = max(
                self._opts.partial_interval_s, needed, interval * 0.75
            )

    def _set_partial_interval(self, wanted: float, behind: float) -> None:
        capped = min(self._opts.partial_interval_max_s, max(self._opts.partial_interval_s, wanted))
        if capped <= self.metrics.partial_interval_s:
            return
        self.metrics.partial_interval_s = capped
        self.metrics.partial_degradations += 1
        log.info(
            "partial interval raised",
            extra={"interval_s": round(capped, 2), "behind_s": round(behind, 2)},
        )

    def _speaker_key(self, utt: _Utterance) -> str:
        return utt.speaker_hint or self._frame_speaker(utt.track) or utt.track

    def _frame_speaker(self, track_id: str) -> str | None:
        track = self._tracks.get(track_id)
        if track is None or not track.speakers:
            return None
        return track.speakers.most_common(1)[0][0]

    async def _decode_loop(self) -> None:
        while True:
            job = self._next_job()
            if job is None:
                if self._ingest_done and not self._finals and not self._speculative:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            kind, utt, audio, gen = job
            if kind == "final" and utt.spec_result is not None:
                await self._emit_final(utt, utt.spec_result)
                continue
            language = self._language or self._languages.language_for(self._speaker_key(utt))
            result = await asyncio.to_thread(
                self._engine.decode,
                audio,
                language=language,
                task=self._task,
                options=self._decode_options,
                prompt=self._tracks[utt.track].context or None,
            )
            self.metrics.decodes[kind] += 1
            self.metrics.decode_seconds += result.seconds
            self._tune_partials(result.seconds)
            if self._language is None and language is None and self._engine.multilingual:
                self._languages.observe(
                    self._speaker_key(utt), result.language, result.language_probability
                )
            await self._handle(kind, utt, result, gen)

    async def _handle(
        self, kind: JobKind, utt: _Utterance, result: DecodeResult, gen: int
    ) -> None:
        if kind == "final":
            await self._emit_final(utt, result)
        elif kind == "speculative":
            if gen != utt.spec_gen:
                if utt.ended is None:
                    await self._partial(utt, result)
            elif utt.ended is not None and utt.ended.speculated:
                self.metrics.speculation_hits += 1
                await self._emit_final(utt, result)
            else:
                utt.spec_state = "done"
                utt.spec_result = result
                await self._partial(utt, result)
        else:
            if utt.ended is None:
                await self._partial(utt, result)

    async def _partial(self, utt: _Utterance, result: DecodeResult) -> None:
        verdict = judge(result.text, result.stats, voiced_s=1.0)
        if verdict.dropped or verdict.text == utt.partial_text:
            return
        segment = self._segment(utt, verdict.text, result, completed=False)
        try:
            self._out.put_nowait(segment)
        except asyncio.QueueFull:
            self.metrics.partials_skipped += 1
            return
        utt.partial_text = verdict.text
        self.metrics.partials += 1

    async def _emit_final(self, utt: _Utterance, result: DecodeResult) -> None:
        assert utt.ended is not None  # noqa: S101 - finals exist only for ended utterances
        verdict = judge(result.text, result.stats, voiced_s=utt.ended.voiced_s)
        self._tracks[utt.track].utterances.pop(utt.number, None)
        if verdict.dropped:
            self.metrics.dropped[verdict.dropped] += 1
            if utt.partial_text is not None:
                # Partials were shown for what turned out to be no speech: clear them.
                await self._out.put(self._segment(utt, "", result, completed=False))
            return
        final = self._segment(utt, verdict.text, result, completed=True)
        await self._out.put(final)
        # Speaker intervals older than any utterance still open are no longer needed.
        self.timeline.forget_before(final.absolute_start_time.timestamp() - _TIMELINE_KEEP_S)
        if self._opts.context_words:
            track = self._tracks[utt.track]
            words = f"{track.context} {verdict.text}".split()
            track.context = " ".join(words[-self._opts.context_words :])
        self.metrics.finals += 1
        if utt.end_wall is not None:
            self.metrics.final_delays_s.append(time.monotonic() - utt.end_wall)

    def _clear_partial(self, utt: _Utterance) -> None:
        at = datetime.fromtimestamp(utt.start_epoch, UTC)
        start = round(utt.start_epoch - self._join_time, 3)
        cleared = Segment(id=utt.segment_id, start=start, end=start, absolute_start_time=at,
                          absolute_end_time=at, text="", completed=False, tier="realtime")
        with contextlib.suppress(asyncio.QueueFull):
            self._out.put_nowait(cleared)

    def _segment(
        self, utt: _Utterance, text: str, result: DecodeResult, *, completed: bool
    ) -> Segment:
        if utt.ended is not None:
            lead, audio_len, trail = utt.ended.lead, len(utt.ended.audio), utt.ended.trail
        else:
            lead, audio_len, trail = 0, 0, 0
        start_epoch = utt.start_epoch + lead / SAMPLE_RATE
        end_epoch = utt.start_epoch + max(lead, audio_len - trail) / SAMPLE_RATE
        if utt.ended is None:
            end_epoch = max(start_epoch, utt.start_epoch + utt.partial_samples / SAMPLE_RATE)
        speaker = utt.speaker_hint or self._frame_speaker(utt.track)
        if speaker is None:
            speaker = self.timeline.speaker_for(start_epoch, end_epoch)
        return Segment(
            id=utt.segment_id,
            start=round(start_epoch - self._join_time, 3),
            end=round(end_epoch - self._join_time, 3),
            absolute_start_time=datetime.fromtimestamp(start_epoch, UTC),
            absolute_end_time=datetime.fromtimestamp(end_epoch, UTC),
            text=text,
            speaker=speaker,
            language=self._language or result.language,
            completed=completed,
            tier="realtime",
        )
