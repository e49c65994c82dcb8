"""Realtime segments out: decode results judged and written as partial and final segments.

Finals are committed in order and wait for room in the output queue (never skipped); a partial
is skipped when the consumer lags (``metrics.partials_skipped``). A final's text becomes the
prompt context of its track's next decodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.link import Segment
from agent.transcribe.agreement import drop_repeated
from agent.transcribe.engine import DecodeResult
from agent.transcribe.filters import judge
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.normalize import hesitations
from agent.transcribe.speakers import SpeakerTimeline, TrackNames, floor_holder_for
from agent.transcribe.utterance import Utterance

log = logging.getLogger(__name__)

# Active-speaker history kept behind the latest final (utterances are at most ~25 s).
_TIMELINE_KEEP_S = 300.0
# A final's words cover this much voice evidence each; evidence beyond them is unaccounted
# (``sparse_text``). People say 2-3 words per voiced second, a hesitant speaker about one; the
# evidence test also counts breaths and the pauses inside words.
_WORDS_PER_EVIDENCE_S = 0.7


class SegmentCommitter:
    """Writes one meeting's realtime segments to the output queue.

    Args:
        out: The segments queue the consumer reads.
        metrics: Counts partials, finals, drops and final delays.
        timeline: Active-speaker intervals; names segments of tracks without a speaker.
        frame_speaker: Track id → the speaker its frames carry, if any.
        track_names: Set when each track carries one participant the platform does not name
            (Google Meet): segments are named after the name the indicators tie to their
            track. None: tracks without a speaker are mixed, and a segment is named after
            who held the floor during it (``floor_holder_for``).
        join_time: Epoch seconds when the bot joined; ``start``/``end`` count from it.
        language: Fixed language code, or None (each result's detected language is used).
        context_words: Words of a track's previous final kept as its prompt (0: none).
    """

    def __init__(
        self,
        out: asyncio.Queue[Segment | None],
        metrics: TranscribeMetrics,
        timeline: SpeakerTimeline,
        frame_speaker: Callable[[str], str | None],
        *,
        join_time: float,
        language: str | None,
        context_words: int,
        track_names: TrackNames | None = None,
    ) -> None:
        self._out = out
        self._track_names = track_names
        self._metrics = metrics
        self._timeline = timeline
        self._frame_speaker = frame_speaker
        self._join_time = join_time
        self._language = language
        self._context_words = context_words
        self._context: dict[str, str] = {}

    def context(self, track_id: str) -> str | None:
        """Prompt for the next decode of a track: the end of its last final, or None."""
        return self._context.get(track_id) or None

    def speaker_key(self, utt: Utterance) -> str:
        """Whose language memory an utterance uses: its speaker's name, else its track.

        On a mixed track the name is the active speaker of the utterance's audio so far, so
        each participant's language is detected and kept apart.
        """
        if utt.ended is not None:
            # Its own span: a backchannel's half second widened to one would be the floor
            # holder's around it, and a slow decoder would merge it into their final.
            return self._speaker(utt, *self._span(utt)) or utt.track
        end = utt.start_epoch + max(utt.partial_samples, SAMPLE_RATE) / SAMPLE_RATE
        return self._speaker(utt, utt.start_epoch, end) or utt.track

    def _speaker(self, utt: Utterance, start: float, end: float) -> str | None:
        """Who said ``[start, end]`` (epoch) of an utterance (see the class arguments)."""
        named = utt.speaker_hint or self._frame_speaker(utt.track)
        if named:
            return named
        if self._track_names is not None:
            return self._track_names.name(utt.track, start, end)
        return floor_holder_for(self._timeline, start, end)

    async def partial(self, utt: Utterance, result: DecodeResult) -> None:
        """Emit a partial hypothesis unless it is no speech, unchanged, or the consumer lags."""
        verdict = judge(
            drop_repeated(result.text, utt.repeated),
            result.stats,
            voiced_s=1.0,
            by_level=utt.by_level,
        )
        if verdict.dropped or verdict.text == utt.partial_text:
            return
        segment = self._segment(utt, verdict.text, result, completed=False)
        try:
            self._out.put_nowait(segment)
        except asyncio.QueueFull:
            self._metrics.partials_skipped += 1
            return
        utt.partial_text = verdict.text
        self._metrics.partials += 1

    async def final(self, utt: Utterance, result: DecodeResult) -> None:
        """Commit an ended utterance: its final segment, or the clearing of its partials."""
        assert utt.ended is not None  # noqa: S101 - finals exist only for ended utterances
        evidence_s = utt.ended.evidence_s
        text = drop_repeated(result.text, utt.repeated)
        verdict = judge(
            text, result.stats, utt.ended.voiced_s, evidence_s, by_level=utt.ended.by_level
        )
        # Voice evidence that did not become text is counted with the rule that lost it; voice
        # the decoder read as hesitations only ("Um...") is counted apart, as such: it was
        # heard, and transcripts leave hesitations out.
        n_words = len(verdict.text.split()) if not verdict.dropped else 0
        covered = n_words / _WORDS_PER_EVIDENCE_S
        if verdict.dropped == "hesitation":
            covered = min(evidence_s, hesitations(text) / _WORDS_PER_EVIDENCE_S)
            self._metrics.hesitation_voice_s += covered
        if evidence_s > covered:
            start, end = self._span(utt)
            self._metrics.lose(
                verdict.dropped or "sparse_text",
                evidence_s - covered,
                track=utt.track,
                segment_id=utt.segment_id,
                span=f"{start - self._join_time:.2f}-{end - self._join_time:.2f}",
                words=n_words,
            )
        if verdict.dropped:
            self._metrics.dropped[verdict.dropped] += 1
            if utt.partial_text is not None:
                # Partials were shown for what turned out to be no speech: clear them.
                await self._out.put(self._segment(utt, "", result, completed=False))
            return
        if self._track_names is not None:
            self._track_names.observe(utt.track, *self._span(utt))
        final = self._segment(utt, verdict.text, result, completed=True)
        if self._track_names is not None:
            self._track_names.remember(utt.track, final.speaker, *self._span(utt))
        await self._out.put(final)
        # Speaker intervals older than any utterance still open are no longer needed.
        self._timeline.forget_before(final.absolute_start_time.timestamp() - _TIMELINE_KEEP_S)
        if self._context_words:
            words = f"{self._context.get(utt.track, '')} {verdict.text}".split()
            self._context[utt.track] = " ".join(words[-self._context_words :])
        self._metrics.finals += 1
        if utt.end_wall is not None:
            self._metrics.final_delays_s.append(time.monotonic() - utt.end_wall)
        # Where a final's time goes: voice end → the segmenter ended it (the endpoint's silence,
        # or a speaker change seen, plus capture: ``capture_lag_s`` of it) → its final decode
        # started (``waited_s``: the finals and the decode before it) → committed; one line a
        # final, with the finals' backlog left behind it.
        now, voice_end = time.time(), final.absolute_end_time.timestamp()
        ended = now - (time.monotonic() - utt.ended_wall) if utt.ended_wall else now
        waited = (
            utt.final_wall - utt.ended_wall
            if utt.final_wall is not None and utt.ended_wall is not None
            else None
        )
        log.info(
            "final committed",
            extra={
                "track": utt.track,
                "speaker": final.speaker,
                "speculated": utt.ended.speculated,
                "voice_end": round(voice_end, 3),
                "ended_after_s": round(ended - voice_end, 3),
                "capture_lag_s": utt.ended_lag_s,
                "waited_s": None if waited is None else round(waited, 3),
                "committed_after_s": round(now - voice_end, 3),
                "backlog_s": round(self._metrics.backlog_s, 1),
            },
        )

    def clear_partial(self, utt: Utterance) -> None:
        """Emit an empty partial: the utterance whose partials were shown is no speech."""
        at = datetime.fromtimestamp(utt.start_epoch, UTC)
        start = round(utt.start_epoch - self._join_time, 3)
        cleared = Segment(
            id=utt.segment_id,
            start=start,
            end=start,
            absolute_start_time=at,
            absolute_end_time=at,
            text="",
            completed=False,
            tier="realtime",
        )
        with contextlib.suppress(asyncio.QueueFull):
            self._out.put_nowait(cleared)

    def _span(self, utt: Utterance) -> tuple[float, float]:
        """Epoch seconds of an utterance's voice (pre-roll and kept silence left out)."""
        if utt.ended is not None:
            lead, audio_len, trail = utt.ended.lead, len(utt.ended.audio), utt.ended.trail
        else:
            lead, audio_len, trail = 0, 0, 0
        start_epoch = utt.start_epoch + lead / SAMPLE_RATE
        end_epoch = utt.start_epoch + max(lead, audio_len - trail) / SAMPLE_RATE
        if utt.ended is None:
            end_epoch = max(start_epoch, utt.start_epoch + utt.partial_samples / SAMPLE_RATE)
        return start_epoch, end_epoch

    def _segment(
        self, utt: Utterance, text: str, result: DecodeResult, *, completed: bool
    ) -> Segment:
        start_epoch, end_epoch = self._span(utt)
        speaker = self._speaker(utt, start_epoch, end_epoch)
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
