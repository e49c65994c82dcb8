"""Cut one track's audio into utterances from per-window speech probabilities.

Pure logic, no model: the caller feeds samples together with the VAD probabilities of the
512-sample windows they complete (:mod:`agent.transcribe.vad`), and gets events back. All
decisions use sample counts (the frames' own clock), never the wall clock, so replaying a file
faster than real time cuts it exactly as live audio would be cut.

An utterance starts on a window with probability ≥ ``threshold`` and keeps ``pre_roll_s`` of
audio before it. Once the probability stays below ``neg_threshold`` for ``speculate_s`` the
segmenter emits :class:`Speculate` with the audio so far (speech plus that short tail): decoding
it right away is what makes the final segment arrive soon after speech ends. Speech coming back
before ``endpoint_s`` of silence emits :class:`Resume` (the speculative text becomes a partial);
otherwise :class:`Ended` closes the utterance with exactly the speculated audio, so a finished
speculative decode is the final result; with less than ``min_speech_s`` of speech it is
:class:`Discarded` instead. Speech there is what held the utterance open: windows at or above
``threshold``, and those at or above ``neg_threshold`` that follow them (the hysteresis above).
A short word's consonants sit near 0.5: a recorded "six" (Common Voice), said 0.2 s after
another speaker's "Fire fox", scored 0.77 0.84 0.68 0.33 0.17 0.49 0.56 0.53 0.48 0.48: 5
windows (0.16 s) at 0.5 or more, 7 (0.22 s) by the hysteresis. Counting only the first against
the former 0.25 s, the word was discarded unheard. A click is 1-3 windows.

Bounded finalisation: no utterance waits for a long silence to be final.

- *Commit points in long speech*: once an utterance holds ``soft_max_s`` of audio, the next
  pause of ``speculate_s`` ends it at once (the speculation just queued is its final) instead
  of waiting ``endpoint_s``; a pause is a word boundary, so committing there splits no word.
  People pause 150–400 ms between phrases, so a monologue is committed phrase by phrase, a few
  seconds behind the voice, and each audio second is decoded for a final once.
- *Hard cap*: utterances longer than ``max_utterance_s`` without any such pause are cut at
  their quietest window of the last ``split_search_s``.
- *Speaker changes*: :meth:`UtteranceSegmenter.cut` ends the open utterance at the quietest
  window around a sample the caller names (a mixed track's active-speaker change).

Voice evidence: beside the decision, each window says whether it is evidence of voice by a
looser, independent test (probability at or above ``evidence_threshold`` *and* loud above the
track's noise floor, ``agent.transcribe.level``). Every utterance carries the seconds of such
windows it holds (``evidence_s`` of :class:`Ended` and :class:`Discarded`), so the tier can
count the voice that never became text and why; windows of evidence that no utterance took
(left behind the pre-roll while the VAD stayed closed) are counted in
:attr:`UtteranceSegmenter.unheard_s` when a run of them holds ``UNHEARD_MIN_S`` or more: a
breath or the fading tail of a word the previous utterance already holds is not speech lost.
A run bridges gaps of up to ``UNHEARD_BRIDGE_S``: whispered speech reaches the evidence
threshold in scattered windows only (MFA's whispered "Montreal forced aligner", which tiny.en
transcribes whole, after a second of silence: 18 of its 115 windows, in runs of one to five),
and counted by unbroken runs it vanished without a trace (issue 32).

Level start: Silero scores some voices as silence although they are loud. MFA's whispered and
falsetto clips, in the conversational set, had no window at 0.5 and 5–29 % at 0.15, with
64–85 % of their windows 12 dB above the noise floor, so no utterance opened and tiny.en,
which transcribes them whole, never saw them. A run of loud windows (gaps of up to
``UNHEARD_BRIDGE_S`` bridged) of ``level_open_s`` or more that holds ``level_open_evidence``
windows of voice evidence opens an utterance (:class:`Started` ``by_level``) with the run
(up to about 2 s) and the pre-roll before it; a loud stretch the VAD scores as silence
throughout (white or brown noise, a hum, typing: at most 0.11) opens nothing. Such an
utterance is held open by its loud windows as well as by the VAD, and its texts are kept only
when the model is sure of them (``agent.transcribe.filters.judge``). A VAD start that would be
discarded as too short while the level still hears a voice goes on as a level start (a
whispered sentence that opened on two windows at 0.5); a level start the VAD then hears as
speech (``_LEVEL_TO_VAD_WINDOWS``) follows the VAD's pauses again.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from agent.capture.audio import SAMPLE_RATE
from agent.transcribe.vad import WINDOW

UNHEARD_MIN_S = 0.19
"""Least run of voice evidence outside any utterance that counts as unheard (6 windows)."""
_UNHEARD_MIN_WINDOWS = round(UNHEARD_MIN_S * SAMPLE_RATE / WINDOW)
UNHEARD_BRIDGE_S = 0.13
"""Longest gap without evidence inside one run of unheard voice evidence (4 windows)."""
_UNHEARD_BRIDGE_WINDOWS = round(UNHEARD_BRIDGE_S * SAMPLE_RATE / WINDOW)
_LEVEL_RUN_MAX_WINDOWS = 62
"""Longest loud run (about 2 s) a level start takes in (see ``SegmenterOptions.level_open_s``)."""
# An utterance the level opened follows the VAD again once this many of its last
# ``_LEVEL_TO_VAD_SPAN`` windows (0.48 s of about 1 s) reach the VAD's threshold: speech the
# level opened in a noisy lead-in (JFK's inaugural, the crowd under it) does so at once, and
# the level, which stays up in that noise, no longer holds its pauses (it made the whole clip
# one 10.6 s utterance); a whisper reaches 0.5 in short bursts only (MFA's whisper_sentence
# 1 s after a loud reader: 11 windows in a row, then none).
_LEVEL_TO_VAD_WINDOWS = 15
_LEVEL_TO_VAD_SPAN = 30


class SegmenterOptions(BaseModel):
    """Thresholds of the utterance cutter; durations in seconds of audio."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float = Field(default=0.5, gt=0, lt=1)
    neg_threshold: float = Field(default=0.35, gt=0, lt=1)
    pre_roll_s: float = Field(default=0.3, ge=0)
    speculate_s: float = Field(default=0.16, ge=0.032)
    endpoint_s: float = Field(default=0.45, ge=0.064)
    min_speech_s: float = Field(default=0.15, ge=0)
    soft_max_s: float = Field(default=6.0, gt=0.5)
    max_utterance_s: float = Field(default=15.0, gt=2, le=29.5)
    split_search_s: float = Field(default=5.0, gt=0)
    evidence_threshold: float = Field(default=0.15, gt=0, lt=1)
    # The level start (module docstring): least loud run, and least windows of voice evidence
    # in it; None: only the VAD opens utterances.
    level_open_s: float | None = Field(default=0.25, gt=0, le=1.0)
    level_open_evidence: int = Field(default=3, ge=1)


