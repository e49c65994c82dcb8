"""LocalAgreement-2: the words of a growing utterance that two hypotheses in a row agree on.

Without a pause or a speaker change to end it (one mixed track, fast turn-taking, a monologue
without breath pauses) an utterance grew to the hard cap before anything was final: on a real
phone call, finals came 4-10.5 s after each turn (issue 32). whisper_streaming (Macháček et al.,
"Turning Whisper into Real-Time Transcription System", 2023) commits the longest prefix on which
the hypotheses of two consecutive hops agree; this module is that rule for one open utterance:

- every ``agreement_hop_s`` of new audio the scheduler decodes the open utterance with word
  timestamps (the partial decode of a long utterance, ``agent.transcribe.decoding``);
- :func:`agreed_prefix` compares that hypothesis with the previous one of the same utterance
  (normalised words, aligned in order and in time) and returns the words both start with,
  minus any word that ends within ``_TAIL_GUARD_S`` of the audio's end (it may still be cut
  off). Words that start in the utterance's first ``_HEAD_S`` may differ: see below;
- the scheduler cuts the utterance between the last agreed word and the next one
  (``agent.transcribe.ingest.Ingest.commit_at``) and emits the agreed words as the final of the
  part before the cut, with no decode of its own; the rest goes on as a new utterance, so
  each hypothesis decodes only the audio not committed yet.
- Word times are approximate: cut exactly at them, the first word after the cut lost its
  start to the part before and vanished from both ("against the | who would vanish"). So the
  rest starts 0.4 s before the cut, and :func:`drop_repeated` takes off the words it repeats
  of the committed part's end.

- The head of an utterance is unstable: it starts inside the committed part's last word, and
  the decoder reads that fragment differently at every hop ("engraved in relief" / "in grave
  in relief" / "in relief"; a whisper's last "here." before a reader, there or not). Compared
  word for word from the start, such hypotheses never agreed: on the stress sample a 22-s
  reading got one 9.3-s final 4.4 s after its end, a reader after a whisper one 6.9-s final
  (issue 32). So words that start in the first ``_HEAD_S`` and match nothing in the previous
  hypothesis are let through as long as no matched word came before them; the agreement
  needs at least one matched word after them, and commits the newest hypothesis's reading.

A word spoken at time t is in the hypothesis of the next hop and agreed on at the one after:
final within about two hops plus a decode, whatever the speakers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from agent.transcribe.engine import WordTiming
from agent.transcribe.filters import DecodeStats
from agent.transcribe.normalize import normalize_text

# A word ending this close to the end of the decoded audio may be cut off: never committed.
_TAIL_GUARD_S = 0.3
# Least audio (seconds) the committed part holds: shorter pieces only fragment the transcript.
_MIN_COMMIT_S = 1.0
# The commit ends at a phrase boundary the hypothesis shows (punctuation after a word, or this
# much silence before the next): cut at every agreed word, the conversational set came out in
# 1-2 s pieces decoded without their context ("slow and slightly | at least lower | or an
# intensity", 0.274 WER). Without such a boundary all agreed words go once they reach
# ``_FORCE_COMMIT_S`` of audio, so the bound holds in speech without a breath.
_PHRASE_GAP_S = 0.15
_FORCE_COMMIT_S = 2.5
_PHRASE_END = (".", ",", "?", "!", ";", ":")
# All words agreed, the last ending this long before the audio does (in both hypotheses):
# nothing more is said in this voice, so the last word is committed too. Before, it waited
# for the next word's start: a reader's last words for a quiet voice talking over the end
# that the decoder took 3 s to read (issue 32).
_QUIET_AFTER_S = 1.0
_QUIET_CUT_S = 0.15
# Words starting this early in the decoded audio may differ between hypotheses (module doc).
_HEAD_S = 1.0
# Two hypotheses' readings of a word are the same word when they end this close (seconds);
# word times move by 0.1-0.3 s between hops.
_SAME_WORD_S = 0.5


@dataclass(frozen=True, slots=True)
class Agreement:
    """Words to commit and where to cut, in seconds from the start of the decoded audio.

    Attributes:
        words: The agreed words, as the last hypothesis wrote them.
        cut_from: End of the last agreed word (the cut falls at or after it)…
        cut_to: …and start of the next word (at or before it).
        at_pause: A sentence that ended at a short pause (:func:`sentence_at_pause`), not
            words two hypotheses agreed on.
    """

    words: tuple[WordTiming, ...]
    cut_from: float
    cut_to: float
    at_pause: bool = False

    @property
    def text(self) -> str:
        """The agreed words joined as Whisper wrote them."""
        return "".join(word.word for word in self.words).strip()


# Committed words remembered to take off the start of the rest (more than 0.4 s holds).
TAIL_WORDS = 4
COMMIT_OVERLAP_S = 0.4
"""Seconds of audio before an agreement cut that the rest starts with (module docstring)."""
# A word of the rest ending this soon after the overlap was heard in the committed part: the
# decoder's re-reading of its last word ("kind" committed, then "kinds@0.4 of recording",
# a duplicate in the transcript once differing heads no longer stopped agreement).
_REREAD_S = COMMIT_OVERLAP_S + 0.05
# A re-read word may be its committed reading with up to this many letters more or less at
# its end ("kind" / "kinds", "work" / "worked"), when the shorter has four letters or more
# ("them" / "then" are two words).
_REREAD_SUFFIX = 2
_REREAD_MIN_LETTERS = 4


def _key(word: WordTiming) -> str:
    return normalize_text(word.word)


def tail_of(agreement: Agreement) -> tuple[str, ...]:
    """The normalised last words of a commit, for :func:`drop_repeated`."""
    keys = [k for k in (_key(word) for word in agreement.words) if k]
    return tuple(keys[-TAIL_WORDS:])


def _same(word: str, committed: str) -> bool:
    """Whether ``word`` reads the committed word ``committed`` again (normalised forms)."""
    if word == committed:
        return True
    short, long = sorted((word, committed), key=len)
    return (
        len(short) >= _REREAD_MIN_LETTERS
        and long.startswith(short)
        and len(long) - len(short) <= _REREAD_SUFFIX
    )


def _repeated(keys: Sequence[str], tail: Sequence[str]) -> int:
    """How many of ``keys``' first entries repeat the end of ``tail`` (longest match)."""
    for n in range(min(len(tail), len(keys)), 0, -1):
        if all(_same(a, b) for a, b in zip(keys[:n], tail[-n:], strict=True)):
            return n
    return 0


