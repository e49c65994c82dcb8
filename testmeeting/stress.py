"""A stress set for a transcriber: clips of different speakers mixed onto one track, and a scorer.

Real meetings hand a transcriber one track (Zoom, Teams) on which a quiet or hoarse voice
follows a loud one, the next speaker starts before the last has finished, and a speaker
thinks for two seconds in the middle of a sentence. :func:`grid` lays packaged clips out that
way — deterministically from a seed — as :class:`Case` objects; :func:`score` says, for the
finals a transcriber produced on a case, how much of each clip it recovered and how many
finals ran two speakers together. No speaker signal (indicator, per-speaker track) is given:
the track is all there is.

The cases (``Case.kind``):

* ``pair``: clip A then clip B of another speaker; B's active level is A's + ``level`` dB;
  B's voice starts ``gap`` seconds after A's voice ends (negative: they overlap). One case per
  cell of ``levels_db × gaps_s``.
* ``triple``: A, B, C of three speakers; B at ``level`` and C at a drawn level relative to A;
  the first gap from the cell, the second drawn from ``gaps_s``. One per cell.
* ``quiet_after_loud``: a loud reading (LJ Speech, three sentences, about 20 s) then a hoarse,
  whispered, breathy, creaky or meeting-headset clip of the conversational set at −6, −9 or
  −12 dB, at every gap.
* ``pause_in_monologue``: a clip of another speaker, then a monologue (a clip with ≥ 4 s of
  voice) in which :data:`PAUSE_S` of silence is inserted at its quietest point between 30 and
  70 % of its voice (a word boundary: the quietest 100 ms there is a pause between words).

Levels are *active* levels (:func:`active_level_db`), not RMS over the whole clip, so a clip
with long pauses is not boosted for them. The first clip sits at :data:`BASE_LEVEL_DBFS`; a
case whose mix would exceed −1 dBFS is turned down as a whole (relative levels unchanged).
Gaps are measured between *voiced* edges (``testmeeting.conversation.voiced_span``); each clip
is cut to its voice ± :data:`MARGIN_S` (its own room sound) and placed on digital silence.

Clips come from ``testmeeting.packaged_speech`` (the English read-speech set and the
conversational set) with their speaker ids; two clips of one id are never paired.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from testmeeting.conversation import voiced_span
from testmeeting.packaged_speech import Clip, conversational_clips, packaged_clips

SAMPLE_RATE = 16_000
LEVELS_DB: tuple[float, ...] = (-12.0, -9.0, -6.0, -3.0, 0.0, 3.0, 6.0, 9.0, 12.0)
"""Level changes of the second (and third) clip, dB relative to the first's active level."""
GAPS_S: tuple[float, ...] = (-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4)
"""Seconds from one clip's voice end to the next one's voice start (negative: overlap)."""
QUIET_LEVELS_DB: tuple[float, ...] = (-6.0, -9.0, -12.0)
"""Levels of the quiet or hoarse clip after the loud reading."""
BASE_LEVEL_DBFS = -26.0
"""Active level of a case's first clip, dB full scale (ITU-T P.56's nominal speech level)."""
PEAK_DBFS = -1.0
"""A case's mix is turned down as a whole when its peak would exceed this."""
MARGIN_S = 0.25
"""Seconds of a clip kept before its first and after its last voiced 20 ms block."""
LEAD_IN_S = 0.5
TAIL_S = 1.0
PAUSE_S = 2.0
"""Silence inserted into a ``pause_in_monologue`` case's monologue."""
MONOLOGUE_MIN_S = 4.0
"""Seconds of voice a clip needs to be a ``pause_in_monologue`` monologue."""
READING_PAUSE_S = 0.35
"""Pause between the sentences of the loud reading (a reader's pause between sentences)."""
ACTIVITY_MARGIN_DB = 15.9
"""ITU-T P.56's margin: frames within this of the active level count as active."""
SPAN_MIN_WORDS = 2
"""A final spans two clips when it holds at least this many words of a second clip."""
MATCH_TOLERANCE_S = 1.0
"""A final is matched against the clips whose voice lies within this of its time span."""
_BLOCK = SAMPLE_RATE // 50  # 20 ms
_READING = ("LJ001-0001", "LJ001-0002", "LJ001-0003")
_QUIET_KINDS = ("hoarse", "whisper", "breathy", "creaky", "meeting")


