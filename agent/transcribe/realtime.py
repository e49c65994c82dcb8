"""Realtime tier: streaming transcription of per-track audio frames with faster-whisper.

:class:`RealtimeTranscriber` composes the tier's parts and owns their two tasks:

- the *ingest* task (:class:`~agent.transcribe.ingest.Ingest`) takes frames from a bounded
  queue (``feed`` waits when it is full, so audio is never dropped), runs VAD and the
  per-track utterance segmenter in a worker thread, and hands each batch of events to
- the decode scheduler (:class:`~agent.transcribe.decoding.DecodeScheduler`), whose *decode*
  task runs one decode at a time in a worker thread — finals first, then speculative decodes,
  then rate-limited partials — with the language of each speaker from
  :class:`~agent.transcribe.languages.LanguageMemory`, and commits the results as segments
  (:class:`~agent.transcribe.commit.SegmentCommitter`).

See ``agent.transcribe.decoding`` for the latency path and the partial rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Mapping

from agent.capture.audio import AudioFrame, SpeakerActivity
from agent.contracts.bot_config import Task
from agent.contracts.link import Segment
from agent.transcribe.base import TranscriberContext, until_end
from agent.transcribe.commit import SegmentCommitter
from agent.transcribe.decoding import DecodeScheduler
from agent.transcribe.engine import WhisperEngine
from agent.transcribe.errors import TranscribeError, TranscriberClosed, TranscriberFailed
from agent.transcribe.ingest import Ingest
from agent.transcribe.languages import LanguageMemory
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.speakers import FloorChanges, SpeakerTimeline, TrackNames
from agent.transcribe.standby import Loader
from agent.transcribe.vad import SileroSession
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class RealtimeTranscriber(TranscriberContext):
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
        multilingual: A multilingual model beside an English-only ``engine``, for
            ``language=None``: it detects the language of a speaker ``engine`` is unsure of
            (``agent.transcribe.routing``) and transcribes those not speaking English;
            ``engine`` keeps the English ones.

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
        multilingual: WhisperEngine | None = None,
    ) -> None:
        (multilingual or engine).check(language, task)
        opts = options or TranscribeOptions()
        if opts.vad == "silero" and vad_session is None:
            vad_session = SileroSession()
        self.timeline = timeline or SpeakerTimeline()
        self.metrics = TranscribeMetrics(partial_interval_s=opts.partial_interval_s)
        self._frames: asyncio.Queue[AudioFrame | None] = asyncio.Queue(opts.frame_queue_size)
        self._out: asyncio.Queue[Segment | None] = asyncio.Queue(opts.segment_queue_size)
        self._floor = FloorChanges()
        self._cut_at_changes = not opts.tracks_per_participant
        self._ingest = Ingest(
            opts.segmenter,
            vad_session,
            self.metrics,
            partials=opts.partials,
            named_tracks=frozenset(track_speakers or {}),
            agreement_after_s=opts.agreement_after_s,
            agreement_hop_s=opts.agreement_hop_s,
        )
        self._decoder = DecodeScheduler(
            engine,
            self._ingest,
            SegmentCommitter(
                self._out,
                self.metrics,
                self.timeline,
                self._ingest.frame_speaker,
                join_time=join_time,
                language=language,
                context_words=opts.context_words,
                track_names=TrackNames(self.timeline) if opts.tracks_per_participant else None,
            ),
            LanguageMemory(opts.language_lock_probability),
            self.metrics,
            opts,
            language=language,
            task=task,
            track_speakers=dict(track_speakers or {}),
            id_prefix=id_prefix or f"rt-{uuid.uuid4().hex[:8]}",
            multilingual=multilingual,
        )
        self._closing = False
        self._failure: BaseException | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._loader: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the ingest and decode tasks (idempotent)."""
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._ingest_task(), name="transcribe-ingest"),
            asyncio.create_task(self._decoder.run(), name="transcribe-decode"),
        ]
        for task in self._tasks:
            task.add_done_callback(self._task_ended)

    def _task_ended(self, task: asyncio.Task[None]) -> None:
        """A task that dies with an error fails the transcriber at once, not at :meth:`close`.

        Without this, a dead ingest or decode task left :meth:`feed` waiting on a full queue
        and :meth:`segments` on an empty one for the rest of the meeting, with nothing said.
        The frames still queued are dropped (nothing would read them), which wakes a waiting
        :meth:`feed`. :meth:`close` still delivers the finals the surviving task can finish.
        """
        if task.cancelled() or task.exception() is None or self._failure is not None:
            return
        self._failure = task.exception()
        log.error(
            "transcriber task failed",
            extra={"task": task.get_name(), "frames_dropped": self._frames.qsize()},
            exc_info=self._failure,
        )
        while not self._frames.empty():
            self._frames.get_nowait()

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise TranscriberFailed("a transcriber task failed") from self._failure

    @property
    def detects_languages(self) -> bool:
        """True once a multilingual model detects the speakers' languages."""
        return self._decoder.detects_languages

    def load_multilingual(self, load: Loader) -> None:
        """Bring the multilingual model in the background (``language=None`` only).

        Loading (and, the first time, assembling) ``base`` takes seconds to a minute on a busy
        machine; the meeting must not wait for it. Until it is there every speaker is decoded
        by the English model and no language is locked; from then on languages are detected
        as with ``multilingual`` given at construction. A model that fails to load is logged
        and the tier stays English-only. While the meeting is English the model is released
        and ``load`` brings it back when needed (``options.multilingual_idle_s``,
        ``agent.transcribe.standby``).

        Args:
            load: Returns a coroutine that loads the multilingual engine; called again after
                each release.
        """
        self._loader = asyncio.create_task(self._attach(load), name="transcribe-load-base")

    async def multilingual_ready(self) -> bool:
        """Wait for the load :meth:`load_multilingual` started; True when languages are detected."""
        if self._loader is not None:
            await asyncio.shield(self._loader)
        return self.detects_languages

    async def _attach(self, load: Loader) -> None:
        try:
            engine = await load()
        except TranscribeError as exc:  # logged; transcription goes on in English
            log.error("multilingual model unavailable", extra={"error": type(exc).__name__})
            return
        self._decoder.attach_multilingual(engine, load)

    async def _ingest_task(self) -> None:
        try:
            await self._ingest.run(self._frames, self._decoder.apply, self._decoder.partial_done)
        finally:
            self._decoder.ingest_finished()

    async def feed(self, frame: AudioFrame) -> None:
        """Queue one frame; waits while the queue is full (backpressure, nothing dropped).

        Raises:
            TranscriberClosed: After :meth:`close` began.
            TranscriberFailed: One of the transcriber's tasks died (before or while waiting).
        """
        if self._closing:
            raise TranscriberClosed("transcriber is closing")
        self._raise_if_failed()
        await self._frames.put(frame)
        self._raise_if_failed()

    def speaker_activity(self, activity: SpeakerActivity) -> None:
        """Record an active-speaker change.

        It names segments of tracks without a speaker of their own. On mixed tracks, when the
        floor changes hands, the open utterance ends there, so no segment spans two speakers;
        tracks of one participant each (``options.tracks_per_participant``) are never cut
        there: someone else's voice is not on them.
        """
        self.timeline.add(activity)
        changed = self._floor.observe(activity)
        if changed is not None and self._cut_at_changes:
            self._ingest.speaker_change(changed)

    def segments(self) -> AsyncIterator[Segment]:
        """Partial (``completed=False``) and final segments, in emission order, until closed.

        A final with the same ``id`` replaces earlier partials. A partial with empty ``text``
        clears earlier partials whose utterance turned out to be no speech (no final follows).
        Finals always have text.
        """
        return until_end(self._out)

    async def close(self) -> None:
        """Flush: end open utterances, decode every pending final, then end :meth:`segments`.

        Raises:
            TranscriberFailed: One of the transcriber's tasks had died.
        """
        if not self._tasks:
            self.start()
        if not self._closing:
            self._closing = True
            await self._frames.put(None)
        try:
            await asyncio.gather(*self._tasks)
        except Exception as exc:
            if self._failure is not None:
                raise TranscriberFailed("a transcriber task failed") from exc
            raise
        finally:
            await cancel_and_wait(self._loader)
            await self._out.put(None)

    async def abort(self) -> None:
        """Stop at once: cancel both tasks and await them; pending utterances are lost.

        A task that had died is not raised again here: its failure was logged when it died.
        """
        self._closing = True
        tasks = [*self._tasks, *([self._loader] if self._loader is not None else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:
                if task.exception() is not self._failure:
                    raise
        with contextlib.suppress(asyncio.QueueFull):
            self._out.put_nowait(None)
