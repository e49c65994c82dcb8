"""One text normaliser for word error rate, shared by tests and benchmarks.

References and hypotheses write the same words differently: ``Fourteen fifty-five`` vs
``1455``, ``STUFF IT`` vs ``Stuff it,``, ``um`` kept or dropped. :func:`normalize_text`
maps both sides to lower-case words without punctuation, numbers spelled out (years read in
pairs), hyphens split and hesitations removed, so WER measures recognition, not style.
"""

from __future__ import annotations

import re
import unicodedata

import jiwer

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((1_000_000_000, "billion"), (1_000_000, "million"), (1_000, "thousand"))
_ORDINAL_SUFFIXES = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}
_HESITATIONS = frozenset({"um", "uh", "umm", "uhm", "hmm", "mm", "mhm", "er", "erm", "ah", "eh"})
_NUMBER = re.compile(r"(\d[\d,]*)(?:\.(\d+))?(st|nd|rd|th)?")


def _below_thousand(n: int) -> list[str]:
    words: list[str] = []
    if n >= 100:
        words += [_ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(_TENS[n // 10])
        n %= 10
        if n:
            words.append(_ONES[n])
    elif n or not words:
        words.append(_ONES[n])
    return words


def number_to_words(n: int) -> list[str]:
    """Spell a non-negative integer in English words (``1455`` → cardinal words)."""
    if n < 1000:
        return _below_thousand(n)
    words: list[str] = []
    for value, name in _SCALES:
        if n >= value:
            words += [*number_to_words(n // value), name]
            n %= value
    if n:
        words += _below_thousand(n)
    return words


def _year_words(n: int) -> list[str]:
    high, low = divmod(n, 100)
    if low == 0:
        return [*_below_thousand(high), "hundred"]
    tail = ["oh", _ONES[low]] if low < 10 else _below_thousand(low)
    return [*_below_thousand(high), *tail]


def _ordinal(words: list[str]) -> list[str]:
    last = words[-1]
    if last in _ORDINAL_SUFFIXES:
        last = _ORDINAL_SUFFIXES[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return [*words[:-1], last]


def _spell_number(match: re.Match[str]) -> str:
    raw = match.group(1)
    digits = raw.replace(",", "")
    if not digits:
        return match.group(0)
    n = int(digits)
    # Bare four-digit numbers in speech are mostly years, read in pairs ("fourteen
    # fifty-five"); 2000–2099 are mostly read as "two thousand …" up to 2009 and in pairs after.
    year = raw == digits and len(digits) == 4 and 1100 <= n <= 2099 and not 2000 <= n <= 2009
    words = _year_words(n) if year else number_to_words(n)
    if match.group(3):
        words = _ordinal(words)
    if match.group(2):
        words += ["point", *(_ONES[int(d)] for d in match.group(2))]
    return " " + " ".join(words) + " "


def _words(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("%", " percent ").replace("&", " and ")
    text = _NUMBER.sub(_spell_number, text)
    text = re.sub(r"['’‘`]", "", text)
    text = re.sub(r"[^\w\s]|_", " ", text)
    return text.split()


def normalize_text(text: str) -> str:
    """Return ``text`` as lower-case words separated by single spaces, for WER.

    Unicode is NFKC-folded, numbers spelled out, ``%``/``&`` read out, hyphens and
    punctuation become spaces, apostrophes vanish (``don't`` → ``dont``), hesitations
    (``um``, ``uh``…) are dropped. Letters of any script are kept.
    """
    return " ".join(word for word in _words(text) if word not in _HESITATIONS)


def hesitations(text: str) -> int:
    """Count ``text``'s hesitations (``um``, ``uh``, ``hmm``…): the words normalising drops."""
    return sum(1 for word in _words(text) if word in _HESITATIONS)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER of ``hypothesis`` against ``reference`` after :func:`normalize_text` on both.

    Returns 0.0 when both are empty and 1.0 when only the reference is empty but the
    hypothesis is not (every word inserted; jiwer refuses an empty reference).
    """
    ref, hyp = normalize_text(reference), normalize_text(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return float(jiwer.wer(ref, hyp))


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """Return ``(errors, reference_words)`` after normalising, for pooling WER over clips."""
    ref, hyp = normalize_text(reference), normalize_text(hypothesis)
    if not ref:
        return (len(hyp.split()), 0)
    out = jiwer.process_words(ref, hyp)
    return (out.substitutions + out.deletions + out.insertions, len(ref.split()))
