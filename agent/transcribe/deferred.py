"""Deferred tier: one accurate pass over the meeting's audio after it ends.

:func:`transcribe_tracks` cuts every track with the same VAD and segmenter as the realtime tier
(so the same utterances are found) and decodes each utterance with beam search (5) and
temperature fallback, the multilingual model where the language needs it. Speakers come from
the track (one person per track) or, for a mixed track, from the active-speaker timeline: the
utterance's words are timed and split wherever the lit-up speaker changes.

Segment ids are ``{prefix}-{track index}-{utterance}`` (plus ``.{part}`` for speaker splits),
the realtime scheme with another prefix. In *refine* mode (``MEETBOT_REFINE_AFTER_MEETING``)
:func:`replacement_map` tells which realtime segments each deferred segment replaces: delete
those realtime ids, store the deferred segments (``tier="deferred"``).

:class:`DeferredTranscriber` is the ``Transcriber`` of ``transcription_tier=deferred``: it only
writes per-track WAVs while the meeting runs (no decoding) and transcribes them on
:meth:`~DeferredTranscriber.close`. :class:`RefiningTranscriber` runs the realtime tier and
records at the same time, then refines.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from agent.capture.audio import SAMPLE_RATE, AudioFrame, SpeakerActivity
from agent.contracts.bot_config import Task
from agent.contracts.link import Segment
from agent.transcribe.audio_io import TrackAudio, TrackRecorder, read_audio
from agent.transcribe.base import TranscriberContext, until_end
from agent.transcribe.engine import DecodeOptions, DecodeResult, WhisperEngine, WordTiming
from agent.transcribe.errors import TranscriberClosed
from agent.transcribe.filters import judge
from agent.transcribe.languages import LanguageMemory
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.segmenter import Ended, UtteranceSegmenter
from agent.transcribe.speakers import SpeakerTimeline
from agent.transcribe.vad import EnergyVad, SileroSession, VoiceDetector

_FALLBACK_TEMPERATURES = (0.0, 0.2, 0.4, 0.6)
_VAD_BLOCK = 30 * SAMPLE_RATE


def _utterances(
    samples: np.ndarray, detector: VoiceDetector, segmenter: UtteranceSegmenter
) -> list[Ended]:
    audio = samples.astype(np.float32) / 32768.0
    found: list[Ended] = []
    for i in range(0, len(audio), _VAD_BLOCK):
        block = audio[i : i + _VAD_BLOCK]
        windows = detector.process(block)
        events = segmenter.push(block, windows.probs, windows.loud)
        found += [e for e in events if isinstance(e, Ended)]
    found += [e for e in segmenter.flush() if isinstance(e, Ended)]
    return found


def _split_by_speaker(
    words: Sequence[WordTiming], offset: float, timeline: SpeakerTimeline
) -> list[tuple[str | None, list[WordTiming]]]:
    runs: list[tuple[str | None, list[WordTiming]]] = []
    previous: str | None = None
    for word in words:
        name = timeline.speaker_for(offset + word.start, offset + max(word.end, word.start + 0.05))
        name = name or previous
        if runs and runs[-1][0] == name:
            runs[-1][1].append(word)
        else:
            runs.append((name, [word]))
        previous = name
    return runs


def _segment(
    seg_id: str,
    start: float,
    end: float,
    text: str,
    speaker: str | None,
    language: str,
    join_time: float,
) -> Segment:
    return Segment(
        id=seg_id,
        start=round(start - join_time, 3),
        end=round(end - join_time, 3),
        absolute_start_time=datetime.fromtimestamp(start, UTC),
        absolute_end_time=datetime.fromtimestamp(end, UTC),
        text=text,
        speaker=speaker,
        language=language,
        completed=True,
        tier="deferred",
    )


def transcribe_tracks(
    engine: WhisperEngine,
    tracks: Sequence[TrackAudio],
    *,
    join_time: float,
    language: str | None = None,
    task: Task = Task.TRANSCRIBE,
    options: TranscribeOptions | None = None,
    timeline: SpeakerTimeline | None = None,
    vad_session: SileroSession | None = None,
    id_prefix: str = "df",
    metrics: TranscribeMetrics | None = None,
) -> list[Segment]:
    """Transcribe whole tracks accurately.

    Blocking (minutes for long meetings): run it in a worker thread.

    Args:
        engine: Loaded model (``options.deferred_model_for(...)`` picks which).
        tracks: Per-track files (or one mixed recording with ``track_id="mix"``).
        join_time: Epoch seconds when the bot joined (segment ``start``/``end`` count from it).
        language: Language code or None to detect per speaker.
        task: Transcribe or translate.
        options: Beam size and segmenter thresholds.
        timeline: Active-speaker intervals; names segments of tracks without a speaker.
        vad_session: Loaded Silero model; created when needed and None.
        id_prefix: Segment id prefix (unique per meeting).
        metrics: Counters to update (decodes, drops).

    Returns:
        Final segments (``tier="deferred"``) sorted by start time.

    Raises:
        UnsupportedTranscriptionOptions: The model cannot serve ``language``/``task``.
    """
    engine.check(language, task)
    opts = options or TranscribeOptions()
    if opts.vad == "silero" and vad_session is None:
        vad_session = SileroSession()
    metrics = metrics or TranscribeMetrics()
    memory = LanguageMemory(opts.language_lock_probability)
    out: list[Segment] = []
    track_index: dict[str, int] = {}
    for track in tracks:
        index = track_index.setdefault(track.track_id, len(track_index))
        detector: VoiceDetector = vad_session.detector() if vad_session else EnergyVad()
        samples = read_audio(track.path)
        metrics.audio_seconds_in += len(samples) / SAMPLE_RATE
        speaker_key = track.speaker or track.track_id
        split_words = track.speaker is None and timeline is not None
        decode_opts = DecodeOptions(
            beam_size=opts.deferred_beam_size,
            temperatures=_FALLBACK_TEMPERATURES,
            without_timestamps=not split_words,
            word_timestamps=split_words,
        )
        for utt in _utterances(samples, detector, UtteranceSegmenter(opts.segmenter)):
            metrics.utterances += 1
            lang = language or memory.language_for(speaker_key)
            result = engine.decode(utt.audio, language=lang, task=task, options=decode_opts)
            metrics.decodes["deferred"] += 1
            metrics.decode_seconds += result.seconds
            if language is None and lang is None and engine.multilingual:
                memory.observe(speaker_key, result.language, result.language_probability)
            verdict = judge(result.text, result.stats, utt.voiced_s)
            if verdict.dropped:
                metrics.dropped[verdict.dropped] += 1
                continue
            origin = track.start_time + utt.start_sample / SAMPLE_RATE
            seg_id = f"{id_prefix}-{index}-{utt.utterance}"
            out += _utterance_segments(
                seg_id, origin, utt, verdict.text, result, track, timeline, language, join_time
            )
            metrics.finals += 1
    out.sort(key=lambda s: (s.start, s.id))
    return out


def _utterance_segments(
    seg_id: str,
    origin: float,
    utt: Ended,
    text: str,
    result: DecodeResult,
    track: TrackAudio,
    timeline: SpeakerTimeline | None,
    language: str | None,
    join_time: float,
) -> list[Segment]:
    lang = language or result.language
    start = origin + utt.lead / SAMPLE_RATE
    end = origin + max(utt.lead, len(utt.audio) - utt.trail) / SAMPLE_RATE
    if track.speaker is not None or timeline is None:
        return [_segment(seg_id, start, end, text, track.speaker, lang, join_time)]
    runs = _split_by_speaker(result.words, origin, timeline) if result.words else []
    if len(runs) <= 1:
        speaker = runs[0][0] if runs else timeline.speaker_for(start, end)
        return [_segment(seg_id, start, end, text, speaker, lang, join_time)]
    segments = []
    for part, (speaker, words) in enumerate(runs):
        part_text = "".join(w.word for w in words).strip()
        if not part_text:
            continue
        segments.append(
            _segment(
                f"{seg_id}.{part}",
                origin + words[0].start,
                origin + words[-1].end,
                part_text,
                speaker,
                lang,
                join_time,
            )
        )
    return segments


def replacement_map(
    realtime: Sequence[Segment], deferred: Sequence[Segment]
) -> dict[str, list[str]]:
    """Which deferred segments replace each realtime segment (refine mode).

    A realtime segment is replaced by every deferred segment that overlaps it in time and has
    the same speaker (or either has none). Realtime segments overlapping nothing map to
    ``[]``: the deferred pass judged them no speech, delete them too.
    """
    out: dict[str, list[str]] = {}
    for rt in realtime:
        out[rt.id] = [
            df.id
            for df in deferred
            if df.start < rt.end
            and rt.start < df.end
            and (rt.speaker is None or df.speaker is None or rt.speaker == df.speaker)
        ]
    return out


async def transcribe_meeting(
    engine: WhisperEngine,
    tracks: Sequence[TrackAudio],
    *,
    join_time: float,
    language: str | None = None,
    task: Task = Task.TRANSCRIBE,
    options: TranscribeOptions | None = None,
    activities: Sequence[SpeakerActivity] = (),
    id_prefix: str = "df",
) -> list[Segment]:
    """Async wrapper of :func:`transcribe_tracks` (runs in a worker thread).

    ``activities`` are the meeting's active-speaker changes, used for tracks without a speaker.
    """
    timeline = SpeakerTimeline(activities) if activities else None
    return await asyncio.to_thread(
        transcribe_tracks,
        engine,
        tracks,
        join_time=join_time,
        language=language,
        task=task,
        options=options,
        timeline=timeline,
        id_prefix=id_prefix,
    )


class DeferredTranscriber(TranscriberContext):
    """``Transcriber`` of the deferred tier: records per-track WAVs, transcribes on close.

    Args:
        engine: Model for the pass (loaded when the meeting ends is fine: pass a loader's
            result; decoding starts only in :meth:`close`).
        work_dir: Where the per-track WAVs go (kept for the caller to delete or upload).
        join_time: Epoch seconds when the bot joined.
        language: Language code or None.
        task: Transcribe or translate.
        options: Tier knobs.
        track_speakers: Track id → participant name.
        id_prefix: Segment id prefix; random when None.
    """

    def __init__(
        self,
        engine: WhisperEngine,
        work_dir: Path,
        *,
        join_time: float,
        language: str | None = None,
        task: Task = Task.TRANSCRIBE,
        options: TranscribeOptions | None = None,
        track_speakers: Mapping[str, str] | None = None,
        id_prefix: str | None = None,
    ) -> None:
        engine.check(language, task)
        self._engine = engine
        self._recorder = TrackRecorder(work_dir)
        self._join_time = join_time
        self._language = language
        self._task = task
        self._opts = options or TranscribeOptions()
        self._track_speakers = dict(track_speakers or {})
        self._id_prefix = id_prefix or f"df-{uuid.uuid4().hex[:8]}"
        self.timeline = SpeakerTimeline()
        self.metrics = TranscribeMetrics()
        self._out: asyncio.Queue[Segment | None] = asyncio.Queue(self._opts.segment_queue_size)
        self._closing = False
        self.result: list[Segment] = []

    async def feed(self, frame: AudioFrame) -> None:
        """Record one frame (no decoding now).

        Raises:
            TranscriberClosed: After :meth:`close` began.
        """
        if self._closing:
            raise TranscriberClosed("transcriber is closing")
        self.metrics.frames_in += 1
        await self._recorder.add(frame)

    def speaker_activity(self, activity: SpeakerActivity) -> None:
        """Record an active-speaker change for the pass."""
        self.timeline.add(activity)

    def segments(self) -> AsyncIterator[Segment]:
        """The deferred segments, available once :meth:`close` has run the pass."""
        return until_end(self._out)

    async def close(self) -> None:
        """Finish the WAVs, run the pass, publish the segments (also kept in ``result``)."""
        if self._closing:
            return
        self._closing = True
        try:
            tracks = await self._recorder.close()
            tracks = [
                TrackAudio(
                    t.track_id,
                    t.start_time,
                    t.path,
                    t.speaker or self._track_speakers.get(t.track_id),
                )
                for t in tracks
            ]
            self.result = await asyncio.to_thread(
                transcribe_tracks,
                self._engine,
                tracks,
                join_time=self._join_time,
                language=self._language,
                task=self._task,
                options=self._opts,
                timeline=self.timeline,
                id_prefix=self._id_prefix,
                metrics=self.metrics,
            )
            for segment in self.result:
                await self._out.put(segment)
        finally:
            await self._out.put(None)

    async def abort(self) -> None:
        """Give up: close the files, transcribe nothing."""
        self._closing = True
        await self._recorder.close()
        with contextlib.suppress(asyncio.QueueFull):
            self._out.put_nowait(None)


class RefiningTranscriber(TranscriberContext):
    """Realtime tier plus a deferred pass at the end that replaces its segments.

    :meth:`segments` yields the realtime stream, then the deferred segments; afterwards
    ``replacements`` maps each realtime final id to the deferred ids that replace it
    (see :func:`replacement_map`).

    Args:
        realtime: The realtime transcriber (not started yet).
        deferred: A deferred transcriber recording the same frames.
    """

    def __init__(self, realtime: RealtimeTranscriber, deferred: DeferredTranscriber) -> None:
        self.realtime = realtime
        self.deferred = deferred
        self.replacements: dict[str, list[str]] = {}
        self._finals: list[Segment] = []

    @property
    def metrics(self) -> TranscribeMetrics:
        """The realtime tier's counters (the deferred pass keeps its own in ``deferred``)."""
        return self.realtime.metrics

    def start(self) -> None:
        """Start the realtime tier's tasks (idempotent); the deferred tier has none."""
        self.realtime.start()

    async def feed(self, frame: AudioFrame) -> None:
        """Feed both tiers."""
        await self.deferred.feed(frame)
        await self.realtime.feed(frame)

    def speaker_activity(self, activity: SpeakerActivity) -> None:
        """Tell both tiers."""
        self.realtime.speaker_activity(activity)
        self.deferred.speaker_activity(activity)

    async def segments(self) -> AsyncIterator[Segment]:
        """Realtime partials and finals, then the deferred replacements."""
        async for segment in self.realtime.segments():
            if segment.completed and segment.text:
                self._finals.append(segment)
            yield segment
        async for segment in self.deferred.segments():
            yield segment
        self.replacements = replacement_map(self._finals, self.deferred.result)

    async def close(self) -> None:
        """Flush the realtime tier, then run the deferred pass."""
        await self.realtime.close()
        await self.deferred.close()

    async def abort(self) -> None:
        """Stop both tiers at once."""
        await self.realtime.abort()
        await self.deferred.abort()