def active_level_db(samples: npt.NDArray[np.int16]) -> float:
    """Active speech level of int16 samples, dB full scale (−inf for silence).

    A simplification of ITU-T P.56's method B: the mean power of the 20 ms frames whose power
    is within :data:`ACTIVITY_MARGIN_DB` of that mean (found by fixed-point iteration from
    the loudest frame), without P.56's envelope filter and hangover. Scaling the samples by
    ``g`` moves it by ``20·log10(g)`` (the same frames stay active), which is what the stress
    set needs; it is not a calibrated P.56 meter.

    Args:
        samples: Mono int16 samples at 16 kHz, shape ``(n,)``.
    """
    usable = len(samples) - len(samples) % _BLOCK
    if usable == 0:
        return -math.inf
    x = samples[:usable].astype(np.float64).reshape(-1, _BLOCK) / 32768.0
    power = np.mean(x * x, axis=1)
    level = float(power.max())
    if level <= 0.0:
        return -math.inf
    ratio = 10.0 ** (-ACTIVITY_MARGIN_DB / 10.0)
    for _ in range(200):
        updated = float(power[power >= level * ratio].mean())
        if abs(updated - level) <= 1e-12 * level:
            break
        level = updated
    return 10.0 * math.log10(level)


def quiet_point(samples: npt.NDArray[np.int16], lo: float = 0.3, hi: float = 0.7) -> int:
    """Sample index of the quietest 100 ms between ``lo`` and ``hi`` of the clip's voice.

    Between words is where a speech signal is quietest, so this is a word boundary (or a
    breath) for any clip with several words.

    Args:
        samples: Mono int16 samples at 16 kHz, shape ``(n,)``.
        lo: Start of the search, as a fraction of the voiced span.
        hi: End of the search, as a fraction of the voiced span.

    Returns:
        The centre of the quietest window, in samples from the clip's start.
    """
    first, last = voiced_span(samples)
    usable = len(samples) - len(samples) % _BLOCK
    x = samples[:usable].astype(np.float64).reshape(-1, _BLOCK)
    energy = np.convolve(np.mean(x * x, axis=1), np.ones(5), mode="same")  # 5 × 20 ms
    span = (last - first) * 50  # blocks
    a = int(first * 50 + lo * span)
    b = max(a + 1, int(first * 50 + hi * span))
    block = a + int(np.argmin(energy[a:b]))
    return block * _BLOCK + _BLOCK // 2


@dataclass(frozen=True, slots=True)
class Interval:
    """One clip on a case's track.

    Attributes:
        clip: The clip's name (its packaged stem, or ``LJ001-0001+…`` for the reading).
        speaker: Its speaker id.
        text: Its reference text as packaged (not normalised).
        start: Seconds from the track start to its first voiced 20 ms block.
        end: Seconds from the track start to the end of its last voiced block (an inserted
            pause included).
        level_db: Its active level minus the first clip's, dB (0.0 for the first clip).
        what: What the clip is (``hoarse``…; empty for read speech).
    """

    clip: str
    speaker: str
    text: str
    start: float
    end: float
    level_db: float
    what: str


@dataclass(frozen=True, slots=True)
class Piece:
    """How one clip is rendered onto a case's track.

    Attributes:
        samples: The clip as placed (cut to its voice ± :data:`MARGIN_S`, pause inserted),
            int16, shape ``(n,)``, before the gain.
        offset: Sample index on the track of ``samples[0]``.
        gain: Linear factor applied to ``samples``.
    """

    samples: npt.NDArray[np.int16]
    offset: int
    gain: float


