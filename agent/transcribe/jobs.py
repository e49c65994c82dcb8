"""What waits for the realtime decoder, and which decode goes next.

:class:`DecodeQueue` turns each ingest :class:`~agent.transcribe.ingest.Batch` into utterances
and queued work: finals (in a :class:`~agent.transcribe.backlog.FinalsBacklog`, whose audio
past ``backlog_memory_s`` waits on disk), speculative decodes (queued when silence begins,
dropped again when speech resumes) and the partial due on each track. :meth:`DecodeQueue.next_job`
admits one: finals first, then speculative decodes, then partials; while the decoder is slower
than the audio (:class:`~agent.transcribe.pace.DecoderPace`) only finals, the ones queued for
one speaker merged into one decode up to ``MERGE_MAX_S`` of their track's audio (gaps kept as
silence, so times stay true), as one segment under the first one's id
(``metrics.finals_merged``). No partial is decoded for a speaker whose language is still being
detected. An utterance ended where two hypotheses agreed is queued with the agreed words as its
result (``agent.transcribe.agreement``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import deque
from collections.abc import Mapping
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from agent.capture.audio import SAMPLE_RATE
from agent.transcribe.agreement import tail_of
from agent.transcribe.backlog import FinalsBacklog
from agent.transcribe.commit import SegmentCommitter
from agent.transcribe.engine import DecodeResult
from agent.transcribe.ingest import Batch, Ingest
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.pace import DecoderPace
from agent.transcribe.routing import LanguageRouter
from agent.transcribe.segmenter import (
    UNHEARD_MIN_S,
    Discarded,
    Ended,
    Resume,
    Speculate,
    Started,
)
from agent.transcribe.utterance import Utterance
from agent.transcribe.vad import WINDOW

MERGE_MAX_S = 28.0
"""A slow decoder's merged finals stay inside Whisper's 30 s window (seconds of track audio)."""

JobKind = Literal["final", "speculative", "partial"]


class Job(NamedTuple):
    """One decode to run.

    Attributes:
        kind: ``final``, ``speculative`` or ``partial``.
        utt: The utterance.
        audio: 16 kHz mono float32 samples to decode.
        gen: The utterance's speculation generation when the job was taken (a speculative
            result whose generation is no longer current is only a partial).
    """

    kind: JobKind
    utt: Utterance
    audio: npt.NDArray[np.float32]
    gen: int


class DecodeQueue:
    """The open utterances of one meeting and the decodes they wait for.

    Args:
        ingest: Where the tracks are (per-track index, samples heard so far).
        committer: Clears the partials of utterances that go; whose speaker an utterance is.
        router: Whether a speaker's language is still being detected.
        pace: Whether the decoder is slow now; skipped partials and lag are reported to it.
        metrics: Utterance, speculation, merge and agreement counts.
        options: ``backlog_memory_s`` and ``backlog_dir`` of the finals' backlog.
        track_speakers: Track id → participant name, when the platform tells it that way.
        id_prefix: Prefix of segment ids.
    """

    def __init__(
        self,
        ingest: Ingest,
        committer: SegmentCommitter,
        router: LanguageRouter,
        pace: DecoderPace,
        metrics: TranscribeMetrics,
        options: TranscribeOptions,
        *,
        track_speakers: Mapping[str, str],
        id_prefix: str,
    ) -> None:
        self._ingest = ingest
        self._commit = committer
        self._router = router
        self._pace = pace
        self._metrics = metrics
        self._track_speakers = track_speakers
        self._id_prefix = id_prefix
        self._utterances: dict[str, dict[int, Utterance]] = {}  # track → number → utterance
        self._finals = FinalsBacklog(options.backlog_memory_s, metrics, options.backlog_dir)
        self._speculative: deque[Utterance] = deque()
        # Last words of each track's latest agreement commit, for the utterance after the cut.
        self._committed_tail: dict[str, tuple[str, ...]] = {}
        self._partial_due: dict[str, tuple[Utterance, npt.NDArray[np.float32]]] = {}

    @property
    def finals_waiting(self) -> bool:
        """Whether ended utterances wait for their final decode."""
        return bool(self._finals)

    @property
    def drained(self) -> bool:
        """Whether no final and no speculative decode waits (partials do not count)."""
        return not self._finals and not self._speculative

    def close(self) -> None:
        """Remove the backlog's spilled audio (the queue is not used after)."""
        self._finals.close()

    def partial_done(self, track_id: str, number: int) -> int:
        """Samples of utterance ``number`` on a track the last partial decode covered."""
        utt = self._utterances.get(track_id, {}).get(number)
        return utt.partial_samples if utt else 0

    def forget(self, utt: Utterance) -> None:
        """``utt`` got its final: it is no longer open."""
        self._utterances.get(utt.track, {}).pop(utt.number, None)

    def apply(self, batch: Batch) -> None:
        """Turn a batch's segmenter events and due partials into utterances and jobs."""
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
                    by_level=event.by_level,
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

    def next_job(self) -> Job | None:
        """The decode to run now (see the module docstring); None: nothing is admitted."""
        if self._finals:
            utt = self._finals.popleft()
            if self._pace.slow and utt.spec_result is None:
                utt = self._merge_queued(utt)
            ended = utt.ended
            assert ended is not None  # noqa: S101 - only ended utterances are queued
            return Job("final", utt, ended.audio, utt.spec_gen)
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
                return Job("speculative", utt, utt.spec_audio, utt.spec_gen)
        while self._partial_due:
            track_id = next(iter(self._partial_due))
            utt, audio = self._partial_due.pop(track_id)
            if self._router.detecting(utt):
                # The speaker's language is still being detected: a partial would cost a
                # multilingual decode (2-3 times tiny.en's) that only delays their final.
                continue
            self._report_lag(utt, len(audio))
            return Job("partial", utt, audio, utt.spec_gen)
        return None

    def _report_lag(self, utt: Utterance, partial_samples: int) -> None:
        """Tell the pace how far behind the track's audio this partial's audio is."""
        heard = self._ingest.tracks[utt.track].segmenter.samples_seen - utt.start_sample
        self._pace.behind((heard - partial_samples) / SAMPLE_RATE)

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
            # Cut where two hypotheses agreed, or at the pause after a sentence: their words
            # are the final, no decode needed.
            assert utt.agreed is not None  # noqa: S101 - set with its result
            if utt.agreed[0].at_pause:
                self._metrics.sentence_cuts += 1
            else:
                self._metrics.agreement_commits += 1
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

    def _merge_queued(self, first: Utterance) -> Utterance:
        """``first`` with the queued finals of its track and speaker that follow it.

        Each one's audio lands at its own place on the track (the gaps between them silence),
        up to ``MERGE_MAX_S``; the merged ones leave the queue and their partials are cleared.
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
            if nxt_end - first.ended.start_sample > MERGE_MAX_S * SAMPLE_RATE:
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
            self.forget(utt)
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
            by_level=all(utt.ended.by_level for utt in merged if utt.ended is not None),
        )
        return dataclasses.replace(first, ended=ended, end_wall=last.end_wall)