def drop_repeated(text: str, tail: Sequence[str]) -> str:
    """``text`` without the leading words that repeat ``tail``, the committed part's end.

    A word repeats one as written or with a letter or two more or less at its end.
    """
    if not tail:
        return text
    raw = text.split()
    keys = [normalize_text(word) for word in raw]
    return " ".join(raw[_repeated(keys, tail) :])


def drop_repeated_words(words: Sequence[WordTiming], tail: Sequence[str]) -> tuple[WordTiming, ...]:
    """:func:`drop_repeated` on the timed words of the rest of a commit (``tail`` not empty).

    First go its words that end within the overlap: the committed part's, read again.
    """
    if not tail:
        return tuple(words)
    start = 0
    while start < len(words) and words[start].end <= _REREAD_S:
        start += 1
    rest = words[start:]
    return tuple(rest[_repeated([_key(word) for word in rest], tail) :])


def agreed_prefix(
    previous: Sequence[WordTiming], current: Sequence[WordTiming], audio_s: float
) -> Agreement | None:
    """The prefix of ``current`` that ``previous`` agrees with, ready to commit, or None.

    Args:
        previous: Words of the previous hypothesis of the same utterance (same start).
        current: Words of the newest hypothesis.
        audio_s: Seconds of audio the newest hypothesis decoded.

    Returns:
        None when no word after the head agrees, when the agreed words cover less than
        ``_MIN_COMMIT_S`` of audio, or when no word follows them and the audio goes on less
        than ``_QUIET_AFTER_S`` after them (the cut needs the next word's start or that much
        quiet, so the last word said is never committed early).
    """
    pairs = _matched(previous, current)
    agreed = 0
    first: int | None = None  # the first word of current both agree on
    last_before: int | None = None  # the previous hypothesis's reading of the last one
    for index, now in enumerate(current):
        if now.end > audio_s - _TAIL_GUARD_S:
            break
        before = pairs.get(index)
        if before is not None and _follows(previous, last_before, before):
            first = index if first is None else first
            last_before = before
        elif _key(now) and (first is not None or now.start >= _HEAD_S):
            break  # the hypotheses differ here
        agreed = index + 1
    # Words normalised to nothing ("...", a hesitation) may only sit inside the agreed part.
    while agreed and not _key(current[agreed - 1]):
        agreed -= 1
    if first is None or last_before is None or agreed <= first:
        return None
    if agreed == len(current):
        return _quiet_after(previous, last_before, current, audio_s)
    if current[agreed - 1].end < _FORCE_COMMIT_S:
        # Not urgent yet: commit up to the last phrase boundary among the agreed words.
        while agreed > first and not _phrase_ends(current[agreed - 1], current[agreed]):
            agreed -= 1
        if agreed <= first:
            return None
    last, following = current[agreed - 1], current[agreed]
    if last.end < _MIN_COMMIT_S:
        return None
    return Agreement(tuple(current[:agreed]), last.end, max(last.end, following.start))