@dataclass(frozen=True, slots=True)
class Case:
    """One stress case: a single track and who says what when on it.

    Attributes:
        name: ``<kind>-<index>``, unique within a grid.
        kind: ``pair``, ``triple``, ``quiet_after_loud`` or ``pause_in_monologue``.
        intervals: The clips in track order.
        gaps_s: Voice-end → next voice-start seconds between consecutive intervals.
        pause_at_s: Track second at which the inserted pause starts
            (``pause_in_monologue``), else ``None``.
        duration_s: Track length, seconds.
        pieces: The render recipe, one per interval.
    """

    name: str
    kind: str
    intervals: tuple[Interval, ...]
    gaps_s: tuple[float, ...]
    pause_at_s: float | None
    duration_s: float
    pieces: tuple[Piece, ...]

    def stems(self) -> list[npt.NDArray[np.int16]]:
        """Each interval alone on the track (int16, track length): what the mix adds up."""
        return [np.round(self._stem(piece)).astype(np.int16) for piece in self.pieces]

    @property
    def samples(self) -> npt.NDArray[np.int16]:
        """The track: 16 kHz mono int16, shape ``(duration_s × 16000,)``.

        Rendered on each access (a few milliseconds); keep the result to use it twice.
        """
        mix = np.zeros(self._length(), dtype=np.float64)
        for piece in self.pieces:
            mix += self._stem(piece)
        return np.clip(np.round(mix), -32768, 32767).astype(np.int16)

    def _length(self) -> int:
        return round(self.duration_s * SAMPLE_RATE)

    def _stem(self, piece: Piece) -> npt.NDArray[np.float64]:
        out = np.zeros(self._length(), dtype=np.float64)
        end = piece.offset + len(piece.samples)
        out[piece.offset : end] = piece.samples.astype(np.float64) * piece.gain
        return out


@dataclass(frozen=True, slots=True)
class _Placed:
    clip: Clip
    samples: npt.NDArray[np.int16]
    voice: tuple[int, int]  # voiced span within samples
    level_db: float
    pause_at: int | None  # sample index within samples


def _prepare(clip: Clip, level_db: float, pause: bool = False) -> _Placed:
    first, last = voiced_span(clip.samples)
    margin = round(MARGIN_S * SAMPLE_RATE)
    v0, v1 = round(first * SAMPLE_RATE), round(last * SAMPLE_RATE)
    lo, hi = max(0, v0 - margin), min(len(clip.samples), v1 + margin)
    samples = clip.samples[lo:hi]
    voice = (v0 - lo, v1 - lo)
    pause_at: int | None = None
    if pause:
        pause_at = quiet_point(samples)
        silence = np.zeros(round(PAUSE_S * SAMPLE_RATE), dtype=np.int16)
        samples = np.concatenate([samples[:pause_at], silence, samples[pause_at:]])
        voice = (voice[0], voice[1] + len(silence))
    return _Placed(clip, samples, voice, level_db, pause_at)


def _lay_out(name: str, kind: str, placed: Sequence[_Placed], gaps: Sequence[float]) -> Case:
    """Place the clips one after the other at ``gaps`` and level them."""
    starts = [round(LEAD_IN_S * SAMPLE_RATE)]  # voice start of each clip on the track, samples
    for before, gap in zip(placed[:-1], gaps, strict=True):
        voice_end = starts[-1] + (before.voice[1] - before.voice[0])
        starts.append(voice_end + round(gap * SAMPLE_RATE))
    offsets = [start - item.voice[0] for start, item in zip(starts, placed, strict=True)]
    shift = max(0, -min(offsets))  # a long lead of an overlapping clip: move all right
    offsets = [o + shift for o in offsets]
    length = max(o + len(p.samples) for o, p in zip(offsets, placed, strict=True))
    length += round(TAIL_S * SAMPLE_RATE)
    gains = [
        10.0 ** ((BASE_LEVEL_DBFS + p.level_db - active_level_db(p.samples)) / 20.0) for p in placed
    ]
    mix = np.zeros(length, dtype=np.float64)
    for offset, item, gain in zip(offsets, placed, gains, strict=True):
        mix[offset : offset + len(item.samples)] += item.samples.astype(np.float64) * gain
    limit = 32767.0 * 10.0 ** (PEAK_DBFS / 20.0)
    peak = float(np.abs(mix).max())
    if peak > limit:
        gains = [g * limit / peak for g in gains]
    intervals = tuple(
        Interval(
            clip=item.clip.name,
            speaker=item.clip.speaker,
            text=item.clip.text,
            start=(offset + item.voice[0]) / SAMPLE_RATE,
            end=(offset + item.voice[1]) / SAMPLE_RATE,
            level_db=item.level_db,
            what=item.clip.what,
        )
        for offset, item in zip(offsets, placed, strict=True)
    )
    pause_at_s = next(
        (
            (offset + item.pause_at) / SAMPLE_RATE
            for offset, item in zip(offsets, placed, strict=True)
            if item.pause_at is not None
        ),
        None,
    )
    pieces = tuple(
        Piece(item.samples, offset, gain)
        for offset, item, gain in zip(offsets, placed, gains, strict=True)
    )
    return Case(
        name=name,
        kind=kind,
        intervals=intervals,
        gaps_s=tuple(gaps),
        pause_at_s=pause_at_s,
        duration_s=length / SAMPLE_RATE,
        pieces=pieces,
    )