@dataclass(frozen=True, slots=True)
class Started:
    """Speech began: ``start_sample`` counts samples since the track's first one.

    ``by_level`` is True when the level opened it, not the VAD (module docstring): its texts
    must be confident to be kept (``agent.transcribe.filters.judge``).
    """

    utterance: int
    start_sample: int
    by_level: bool = False


@dataclass(frozen=True, slots=True)
class Speculate:
    """Silence began; ``audio`` is the utterance so far, decodable as if it were final."""

    utterance: int
    start_sample: int
    audio: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Resume:
    """Speech came back before the endpoint: the last speculation was not final."""

    utterance: int


@dataclass(frozen=True, slots=True)
class Ended:
    """The utterance is over.

    Attributes:
        utterance: Number of the utterance on this track (0, 1, …).
        start_sample: Track sample where ``audio`` begins (pre-roll included).
        audio: What to decode; identical to the last speculation when ``speculated``.
        speculated: True when a :class:`Speculate` carried exactly this audio.
        voiced_s: Seconds the VAD judged voiced.
        lead: Samples of pre-roll before the first voiced window.
        trail: Samples of silence kept after the last voiced window.
        evidence_s: Seconds of voice evidence in ``audio`` (module docstring).
        by_level: The level opened it, not the VAD (:class:`Started`); ``voiced_s`` is then
            the seconds the level held it open.
    """

    utterance: int
    start_sample: int
    audio: npt.NDArray[np.float32]
    speculated: bool
    voiced_s: float
    lead: int = 0
    trail: int = 0
    evidence_s: float = 0.0
    by_level: bool = False


