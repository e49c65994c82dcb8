"""LocalAgreement-2: the words of a growing utterance that two hypotheses in a row agree on.

Without a pause or a speaker change to end it (one mixed track, fast turn-taking, a monologue
without breath pauses) an utterance grew to the hard cap before anything was final: on a real
phone call, finals came 4-10.5 s after each turn (issue 32). whisper_streaming (Macháček et al.,
"Turning Whisper into Real-Time Transcription System", 2023) commits the longest prefix on which
the hypotheses of two consecutive hops agree; this module is that rule for one open utterance:

- every ``agreement_hop_s`` of new audio the scheduler decodes the open utterance with word
  timestamps (the partial decode of a long utterance, ``agent.transcribe.decoding``);
- :func:`agreed_prefix` compares that hypothesis with the previous one of the same utterance
  (normalised words) and returns the words both start with, minus any word that ends within
  ``_TAIL_GUARD_S`` of the audio's end (it may still be cut off);
- the scheduler cuts the utterance between the last agreed word and the next one
  (``agent.transcribe.ingest.Ingest.commit_at``) and emits the agreed words as the final of the
  part before the cut, with no decode of its own; the rest goes on as a new utterance, so
  each hypothesis decodes only the audio not committed yet.
- Word times are approximate: cut exactly at them, the first word after the cut lost its
  start to the part before and vanished from both ("against the | who would vanish"). So the
  rest starts 0.4 s before the cut, and :func:`drop_repeated` takes off the words it repeats
  of the committed part's end.

A word spoken at time t is in the hypothesis of the next hop and agreed on at the one after:
final within about two hops plus a decode, whatever the speakers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.transcribe.engine import WordTiming
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


@dataclass(frozen=True, slots=True)
class Agreement:
    """Words to commit and where to cut, in seconds from the start of the decoded audio.

    Attributes:
        words: The agreed words, as the last hypothesis wrote them.
        cut_from: End of the last agreed word (the cut falls at or after it)…
        cut_to: …and start of the next word (at or before it).
    """

    words: tuple[WordTiming, ...]
    cut_from: float
    cut_to: float

    @property
    def text(self) -> str:
        """The agreed words joined as Whisper wrote them."""
        return "".join(word.word for word in self.words).strip()


# Committed words remembered to take off the start of the rest (more than 0.4 s holds).
TAIL_WORDS = 4


def _key(word: WordTiming) -> str:
    return normalize_text(word.word)


def tail_of(agreement: Agreement) -> tuple[str, ...]:
    """The normalised last words of a commit, for :func:`drop_repeated`."""
    keys = [k for k in (_key(word) for word in agreement.words) if k]
    return tuple(keys[-TAIL_WORDS:])


def _repeated(keys: Sequence[str], tail: Sequence[str]) -> int:
    """How many of ``keys``' first entries repeat the end of ``tail`` (longest match)."""
    for n in range(min(len(tail), len(keys)), 0, -1):
        if list(keys[:n]) == list(tail[-n:]):
            return n
    return 0


def drop_repeated(text: str, tail: Sequence[str]) -> str:
    """``text`` without the leading words that repeat ``tail`` (the committed part's end)."""
    if not tail:
        return text
    raw = text.split()
    keys = [normalize_text(word) for word in raw]
    return " ".join(raw[_repeated(keys, tail) :])


def drop_repeated_words(words: Sequence[WordTiming], tail: Sequence[str]) -> tuple[WordTiming, ...]:
    """:func:`drop_repeated` on timed words."""
    return tuple(words[_repeated([_key(word) for word in words], tail) :])


def agreed_prefix(
    previous: Sequence[WordTiming], current: Sequence[WordTiming], audio_s: float
) -> Agreement | None:
    """The prefix of ``current`` that ``previous`` agrees with, ready to commit, or None.

    Args:
        previous: Words of the previous hypothesis of the same utterance (same start).
        current: Words of the newest hypothesis.
        audio_s: Seconds of audio the newest hypothesis decoded.

    Returns:
        None when fewer than one word agrees, when the agreed words cover less than
        ``_MIN_COMMIT_S`` of audio, or when no word follows them (the cut needs the next
        word's start, so the last word said is never committed early).
    """
    agreed = 0
    for before, now in zip(previous, current, strict=False):
        if _key(before) != _key(now) or now.end > audio_s - _TAIL_GUARD_S:
            break
        agreed += 1
    # Words normalised to nothing ("...", a hesitation) may only sit inside the agreed part.
    while agreed and not _key(current[agreed - 1]):
        agreed -= 1
    if agreed == 0 or agreed >= len(current):
        return None
    if current[agreed - 1].end < _FORCE_COMMIT_S:
        # Not urgent yet: commit up to the last phrase boundary among the agreed words.
        while agreed and not _phrase_ends(current[agreed - 1], current[agreed]):
            agreed -= 1
        if agreed == 0:
            return None
    last, following = current[agreed - 1], current[agreed]
    if last.end < _MIN_COMMIT_S:
        return None
    return Agreement(tuple(current[:agreed]), last.end, max(last.end, following.start))


def _phrase_ends(word: WordTiming, following: WordTiming) -> bool:
    """Whether a phrase ends after ``word``: punctuation, or a pause before the next word."""
    return word.word.rstrip().endswith(_PHRASE_END) or following.start - word.end >= _PHRASE_GAP_S