@cache
def default_clips() -> tuple[Clip, ...]:
    """The English packaged clips and the conversational set, decoded once per process.

    Raises:
        OSError: A set is not installed.
        testmeeting.errors.ScenarioError: ffmpeg is missing or cannot decode a clip.
    """
    return (*packaged_clips("en"), *conversational_clips())


def reading(clips: Sequence[Clip]) -> Clip:
    """The loud reading: LJ001-0001…0003 (one reader) cut to their voices, 0.35 s apart.

    Falls back to the longest clip when the LJ clips are not among ``clips``.
    """
    by_name = {clip.name: clip for clip in clips}
    if not all(name in by_name for name in _READING):
        return max(clips, key=lambda clip: clip.duration)
    parts: list[npt.NDArray[np.int16]] = []
    pause = np.zeros(round(READING_PAUSE_S * SAMPLE_RATE), dtype=np.int16)
    for i, name in enumerate(_READING):
        first, last = voiced_span(by_name[name].samples)
        voice = by_name[name].samples[round(first * SAMPLE_RATE) : round(last * SAMPLE_RATE)]
        parts.extend([pause, voice] if i else [voice])
    first_clip = by_name[_READING[0]]
    return Clip(
        name="+".join(_READING),
        samples=np.concatenate(parts),
        text=" ".join(by_name[name].text for name in _READING),
        speaker=first_clip.speaker,
        language=first_clip.language,
        what="a read monologue",
    )


def _other(rng: np.random.Generator, clips: Sequence[Clip], speakers: set[str]) -> Clip:
    choices = [clip for clip in clips if clip.speaker not in speakers]
    if not choices:
        raise ValueError(f"no clip of a speaker other than {sorted(speakers)}")
    return choices[int(rng.integers(len(choices)))]


def grid(
    seed: int,
    levels_db: Sequence[float] = LEVELS_DB,
    gaps_s: Sequence[float] = GAPS_S,
    clips: Sequence[Clip] | None = None,
) -> list[Case]:
    """Every stress case for ``seed``: pairs, triples, quiet-after-loud and paused monologues.

    The same seed and arguments give the same cases, sample for sample. With the defaults:
    72 pairs, 72 triples, 24 quiet-after-loud and one paused monologue per clip with
    ≥ :data:`MONOLOGUE_MIN_S` of voice (about 180 cases, 10–45 s each). Cases render their
    samples on access, so the grid itself is light.

    Args:
        seed: Seed of every draw (which clips, the triples' second level and gap).
        levels_db: Level changes (dB) to cross with ``gaps_s`` for pairs and triples.
        gaps_s: Voice-to-voice gaps, seconds (negative: overlap).
        clips: The clips to draw from; :func:`default_clips` when ``None``. Need at least
            three speakers.

    Raises:
        ValueError: Fewer than three speakers among ``clips``.
    """
    pool = tuple(default_clips() if clips is None else clips)
    if len({clip.speaker for clip in pool}) < 3:
        raise ValueError("the stress set needs clips of at least three speakers")
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    cells = list(itertools.product(levels_db, gaps_s))
    order = [pool[i] for i in rng.permutation(len(pool))]
    for k, (level, gap) in enumerate(cells):
        b = order[k % len(order)]
        a = _other(rng, pool, {b.speaker})
        placed = [_prepare(a, 0.0), _prepare(b, level)]
        cases.append(_lay_out(f"pair-{k:03d}", "pair", placed, [gap]))
    order = [pool[i] for i in rng.permutation(len(pool))]
    for k, (level, gap) in enumerate(cells):
        b = order[k % len(order)]
        a = _other(rng, pool, {b.speaker})
        c = _other(rng, pool, {a.speaker, b.speaker})
        level_c = float(levels_db[int(rng.integers(len(levels_db)))])
        gap_c = float(gaps_s[int(rng.integers(len(gaps_s)))])
        placed = [_prepare(a, 0.0), _prepare(b, level), _prepare(c, level_c)]
        cases.append(_lay_out(f"triple-{k:03d}", "triple", placed, [gap, gap_c]))
    loud = reading(pool)
    quiet = [
        clip
        for clip in pool
        if clip.speaker != loud.speaker and any(kind in clip.what for kind in _QUIET_KINDS)
    ]
    if quiet:
        order = [quiet[i] for i in rng.permutation(len(quiet))]
        for k, (level, gap) in enumerate(itertools.product(QUIET_LEVELS_DB, gaps_s)):
            placed = [_prepare(loud, 0.0), _prepare(order[k % len(order)], level)]
            cases.append(_lay_out(f"quiet_after_loud-{k:03d}", "quiet_after_loud", placed, [gap]))
    monologues = [clip for clip in pool if _voiced_seconds(clip) >= MONOLOGUE_MIN_S]
    for k, clip in enumerate(monologues):
        before = _other(rng, pool, {clip.speaker})
        gap = float(gaps_s[k % len(gaps_s)])
        placed = [_prepare(before, 0.0), _prepare(clip, 0.0, pause=True)]
        name = f"pause_in_monologue-{k:03d}"
        cases.append(_lay_out(name, "pause_in_monologue", placed, [gap]))
    return cases