@dataclass(frozen=True, slots=True)
class Discarded:
    """The utterance had less than ``min_speech_s`` of speech (a click, a cough): forget it.

    ``evidence_s`` is the voice evidence it held (module docstring), lost with it.
    """

    utterance: int
    evidence_s: float = 0.0


SegmenterEvent = Started | Speculate | Resume | Ended | Discarded


@dataclass(slots=True)
class _Open:
    number: int
    start_sample: int
    chunks: list[npt.NDArray[np.float32]] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    evidence: list[bool] = field(default_factory=list)
    loud: list[bool] = field(default_factory=list)
    length: int = 0
    lead: int = 0
    silence_windows: int = 0
    speculated_length: int | None = None
    by_level: bool = False

    def append(
        self, window: npt.NDArray[np.float32], prob: float, evidence: bool, loud: bool = False
    ) -> None:
        self.chunks.append(window)
        self.probs.append(prob)
        self.evidence.append(evidence)
        self.loud.append(loud)
        self.length += len(window)

    def evidence_s(self, windows: int | None = None) -> float:
        kept = self.evidence if windows is None else self.evidence[:windows]
        return sum(kept) * WINDOW / SAMPLE_RATE

    def audio(self, length: int | None = None) -> npt.NDArray[np.float32]:
        data = np.concatenate(self.chunks) if self.chunks else np.zeros(0, dtype=np.float32)
        return data if length is None else data[:length]


