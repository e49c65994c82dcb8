"""Conversation scenarios as the realtime tier hears them, and how a transcript scores on them.

:func:`stream_items` turns a :class:`testmeeting.conversation.Conversation` into the frames
(and, on a mixed track, the active-speaker changes) a bot would feed its transcriber, for either
track layout: ``per_speaker`` (one track per participant, named, like Meet) or ``mixed`` (one
track, speakers told only by the indicator, like Zoom and Teams). :func:`score` compares the
final segments with the ground truth: turns left without a final, end-of-turn → final delays,
WER, word-level speaker accuracy and finals that span two speakers.

Times are seconds from the conversation's start (``Segment.start`` when the frames are stamped
from ``join``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from agent.capture.audio import SAMPLE_RATE, AudioFrame, SpeakerActivity
from agent.transcribe.normalize import normalize_text, word_errors
from testmeeting.conversation import Conversation, Turn

Layout = Literal["per_speaker", "mixed"]
FRAME = SAMPLE_RATE // 10  # 100 ms, the capture's block size
# Exclusive speech of a second speaker inside one final beyond this means it spans two.
_SPAN_TOLERANCE_S = 0.5


@dataclass(frozen=True, slots=True)
class Final:
    """A final segment in conversation time.

    Attributes:
        text: Its text.
        speaker: The name it carries (None when nobody told).
        start: Seconds from the conversation start.
        end: Seconds from the conversation start.
        arrival: Seconds from the conversation start at which it reached the consumer, when
            replayed in real time; None otherwise.
    """

    text: str
    speaker: str | None
    start: float
    end: float
    arrival: float | None = None


@dataclass(slots=True)
class Score:
    """How a transcript fares on a conversation (see :func:`score`).

    Attributes:
        turns: Turns scored (on a mixed track backchannels are left out: they are spoken
            over someone else and cannot be separated from one track).
        lost: Turns with no final of theirs.
        delays: End-of-turn → final arrival, seconds, per turn with a final (real time only).
        wer: Word error rate of all finals against all references.
        speaker_words: ``(words attributed to a speaker who was talking, words)``.
        spanning: Finals in which two speakers each spoke alone for more than 0.5 s.
    """

    turns: int = 0
    lost: list[Turn] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    wer: float = 0.0
    speaker_words: tuple[int, int] = (0, 0)
    spanning: list[Final] = field(default_factory=list)

    @property
    def speaker_accuracy(self) -> float:
        """Share of final words attributed to someone speaking at that time (1.0 if none)."""
        right, words = self.speaker_words
        return right / words if words else 1.0


def stream_items(
    conversation: Conversation,
    layout: Layout,
    join: float,
    *,
    indicator: bool = True,
) -> list[AudioFrame | SpeakerActivity]:
    """Frames (and indicator changes) of a conversation, in the order capture delivers them.

    Args:
        conversation: The laid-out conversation.
        layout: ``per_speaker`` (frames carry the speaker's name) or ``mixed`` (one track).
        join: Epoch seconds of the conversation's start (frames are stamped from it).
        indicator: On a mixed track, include the active-speaker changes.

    Returns:
        Items sorted by the time they become available (a frame at its end).
    """
    items: list[tuple[float, int, AudioFrame | SpeakerActivity]] = []
    tracks: list[tuple[str, str | None]]
    if layout == "mixed":
        tracks = [("mixed", None)]
    else:
        tracks = [(f"track-{name}", name) for name in conversation.speakers]
    for track_id, speaker in tracks:
        pcm = conversation.mixed() if speaker is None else conversation.track(speaker)
        for i in range(0, len(pcm), FRAME):
            frame = AudioFrame(track_id, join + i / SAMPLE_RATE, pcm[i : i + FRAME], speaker)
            items.append((frame.end_time, 1, frame))
    if layout == "mixed" and indicator:
        for at, name, speaking in conversation.indicator_changes():
            items.append((join + at, 0, SpeakerActivity(name, speaking, join + at)))
    items.sort(key=lambda item: (item[0], item[1]))
    return [item for _, _, item in items]


def _speaking(turn: Turn, at: float, margin: float = 0.15) -> bool:
    return turn.voiced_start - margin <= at <= turn.voiced_end + margin


def _exclusive_seconds(conversation: Conversation, speaker: str, lo: float, hi: float) -> float:
    """Seconds of ``[lo, hi]`` in which ``speaker`` and nobody else was in a turn."""
    step = 0.05
    total = 0.0
    at = lo
    while at < hi:
        talking = {t.speaker for t in conversation.turns if _speaking(t, at, 0.0)}
        if talking == {speaker}:
            total += step
        at += step
    return total


def score(conversation: Conversation, finals: Sequence[Final], layout: Layout) -> Score:
    """Score final segments against the conversation's ground truth.

    A turn has a final when a final named for its speaker (or unnamed) overlaps its speech;
    its delay is from its last voiced sample to the latest arrival of such a final reaching
    into its last second. Words of a final are spread evenly over its span and each counts as
    right when its time falls in a turn of the final's speaker (nearest turn in silences).
    """
    result = Score()
    ordered = sorted(finals, key=lambda f: f.start)
    errors, words = word_errors(conversation.reference(), " ".join(f.text for f in ordered))
    result.wer = errors / words if words else 0.0
    for turn in conversation.turns:
        if layout == "mixed" and turn.backchannel:
            continue
        result.turns += 1
        mine = [
            f
            for f in ordered
            if f.speaker in (None, turn.speaker)
            and f.start < turn.voiced_end
            and f.end > turn.voiced_start
        ]
        if not mine:
            result.lost.append(turn)
            continue
        ending = [f.arrival for f in mine if f.end > turn.voiced_end - 1.0 and f.arrival]
        if ending:
            result.delays.append(max(ending) - turn.voiced_end)
    right = total = 0
    for final in ordered:
        tokens = normalize_text(final.text).split()
        span = max(final.end - final.start, 1e-3)
        for i, _ in enumerate(tokens):
            at = final.start + span * (i + 0.5) / len(tokens)
            speakers = {t.speaker for t in conversation.turns if _speaking(t, at)}
            if not speakers:
                nearest = min(
                    conversation.turns,
                    key=lambda t: min(abs(at - t.voiced_start), abs(at - t.voiced_end)),
                )
                speakers = {nearest.speaker}
            right += final.speaker in speakers
            total += 1
        alone = [
            name
            for name in conversation.speakers
            if _exclusive_seconds(conversation, name, final.start + 0.25, final.end - 0.25)
            > _SPAN_TOLERANCE_S
        ]
        if len(alone) > 1:
            result.spanning.append(final)
    result.speaker_words = (right, total)
    return result