def sequence(
    name: str, kind: str, clips: Sequence[tuple[Clip, float]], gaps: Sequence[float]
) -> Case:
    """One case of ``clips`` (each with its level change, dB) one after the other on a track.

    Laid out and levelled as the grid's cases are (voice-to-voice ``gaps``, seconds; one fewer
    than the clips), for tests that pick their own clips.
    """
    return _lay_out(name, kind, [_prepare(clip, level) for clip, level in clips], gaps)


def _voiced_seconds(clip: Clip) -> float:
    first, last = voiced_span(clip.samples)
    return last - first


def sample(n: int, seed: int = 0, clips: Sequence[Clip] | None = None) -> list[Case]:
    """A fixed small subset of :func:`grid`: ``n`` cases, the kinds taken in turn.

    Deterministic for ``(n, seed)``: within each kind the cases are drawn by ``seed``, and
    the kinds alternate (``pair``, ``triple``, ``quiet_after_loud``, ``pause_in_monologue``)
    so that four cases already hold one of each.

    Args:
        n: How many cases (at most the grid's size).
        seed: Seed of the grid and of the draw.
        clips: As for :func:`grid`.
    """
    cases = grid(seed, clips=clips)
    rng = np.random.default_rng([seed, n])
    by_kind: dict[str, list[Case]] = {}
    for case in cases:
        by_kind.setdefault(case.kind, []).append(case)
    queues = [[group[i] for i in rng.permutation(len(group))] for group in by_kind.values()]
    chosen: list[Case] = []
    while len(chosen) < n and any(queues):
        for queue in queues:
            if queue and len(chosen) < n:
                chosen.append(queue.pop(0))
    return chosen


# -- scoring ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Score:
    """How a transcriber's finals fare on one :class:`Case` (see :func:`score`).

    Attributes:
        recall: Per interval (in ``case.intervals`` order), the fraction of its normalised
            reference words found, in order, among the words assigned to it (1.0 for a
            reference with no words left after normalising).
        spanning: How many finals span two clips (hold ≥ :data:`SPAN_MIN_WORDS` words of each
            of two intervals).
        words: Per interval, the normalised words assigned to it, in final order.
        last_final: Per interval, the index (into ``finals`` as passed to :func:`score`) of
            the final that holds its last recovered word (the last of its reference words
            found in order); None when none was recovered. Its arrival is when the clip's
            speech is final.
    """

    recall: tuple[float, ...]
    spanning: int
    words: tuple[tuple[str, ...], ...]
    last_final: tuple[int | None, ...]