class UtteranceSegmenter:
    """Per-track utterance state machine (see module docstring)."""

    def __init__(self, options: SegmenterOptions | None = None) -> None:
        self._opts = options or SegmenterOptions()
        # Windows before any utterance: (samples, voice evidence, loud). The pre-roll of a VAD
        # start is the last ``_pre_roll_windows``; a level start takes its loud run as well,
        # so up to ``_LEVEL_RUN_MAX_WINDOWS`` more are held before they count as unheard.
        self._pre_roll: deque[tuple[npt.NDArray[np.float32], bool, bool]] = deque()
        self._pre_roll_windows = max(0, round(self._opts.pre_roll_s * SAMPLE_RATE / WINDOW))
        level_s = self._opts.level_open_s
        self._level_open_windows = (
            None if level_s is None else max(1, round(level_s * SAMPLE_RATE / WINDOW))
        )
        self._held_windows = self._pre_roll_windows + (
            0 if level_s is None else _LEVEL_RUN_MAX_WINDOWS
        )
        self._loud_run = 0  # windows from the current loud run's first loud window…
        self._loud_gap = 0  # …and since its last loud one
        self._recent_evidence: deque[bool] = deque(maxlen=_LEVEL_RUN_MAX_WINDOWS)
        self._unheard_windows = 0
        self._unheard_run = 0  # evidence windows in the current run…
        self._unheard_gap = 0  # …and windows without evidence since its last one
        self._evidence_windows = 0
        self._samples_seen = 0
        self._next_number = 0
        self._open: _Open | None = None
        self._pending = np.zeros(0, dtype=np.float32)
        self._speculate_windows = max(1, round(self._opts.speculate_s * SAMPLE_RATE / WINDOW))
        self._endpoint_windows = max(
            self._speculate_windows + 1, round(self._opts.endpoint_s * SAMPLE_RATE / WINDOW)
        )
        self._max_windows = round(self._opts.max_utterance_s * SAMPLE_RATE / WINDOW)
        self._soft_windows = round(self._opts.soft_max_s * SAMPLE_RATE / WINDOW)

    @property
    def evidence_s(self) -> float:
        """Seconds of voice evidence pushed so far (module docstring)."""
        return self._evidence_windows * WINDOW / SAMPLE_RATE

    @property
    def unheard_s(self) -> float:
        """Seconds of voice evidence no utterance took so far (the VAD stayed closed)."""
        return self._unheard_windows * WINDOW / SAMPLE_RATE

    @property
    def speaking(self) -> bool:
        """True while an utterance is open."""
        return self._open is not None

    @property
    def samples_pushed(self) -> int:
        """Samples given to :meth:`push` so far (the index the next sample will have)."""
        return self._samples_seen + len(self._pending)

    @property
    def pausing(self) -> bool:
        """True while an utterance is open but its latest window was silent."""
        return self._open is not None and self._open.silence_windows > 0

    @property
    def samples_seen(self) -> int:
        """Samples consumed so far (the track's audio clock)."""
        return self._samples_seen

    def current(self) -> tuple[int, int, npt.NDArray[np.float32]] | None:
        """``(utterance, start_sample, audio so far)`` of the open utterance, for partials."""
        if self._open is None:
            return None
        return (self._open.number, self._open.start_sample, self._open.audio())

    def push(
        self,
        samples: npt.NDArray[np.float32],
        probs: npt.NDArray[np.float32],
        loud: npt.NDArray[np.bool_] | None = None,
    ) -> list[SegmenterEvent]:
        """Consume samples and the probabilities of the windows they complete.

        ``probs`` must come from a detector fed the same samples: one value per completed
        512-sample window, remainders carried to the next call. ``loud`` (same length) says
        which windows stood above the track's noise floor; None: every window did.
        """
        data = np.concatenate([self._pending, samples]) if len(self._pending) else samples
        usable = len(probs) * WINDOW
        if usable > len(data):
            raise ValueError("more VAD windows than samples")
        self._pending = data[usable:].copy()
        events: list[SegmenterEvent] = []
        threshold = self._opts.evidence_threshold
        for i, prob in enumerate(probs.tolist()):
            is_loud = loud is None or bool(loud[i])
            evidence = prob >= threshold and is_loud
            self._evidence_windows += evidence
            self._window(
                data[i * WINDOW : (i + 1) * WINDOW],
                prob,
                evidence,
                loud is not None and is_loud,
                events,
            )
        return events

    def _remember(self, window: npt.NDArray[np.float32], evidence: bool, loud: bool) -> None:
        """Keep a window as pre-roll; evidence pushed out of it was never heard."""
        self._pre_roll.append((window, evidence, loud))
        while len(self._pre_roll) > self._held_windows:
            self._forget(self._pre_roll.popleft()[1])

    def _take_roll(self, windows: int) -> list[tuple[npt.NDArray[np.float32], bool, bool]]:
        """The last ``windows`` held windows, for a new utterance; the older ones go unheard."""
        while len(self._pre_roll) > windows:
            self._forget(self._pre_roll.popleft()[1])
        roll = list(self._pre_roll)
        self._pre_roll.clear()
        self._end_unheard_run()  # the windows since the run went with the roll
        self._loud_run = self._loud_gap = 0
        self._recent_evidence.clear()
        return roll

    def _level_run(self, loud: bool, evidence: bool) -> bool:
        """Follow the loud run the VAD has not opened on; True when it should open one.

        It should when the run holds ``level_open_s`` and, in its last two seconds at most,
        ``level_open_evidence`` windows of voice evidence: a loud stretch Silero scores as
        silence throughout (noise, a hum, someone typing) opens nothing.
        """
        if self._level_open_windows is None:
            return False
        self._recent_evidence.append(evidence)
        if loud:
            self._loud_run = min(_LEVEL_RUN_MAX_WINDOWS, self._loud_run + self._loud_gap + 1)
            self._loud_gap = 0
        elif self._loud_run and self._loud_gap < _UNHEARD_BRIDGE_WINDOWS:
            self._loud_gap += 1
        else:
            self._loud_run = self._loud_gap = 0
        if not loud or self._loud_run < self._level_open_windows:
            return False
        recent = list(self._recent_evidence)[-self._loud_run :]
        return sum(recent) >= self._opts.level_open_evidence

    def _forget(self, evidence: bool) -> None:
        """A window leaves the pre-roll unheard; runs of evidence large enough are counted."""
        if evidence:
            self._unheard_run += 1
            self._unheard_gap = 0
        elif self._unheard_run and self._unheard_gap < _UNHEARD_BRIDGE_WINDOWS:
            self._unheard_gap += 1
        else:
            self._end_unheard_run()

    def _end_unheard_run(self) -> None:
        if self._unheard_run >= _UNHEARD_MIN_WINDOWS:
            self._unheard_windows += self._unheard_run
        self._unheard_run = 0
        self._unheard_gap = 0

    def flush(self) -> list[SegmenterEvent]:
        """End the open utterance now (track closed): returns its :class:`Ended`, if any."""
        events: list[SegmenterEvent] = []
        if self._open is not None:
            tail = self._pending
            if len(tail):
                self._open.append(tail, 0.0, False)
                self._samples_seen += len(tail)
            self._pending = np.zeros(0, dtype=np.float32)
            self._close(self._open.length, events, speculated=False)
        for _, evidence, _ in self._pre_roll:
            self._forget(evidence)
        self._end_unheard_run()
        self._pre_roll.clear()
        return events

    def _window(
        self,
        window: npt.NDArray[np.float32],
        prob: float,
        evidence: bool,
        loud: bool,
        out: list[SegmenterEvent],
    ) -> None:
        opts = self._opts
        position = self._samples_seen
        self._samples_seen += len(window)
        utt = self._open
        if utt is None:
            by_level = prob < opts.threshold and self._level_run(loud, evidence)
            if prob >= opts.threshold or by_level:
                # A level start keeps its loud run (its own windows' loudness) and the
                # pre-roll before it; a VAD start only the pre-roll, as silence.
                run = self._loud_run - 1 if by_level else 0
                roll = self._take_roll(self._pre_roll_windows + run)
                start = position - sum(len(w) for w, _, _ in roll)
                # The voice starts where the loud run does: the lead is the pre-roll only.
                lead = position - start - min(run, len(roll)) * WINDOW
                utt = _Open(
                    number=self._next_number,
                    start_sample=start,
                    lead=lead,
                    by_level=by_level,
                )
                self._next_number += 1
                for w, ev, was_loud in roll:
                    utt.append(w, 0.0, ev, was_loud and by_level)
                utt.append(window, prob, evidence, loud)
                self._open = utt
                out.append(Started(utt.number, start, by_level))
            else:
                self._remember(window, evidence, loud)
            return
        utt.append(window, prob, evidence, loud)
        if utt.by_level and prob >= opts.threshold:
            recent = utt.probs[-_LEVEL_TO_VAD_SPAN:]
            if sum(p >= opts.threshold for p in recent) >= _LEVEL_TO_VAD_WINDOWS:
                # The VAD hears this voice after all (speech after a noisy lead-in): its own
                # pauses end it again, not the level, which stays up in a noisy room.
                utt.by_level = False
        if (
            prob >= opts.threshold
            or (prob >= opts.neg_threshold and utt.silence_windows == 0)
            or (utt.by_level and loud)
        ):
            if utt.speculated_length is not None:
                out.append(Resume(utt.number))
                utt.speculated_length = None
            utt.silence_windows = 0
        else:
            utt.silence_windows += 1
            if utt.silence_windows == self._speculate_windows:
                utt.speculated_length = utt.length
                out.append(Speculate(utt.number, utt.start_sample, utt.audio()))
                if len(utt.probs) >= self._soft_windows:
                    # Long speech: this pause is a commit point (see module docstring).
                    self._close(utt.length, out, speculated=True)
                    return
            elif utt.silence_windows >= self._endpoint_windows:
                if self._level_holds(utt, loud):
                    # Too little for the VAD, but the level still hears a voice: go on.
                    utt.by_level, utt.silence_windows = True, 0
                    if utt.speculated_length is not None:
                        out.append(Resume(utt.number))
                        utt.speculated_length = None
                    return
                length = utt.speculated_length or utt.length
                self._close(length, out, speculated=utt.speculated_length is not None)
                return
        if len(utt.probs) >= self._max_windows:
            self._split(out)

    def _level_holds(self, utt: _Open, loud: bool) -> bool:
        """Whether a VAD start about to be discarded as too short goes on as a level start.

        A whispered sentence often opens on two windows at 0.5 that the VAD then scores as
        silence; discarded, its first words went with it and the level start after it began
        too late (MFA's ``whisper_sentence2``: "there's gonna be" lost).
        """
        return (
            self._level_open_windows is not None
            and not utt.by_level
            and loud
            and self._speech_seconds(utt.probs) < self._opts.min_speech_s
            and sum(utt.evidence) >= self._opts.level_open_evidence
        )

    def _voiced_seconds(self, probs: list[float]) -> float:
        voiced = sum(1 for p in probs if p >= self._opts.threshold)
        return voiced * WINDOW / SAMPLE_RATE

    def _speech_seconds(self, probs: list[float], loud: list[bool] | None = None) -> float:
        """Seconds of windows that held speech by the hysteresis (module docstring).

        With ``loud`` (an utterance the level opened) a loud window holds speech as well.
        """
        held, speaking = 0, False
        for i, p in enumerate(probs):
            speaking = p >= self._opts.threshold or (speaking and p >= self._opts.neg_threshold)
            held += speaking or (loud is not None and loud[i])
        return held * WINDOW / SAMPLE_RATE

    def _held_seconds(self, utt: _Open, windows: int) -> float:
        """``voiced_s`` of an ending utterance's first ``windows``.

        VAD-voiced seconds; for a level start, the seconds its level or the VAD held it.
        """
        if utt.by_level:
            return self._speech_seconds(utt.probs[:windows], utt.loud[:windows])
        return self._voiced_seconds(utt.probs[:windows])

    def _close(self, length: int, out: list[SegmenterEvent], *, speculated: bool) -> None:
        utt = self._open
        assert utt is not None  # noqa: S101 - callers hold an open utterance
        self._open = None
        kept_windows = -(-length // WINDOW)
        voiced = self._held_seconds(utt, kept_windows)
        # The silence after the cut becomes pre-roll for the next utterance.
        audio = utt.audio()
        tail = audio[length:]
        for i in range(0, len(tail) - len(tail) % WINDOW, WINDOW):
            # Heard already: the utterance's endpoint judged these windows its silence.
            self._remember(tail[i : i + WINDOW], False, False)
        evidence_s = utt.evidence_s(kept_windows)
        loud = utt.loud[:kept_windows] if utt.by_level else None
        if self._speech_seconds(utt.probs[:kept_windows], loud) < self._opts.min_speech_s:
            out.append(Discarded(utt.number, evidence_s))
            return
        trail = utt.silence_windows * WINDOW if not speculated else self._speculate_windows * WINDOW
        trail = min(trail, max(0, length - utt.lead))
        out.append(
            Ended(
                utt.number,
                utt.start_sample,
                audio[:length],
                speculated,
                voiced,
                utt.lead,
                trail,
                evidence_s,
                utt.by_level,
            )
        )

    def cut(
        self,
        at_sample: int,
        search_before: int,
        min_part: int,
        min_rest: int | None = None,
        overlap: int = 0,
    ) -> list[SegmenterEvent]:
        """End the open utterance at its quietest window before ``at_sample`` (a speaker change).

        The cut falls in ``[at_sample - search_before, at_sample]``; the rest carries on as a new
        utterance.

        Nothing happens when no utterance is open, or when either part would be shorter
        than ``min_part`` samples (then the change is too close to an edge to matter).

        Args:
            at_sample: Track sample of the change (must already be pushed).
            search_before: Samples before ``at_sample`` where the cut may fall.
            min_part: Least samples of audio on each side of the cut.
            min_rest: Least samples after the cut, when not ``min_part``: the rest goes on
                as an open utterance, so it may start short, and the cut need not wait
                ``min_part`` of audio past the change to fall where the voices meet.
            overlap: Samples before the cut the rest starts with as well (whole windows), so
                a word the cut went through is whole in the rest; the caller drops what the
                rest repeats (an agreement cut, ``agent.transcribe.agreement``).

        Returns:
            ``Ended`` of the first part and ``Started`` of the rest, or nothing.
        """
        utt = self._open
        if utt is None:
            return []
        hi = min(len(utt.probs), (at_sample - utt.start_sample) // WINDOW)
        lo = max(-(-min_part // WINDOW), (at_sample - search_before - utt.start_sample) // WINDOW)
        rest = min_part if min_rest is None else min_rest
        hi = min(hi, len(utt.probs) - -(-rest // WINDOW))
        if hi <= lo:
            return []
        probs = np.asarray(utt.probs[lo:hi], dtype=np.float32)
        # The quietest window; among equals the latest (nearest the reported change).
        window = lo + len(probs) - 1 - int(np.argmin(probs[::-1]))
        out: list[SegmenterEvent] = []
        self._split(out, window, overlap // WINDOW)
        return out

    def _split(
        self, out: list[SegmenterEvent], cut_window: int | None = None, overlap: int = 0
    ) -> None:
        utt = self._open
        assert utt is not None  # noqa: S101 - called only with an open utterance
        if cut_window is None:
            search = round(self._opts.split_search_s * SAMPLE_RATE / WINDOW)
            probs = np.asarray(utt.probs, dtype=np.float32)
            lo = max(1, len(probs) - search)
            cut_window = lo + int(np.argmin(probs[lo:]))
        cut = cut_window * WINDOW
        audio = utt.audio()
        rest_audio, rest_probs = audio[cut:], utt.probs[cut_window:]
        if utt.speculated_length is not None:
            out.append(Resume(utt.number))
        voiced = self._held_seconds(utt, cut_window)
        out.append(
            Ended(
                utt.number,
                utt.start_sample,
                audio[:cut],
                False,
                voiced,
                utt.lead,
                0,
                utt.evidence_s(cut_window),
                utt.by_level,
            )
        )
        overlap = min(overlap, cut_window)
        nxt = _Open(
            number=self._next_number,
            start_sample=utt.start_sample + cut - overlap * WINDOW,
            lead=overlap * WINDOW,
            by_level=utt.by_level,
        )
        self._next_number += 1
        for i in range(cut_window - overlap, cut_window):
            # Heard in the part before (its evidence counted there), repeated for context.
            nxt.append(audio[i * WINDOW : (i + 1) * WINDOW], 0.0, False)
        rest = zip(rest_probs, utt.evidence[cut_window:], utt.loud[cut_window:], strict=True)
        for i, (prob, evidence, loud) in enumerate(rest):
            nxt.append(rest_audio[i * WINDOW : (i + 1) * WINDOW], prob, evidence, loud)
        nxt.silence_windows = utt.silence_windows
        self._open = nxt
        out.append(Started(nxt.number, nxt.start_sample, nxt.by_level))