def _quiet_after(
    previous: Sequence[WordTiming],
    last_before: int,
    current: Sequence[WordTiming],
    audio_s: float,
) -> Agreement | None:
    """All of ``current`` agreed on: commit it all once quiet follows, or None.

    Quiet: no word follows in either hypothesis and ``_QUIET_AFTER_S`` of audio has passed
    since its last word. The cut falls within ``_QUIET_CUT_S`` after it.
    """
    last = current[-1]
    later = previous[last_before + 1 :]
    if any(_key(word) for word in later) or last.end < _MIN_COMMIT_S:
        return None
    if audio_s - last.end < _QUIET_AFTER_S:
        return None
    # Right after it: the quiet that follows may be a voice the decoder has not read yet (a
    # whisper after a reader), which a cut further on split, losing its first words.
    return Agreement(tuple(current), last.end, last.end + _QUIET_CUT_S)


def _matched(previous: Sequence[WordTiming], current: Sequence[WordTiming]) -> dict[int, int]:
    """``current``'s words that ``previous`` has too, in order and about as late: index → index.

    The alignment is difflib's longest matching blocks over the normalised words; a pair of
    them counts only when the two readings end within ``_SAME_WORD_S`` of each other (a "the"
    three words on is another "the"). Words normalised to nothing never match.
    """
    before = [_key(word) for word in previous]
    now = [_key(word) for word in current]
    out: dict[int, int] = {}
    for block in SequenceMatcher(None, before, now, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            a, b = block.a + k, block.b + k
            if now[b] and abs(previous[a].end - current[b].end) <= _SAME_WORD_S:
                out[b] = a
    return out


def _follows(previous: Sequence[WordTiming], last: int | None, index: int) -> bool:
    """Whether ``previous[index]`` comes right after ``previous[last]``.

    Words normalised to nothing between them aside: once both agree, a word one of them skips
    is a difference. Any word may be the first agreed one (the head before it may differ).
    """
    if last is None:
        return True
    return index > last and not any(_key(word) for word in previous[last + 1 : index])


def _phrase_ends(word: WordTiming, following: WordTiming) -> bool:
    """Whether a phrase ends after ``word``: punctuation, or a pause before the next word."""
    return word.word.rstrip().endswith(_PHRASE_END) or following.start - word.end >= _PHRASE_GAP_S


# Whisper ends a sentence with one of these; "..." is a voice trailing off, not an end.
_SENTENCE_END = (".", "?", "!")
_CLOSING = "\"')]»”’"
# A speculative decode this unsure of its text does not end a sentence (log-prob per token;
# no-speech probability).
_SENTENCE_LOGPROB = -0.8
_SENTENCE_NO_SPEECH = 0.5


def sentence_at_pause(
    text: str, stats: DecodeStats, pause_at_s: float, audio_s: float
) -> Agreement | None:
    """The speculative decode of a pause that speech resumed after, if it ended a sentence.

    The segmenter decodes an utterance speculatively after ``speculate_s`` (0.16 s) of
    silence and ends it after ``endpoint_s`` (0.45 s). On one mixed track people leave
    shorter gaps than that between turns (0.2-0.4 s on the stress grid, none in a real phone
    call): the pause passed, the next voice joined the utterance, and its words waited for two
    agreeing hypotheses, 1.4-1.6 s after the end at the median (issue 32). When the decode of
    the pause reads a whole sentence (terminal punctuation, confident), the utterance is cut
    in that pause instead, and that decode is its final.

    Args:
        text: The speculative decode's text.
        stats: Its confidence figures (mean log-probability per token, no-speech probability).
        pause_at_s: Seconds from the utterance's start where the pause began.
        audio_s: Seconds of audio the decode covered (to the speculation point).

    Returns:
        An :class:`Agreement` with ``at_pause`` set (its words carry no times) whose cut falls
        between ``pause_at_s`` and ``audio_s``, or None when the text does not end a sentence,
        the decode is unsure of it, or it covers less than ``_MIN_COMMIT_S``.
    """
    stripped = text.strip().rstrip(_CLOSING)
    if not stripped.endswith(_SENTENCE_END) or stripped.endswith(".."):
        return None
    if stats.avg_logprob < _SENTENCE_LOGPROB or stats.no_speech_prob > _SENTENCE_NO_SPEECH:
        return None
    if pause_at_s < _MIN_COMMIT_S or not normalize_text(stripped):
        return None
    words = tuple(WordTiming(f" {word}", 0.0, 0.0) for word in text.split())
    return Agreement(words, pause_at_s, audio_s, at_pause=True)