def _lcs_pairs(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of ``a`` and ``b`` (word lists)."""
    rows, cols = len(a), len(b)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if a[i] == b[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < rows and j < cols:
        if a[i] == b[j]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _nearest(intervals: Sequence[Interval], candidates: Sequence[int], at: float) -> int:
    def distance(index: int) -> float:
        interval = intervals[index]
        return max(interval.start - at, at - interval.end, 0.0)

    return min(candidates, key=lambda index: (distance(index), index))


def _assign(
    words: Sequence[str],
    start: float,
    end: float,
    intervals: Sequence[Interval],
    references: Sequence[Sequence[str]],
) -> list[int]:
    """The interval index of each word of one final (the rule is :func:`score`'s)."""
    everyone = range(len(intervals))
    near = [
        i
        for i in everyone
        if intervals[i].start - MATCH_TOLERANCE_S < end
        and start < intervals[i].end + MATCH_TOLERANCE_S
    ]
    candidates = near or [_nearest(intervals, everyone, (start + end) / 2)]
    joined: list[str] = []
    owner: list[int] = []
    for i in sorted(candidates, key=lambda index: intervals[index].start):
        joined.extend(references[i])
        owner.extend([i] * len(references[i]))
    labels: list[int | None] = [None] * len(words)
    for hyp, ref in _lcs_pairs(words, joined):
        labels[hyp] = owner[ref]
    if all(label is None for label in labels):
        step = (end - start) / max(len(words), 1)
        return [
            _nearest(intervals, candidates, start + (k + 0.5) * step) for k in range(len(words))
        ]
    matched = [k for k, label in enumerate(labels) if label is not None]
    result: list[int] = []
    for k, label in enumerate(labels):
        if label is None:
            before = [j for j in matched if j < k]
            label = labels[before[-1] if before else next(j for j in matched if j > k)]
        result.append(label if label is not None else 0)  # never None: some word matched
    return result


def score(
    case: Case,
    finals: Sequence[tuple[str, float, float]],
    *,
    normalize: Callable[[str], str],
) -> Score:
    """Score a transcriber's finals on ``case``: per-clip recall and finals spanning two clips.

    The rule that gives each word of a final to one clip (interval):

    1. The final's candidates are the intervals whose voice lies within
       :data:`MATCH_TOLERANCE_S` of the final's ``[start, end]``; if none, the interval
       nearest in time.
    2. The final's words are aligned (longest common subsequence) with the candidates'
       reference words joined in track order; a matched word belongs to the interval of the
       reference word it matched.
    3. An unmatched word belongs with the nearest matched word before it in the final, else
       the nearest after it. If no word matched, the words are spread evenly over
       ``[start, end]`` and each goes to the candidate nearest its time.

    A final *spans two clips* when at least two intervals got ≥ :data:`SPAN_MIN_WORDS` of its
    words (one stray word, such as a backchannel swallowed at a turn's edge, does not count).
    An interval's recall is the length of the longest common subsequence of its reference
    words and its assigned words (finals taken in start order), over its reference words; the
    final holding the last assigned word of that subsequence is its ``last_final``.

    Args:
        case: The case the finals were produced on.
        finals: ``(text, start, end)`` per final; seconds on the case's track.
        normalize: The WER text normaliser, ``agent.transcribe.normalize.normalize_text``
            (passed in: testmeeting does not import the agent). Applied to both sides.
    """
    references = [normalize(interval.text).split() for interval in case.intervals]
    assigned: list[list[str]] = [[] for _ in case.intervals]
    sources: list[list[int]] = [[] for _ in case.intervals]
    spanning = 0
    order = sorted(range(len(finals)), key=lambda k: (finals[k][1], finals[k][2]))
    for index in order:
        text, start, end = finals[index]
        words = normalize(text).split()
        if not words:
            continue
        labels = _assign(words, start, end, case.intervals, references)
        for word, label in zip(words, labels, strict=True):
            assigned[label].append(word)
            sources[label].append(index)
        counts = Counter(labels)
        if sum(1 for count in counts.values() if count >= SPAN_MIN_WORDS) >= 2:
            spanning += 1
    recall: list[float] = []
    last_final: list[int | None] = []
    for reference, words, source in zip(references, assigned, sources, strict=True):
        pairs = _lcs_pairs(reference, words)
        recall.append(len(pairs) / len(reference) if reference else 1.0)
        last_final.append(source[pairs[-1][1]] if pairs else None)
    return Score(
        tuple(recall), spanning, tuple(tuple(words) for words in assigned), tuple(last_final)
    )
