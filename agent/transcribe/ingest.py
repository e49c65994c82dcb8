"""Realtime ingest: per-track frames → VAD → utterance segmenter → batches of events.

Each track has its own VAD state and :class:`UtteranceSegmenter`, so two people talking over
each other on separate tracks never end up in one segment. Endpointing counts samples, not
wall time: a gap in a track's frames longer than ``_GAP_TOLERANCE_S`` is pushed as silence,
and a live track that stops sending mid-utterance (left, ended, its page stalled) gets silence
synthesised, so its utterance still ends: at once when the other tracks' audio has moved more
than ``_IDLE_AFTER_S`` past it, or after ``_STALL_AFTER_S`` of wall clock when no track sends
at all. A capture that is only late (the page or this process starved of CPU, as in a VM
under software emulation) delivers every track late together, so it gets no silence that
would cut its speaker's utterance in pieces.

:meth:`Ingest.run` is the ingest task: it takes frames from a bounded queue in batches (all
that are waiting), analyses each batch in one worker thread call, and hands the resulting
:class:`Batch` to the decode scheduler, on the event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from agent.capture.audio import SAMPLE_RATE, AudioFrame
from agent.transcribe.agreement import COMMIT_OVERLAP_S
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.segmenter import SegmenterEvent, SegmenterOptions, UtteranceSegmenter
from agent.transcribe.vad import WINDOW, EnergyVad, SileroSession, VoiceDetector

# A gap in a track's frames longer than this is silence the segmenter must hear, so an
# utterance whose track went quiet (muted, left) still ends.
_GAP_TOLERANCE_S = 0.1
_MAX_GAP_FILL_S = 1.0
# A live track whose speaker is mid-utterance gets silence once the other tracks' audio is
# this far ahead of it (capture time; the page sends every track's blocks together)…
_IDLE_AFTER_S = 0.3
# …or, when no track sends anything, after this long by the wall clock. Shorter would cut
# speech at every stall of a late capture: frames then arrive late, but all together.
_STALL_AFTER_S = 3.0
# Frames stamped within this many seconds of the wall clock come from a live capture.
_LIVE_WITHIN_S = 5.0
# A speaker change on a mixed track cuts at the quietest moment of the audio up to this long
# before the indicator changed (indicators light up ~0.2 s after the voice, off ~0.3 s after)…
_CHANGE_SEARCH_S = 0.6
# …once this much audio after the change has been heard (so the cut never waits long)…
_CHANGE_LOOKAHEAD_S = 0.1
# …and only when the part before keeps at least this much audio. The rest goes on as an open
# utterance, so it needs only this much: requiring the same 0.5 s confined the cut to 0.4-0.6 s
# before the (poll-late) change, often inside the last word of the speaker before (issue 12).
_CHANGE_MIN_PART_S = 0.5
_CHANGE_MIN_REST_S = 0.1
_CHANGE_MIN_REST = round(_CHANGE_MIN_REST_S * SAMPLE_RATE)
# An agreement cut keeps at least this much audio before it (its words were agreed on).
_COMMIT_MIN_PART = round(0.5 * SAMPLE_RATE)
# …and the rest starts this much before it: word times are approximate, and a word the cut
# went through was lost to both parts (the rest's decode drops what it repeats).
_COMMIT_OVERLAP = round(COMMIT_OVERLAP_S * SAMPLE_RATE)


@dataclass(slots=True)
class Track:
    """One audio track as the ingest sees it.

    Attributes:
        track_id: The frames' ``track_id``.
        index: Order in which the track first sent a frame (0, 1, …); names segment ids.
        detector: The track's VAD state.
        segmenter: The track's utterance segmenter.
        epoch0: Epoch seconds of the segmenter's sample 0 (re-anchored after gaps).
        expected_next: Epoch seconds at which the next frame should start.
        live: Frame times are close to the wall clock (a live capture, not a file).
        last_arrival: ``time.monotonic()`` of the last frame (real or synthesised).
        heard_until: Epoch seconds where the track's admitted audio ends (real or
            synthesised); set on the event loop, ahead of ``expected_next``.
        speakers: Speaker names carried by the track's frames, counted.
        changes: Epoch seconds of active-speaker changes not yet applied (mixed tracks).
        commits: Cuts asked for by agreement, not yet applied:
            ``(utterance number, first sample, last sample)`` of where the cut may fall.
    """

    track_id: str
    index: int
    detector: VoiceDetector
    segmenter: UtteranceSegmenter
    epoch0: float
    expected_next: float
    live: bool = False
    last_arrival: float = 0.0
    heard_until: float = 0.0
    speakers: Counter[str] = field(default_factory=Counter)
    changes: list[float] = field(default_factory=list)
    commits: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Batch:
    """What one analysis of a batch of frames produced.

    Attributes:
        events: ``(track id, segmenter event, epoch of the track's sample 0 at the event)``.
        partials: Open utterances due a partial decode:
            ``(track id, utterance number, samples so far, audio so far)``.
        wall: ``time.monotonic()`` when the analysis ended.
        lag_s: Seconds from the end of the batch's newest audio (its capture stamp, the
            page's clock) to the start of its analysis: the page's send, the binding, both
            queues and the wait for the worker. 0.0 for a batch without frames.
    """

    events: list[tuple[str, SegmenterEvent, float]]
    partials: list[tuple[str, int, int, npt.NDArray[np.float32]]]
    wall: float
    lag_s: float


class Ingest:
    """Tracks, VAD and segmentation of one meeting's audio.

    Args:
        segmenter: Utterance cutting thresholds.
        vad_session: Loaded Silero model, or None for the energy VAD.
        metrics: Counts ``frames_in``/``audio_seconds_in``; ``partial_interval_s`` sets how
            much new audio of an open utterance makes it due a partial decode.
        partials: Whether partial decodes are wanted at all.
        named_tracks: Tracks the platform names a speaker for (never cut at speaker changes).
        agreement_after_s: Open utterances longer than this (seconds) are due a partial
            every ``agreement_hop_s`` of new audio, for the agreement of hypotheses
            (``agent.transcribe.agreement``); None: at the partial interval only.
        agreement_hop_s: See ``agreement_after_s``.
    """

    def __init__(
        self,
        segmenter: SegmenterOptions,
        vad_session: SileroSession | None,
        metrics: TranscribeMetrics,
        *,
        partials: bool,
        named_tracks: frozenset[str] = frozenset(),
        agreement_after_s: float | None = None,
        agreement_hop_s: float = 1.0,
    ) -> None:
        self.tracks: dict[str, Track] = {}
        self._agree_after = (
            None if agreement_after_s is None else round(agreement_after_s * SAMPLE_RATE)
        )
        self._agree_hop = round(agreement_hop_s * SAMPLE_RATE)
        self._segmenter = segmenter
        self._vad_session = vad_session
        self._metrics = metrics
        self._partials = partials
        self._named_tracks = named_tracks
        self._changes: list[float] = []
        # Newest capture time any live track reached, and when a real frame last came in.
        self._capture_until = 0.0
        self._last_frame_wall = time.monotonic()

    def speaker_change(self, at: float) -> None:
        """Note that the active speaker changed at epoch ``at`` (on the event loop).

        Every mixed track (no speaker of its own) will end its open utterance at the quietest
        moment just before ``at`` once it has heard audio up to ``at``, so no segment spans
        the two speakers.
        """
        self._changes.append(at)

    def commit_at(self, track_id: str, utterance: int, first: int, last: int) -> None:
        """Cut a track's open utterance between samples ``first`` and ``last`` (event loop).

        The cut falls at the quietest window in that span (widened by a window on each side),
        at the next analysis, if utterance ``utterance`` is still the open one then; the part
        before ends (its agreed words are its final), the rest goes on as a new utterance.
        """
        track = self.tracks.get(track_id)
        if track is not None:
            track.commits.append((utterance, first, last))

    def frame_speaker(self, track_id: str) -> str | None:
        """The speaker name most of a track's frames carried, if any."""
        track = self.tracks.get(track_id)
        if track is None or not track.speakers:
            return None
        return track.speakers.most_common(1)[0][0]

    async def run(
        self,
        frames: asyncio.Queue[AudioFrame | None],
        on_batch: Callable[[Batch], None],
        partial_done: Callable[[str, int], int],
    ) -> None:
        """Ingest until ``None`` is taken from ``frames``; then flush every segmenter.

        Args:
            frames: Incoming frames; ``None`` ends the stream.
            on_batch: Called on the event loop with each analysed batch, in order.
            partial_done: ``(track id, utterance number)`` → samples of that utterance the
                last partial decode covered (0: none); read from the worker thread.
        """
        while True:
            batch: list[AudioFrame] = []
            try:
                async with asyncio.timeout(_IDLE_AFTER_S):
                    first = await frames.get()
            except TimeoutError:
                synthetic = self._idle_frames()
                for frame in synthetic:
                    self._admit(frame, real=False)
                if synthetic:
                    on_batch(
                        await asyncio.to_thread(self._analyse, synthetic, 0, False, partial_done)
                    )
                continue
            stop = first is None
            if first is not None:
                batch.append(first)
            while not stop and not frames.empty():
                nxt = frames.get_nowait()
                if nxt is None:
                    stop = True
                else:
                    batch.append(nxt)
            for frame in batch:
                self._admit(frame)
            if not stop:
                # A track the others have left behind (its speaker left, its track ended)
                # gets its silence now: frames of the others keep the timeout from firing.
                synthetic = self._idle_frames()
                for frame in synthetic:
                    self._admit(frame, real=False)
                batch += synthetic
            self._route_changes()
            every = int(self._metrics.partial_interval_s * SAMPLE_RATE) if self._partials else 0
            on_batch(await asyncio.to_thread(self._analyse, batch, every, stop, partial_done))
            if stop:
                return

    def _admit(self, frame: AudioFrame, *, real: bool = True) -> None:
        """Note a frame's track, speaker, liveness and progress (on the event loop).

        Synthesised silence (``real=False``) moves only its track's progress.
        """
        track = self._track(frame)
        track.last_arrival = time.monotonic()
        track.heard_until = max(track.heard_until, frame.end_time)
        if not real:
            return
        self._metrics.frames_in += 1
        self._metrics.audio_seconds_in += frame.duration
        # Tracks are created and named here, on the loop, so the worker thread never adds
        # to what the decode side reads.
        if frame.speaker:
            track.speakers[frame.speaker] += 1
        track.live = abs(time.time() - frame.end_time) < _LIVE_WITHIN_S
        self._last_frame_wall = track.last_arrival
        if track.live:
            self._capture_until = max(self._capture_until, frame.end_time)

    @property
    def audio_clock(self) -> float:
        """Epoch seconds where the furthest track's admitted audio ends (0.0 before any)."""
        return max((track.heard_until for track in self.tracks.values()), default=0.0)

    def _route_changes(self) -> None:
        """Hand pending speaker changes to the mixed tracks (on the loop, between analyses)."""
        if not self._changes:
            return
        changes, self._changes = self._changes, []
        for track in self.tracks.values():
            if track.track_id not in self._named_tracks and not track.speakers:
                track.changes.extend(changes)
                track.changes.sort()

    def _apply_changes(self, track: Track) -> list[SegmenterEvent]:
        """Cut the track's open utterance at speaker changes it has heard past (worker)."""
        events: list[SegmenterEvent] = []
        heard = track.epoch0 + track.segmenter.samples_seen / SAMPLE_RATE
        while track.changes and track.changes[0] + _CHANGE_LOOKAHEAD_S <= heard:
            at = track.changes.pop(0)
            events += track.segmenter.cut(
                round((at - track.epoch0) * SAMPLE_RATE),
                round(_CHANGE_SEARCH_S * SAMPLE_RATE),
                round(_CHANGE_MIN_PART_S * SAMPLE_RATE),
                round(_CHANGE_MIN_REST_S * SAMPLE_RATE),
            )
        return events

    def _apply_commits(self, track: Track) -> list[SegmenterEvent]:
        """Cut where agreement asked, if that utterance is still open (worker)."""
        events: list[SegmenterEvent] = []
        commits, track.commits = track.commits, []
        for number, first, last in commits:
            current = track.segmenter.current()
            if current is None or current[0] != number:
                continue
            events += track.segmenter.cut(
                last + WINDOW,
                last - first + 2 * WINDOW,
                _COMMIT_MIN_PART,
                _CHANGE_MIN_REST,
                overlap=_COMMIT_OVERLAP,
            )
        return events

    def _track(self, frame: AudioFrame) -> Track:
        track = self.tracks.get(frame.track_id)
        if track is None:
            detector: VoiceDetector = (
                self._vad_session.detector() if self._vad_session is not None else EnergyVad()
            )
            track = Track(
                track_id=frame.track_id,
                index=len(self.tracks),
                detector=detector,
                segmenter=UtteranceSegmenter(self._segmenter),
                epoch0=frame.start_time,
                expected_next=frame.start_time,
            )
            self.tracks[frame.track_id] = track
        return track

    def _analyse(
        self,
        frames: list[AudioFrame],
        partial_every: int,
        flush: bool,
        partial_done: Callable[[str, int], int],
    ) -> Batch:
        """VAD + segmentation of a batch; runs in a worker thread, the only one touching them."""
        now = time.time()
        lag_s = now - max((frame.end_time for frame in frames), default=now)
        events: list[tuple[str, SegmenterEvent, float]] = []
        for track in self.tracks.values():
            events += [(track.track_id, e, track.epoch0) for e in self._apply_commits(track)]
        for frame in frames:
            track = self.tracks[frame.track_id]
            gap = frame.start_time - track.expected_next
            if gap > _GAP_TOLERANCE_S:
                fill = np.zeros(int(min(gap, _MAX_GAP_FILL_S) * SAMPLE_RATE), dtype=np.float32)
                events += [(track.track_id, e, track.epoch0) for e in self._push(track, fill)]
            # Where the sample → epoch mapping puts this frame, against its own stamp. Frame to
            # frame the two agree within jitter, but a capture whose audio clock runs slower or
            # faster than the wall clock drifts from its stamps without any one gap showing it:
            # a headful Chromium on PulseAudio (as on the bot VM) lost about 0.1 s of samples a
            # minute, so 14 minutes in the mapping put speech 1.4 s early and the endpoint log
            # read 1.9 s instead of 0.6, until a stall re-anchored it (issue 19); speaker cuts
            # on a mixed track use the same mapping.
            drift = frame.start_time - (track.epoch0 + track.segmenter.samples_pushed / SAMPLE_RATE)
            if abs(drift) > _GAP_TOLERANCE_S:
                # Re-anchor the mapping on this frame (after a gap, after synthesised silence
                # that real frames now overlap, or once the clocks drifted this far apart).
                track.epoch0 = frame.start_time - track.segmenter.samples_pushed / SAMPLE_RATE
                if abs(gap) <= _GAP_TOLERANCE_S:
                    self._metrics.clock_reanchors += 1
            samples = frame.pcm.astype(np.float32) / 32768.0
            events += [(track.track_id, e, track.epoch0) for e in self._push(track, samples)]
            track.expected_next = frame.end_time
            if track.changes:
                events += [(track.track_id, e, track.epoch0) for e in self._apply_changes(track)]
        if flush:
            for track in self.tracks.values():
                unheard = track.segmenter.unheard_s
                events += [(track.track_id, e, track.epoch0) for e in track.segmenter.flush()]
                self._lost(track, track.segmenter.unheard_s - unheard)
        partials: list[tuple[str, int, int, npt.NDArray[np.float32]]] = []
        if partial_every > 0 and not flush:
            for track in self.tracks.values():
                if track.segmenter.pausing:
                    continue  # speech may be ending: leave the decoder to the speculation
                current = track.segmenter.current()
                if current is None:
                    continue
                number, _, audio = current
                every = partial_every
                if self._agree_after is not None and len(audio) >= self._agree_after:
                    every = min(every, self._agree_hop)
                if len(audio) - partial_done(track.track_id, number) >= every:
                    partials.append((track.track_id, number, len(audio), audio))
        return Batch(events, partials, time.monotonic(), round(lag_s, 3))

    def _push(self, track: Track, samples: npt.NDArray[np.float32]) -> list[SegmenterEvent]:
        windows = track.detector.process(samples)
        unheard, evidence = track.segmenter.unheard_s, track.segmenter.evidence_s
        events = track.segmenter.push(samples, windows.probs, windows.loud)
        self._metrics.voice_evidence_s += track.segmenter.evidence_s - evidence
        self._lost(track, track.segmenter.unheard_s - unheard)
        return events

    def _lost(self, track: Track, seconds: float) -> None:
        """Count voice evidence the VAD never opened an utterance for (worker thread)."""
        if seconds > 0:
            self._metrics.lose("vad_closed", seconds, track=track.track_id)

    def _idle_frames(self) -> list[AudioFrame]:
        """Silence for live tracks that stopped sending mid-utterance (on the event loop).

        A track gets silence from where its audio ends up to where the other tracks' audio
        has reached, when that is more than ``_IDLE_AFTER_S``; if no track has sent anything
        for ``_STALL_AFTER_S``, it gets as much silence as the wall clock says it missed. At
        most ``_MAX_GAP_FILL_S`` per call either way (the segmenter needs far less to end).
        """
        now = time.monotonic()
        stalled = now - self._last_frame_wall > _STALL_AFTER_S
        out = []
        for track in self.tracks.values():
            if not (track.live and track.segmenter.speaking):
                continue
            behind = self._capture_until - track.heard_until
            if behind <= _IDLE_AFTER_S:
                if not stalled:
                    continue
                behind = now - track.last_arrival
            samples = int(min(behind, _MAX_GAP_FILL_S) * SAMPLE_RATE)
            out.append(AudioFrame(track.track_id, track.heard_until, np.zeros(samples, np.int16)))
        return out
