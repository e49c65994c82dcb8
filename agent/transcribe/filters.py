"""Guards against what Whisper writes when nobody speaks, and against repetition loops.

Whisper trained on subtitles invents text on silence and noise ("Thank you.", "Thanks for
watching!") and, decoding greedily without temperature fallback, can repeat a phrase until its
token budget runs out. Each decoded window brings the model's own confidence figures
(``no_speech_prob``, ``avg_logprob``, ``compression_ratio`` as faster-whisper computes them);
:func:`judge` turns them and the text into keep / drop.

Thresholds follow openai/whisper's defaults for the fallback rules (no-speech 0.6 together
with log-prob -1.0; compression ratio 2.4), applied as drop rules since the realtime tier has
no fallback.

Evidence, not word lists: "Okay.", "Bye." and "Thank you." are also what people say, alone, to
end a meeting. A text on the list of known hallucinations is dropped only when the evidence
says nobody spoke: the VAD heard (almost) no voice, or the model itself doubted it (no-speech
probability above ``_DOUBT_NO_SPEECH`` or mean log-probability below ``_DOUBT_LOGPROB``). The
same words decoded confidently from audio the VAD called voice are kept.

Evidence outweighs confidence: with at least ``TRUSTED_VOICE_S`` of voice evidence (the
independent test of ``agent.transcribe.segmenter``) the rules that rest on the model's doubt
alone (``no_speech``, ``low_confidence``, ``known_hallucination``) drop nothing and a loop is
cut down to one copy instead of dropped: a hoarse speaker's 25 s were otherwise lost whole
because tiny.en was unsure of them (issue 32). The decoder retries such a result with
temperature fallback first (``agent.transcribe.decoding``) and keeps the best.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.transcribe.normalize import hesitations, normalize_text

# Texts Whisper is known to produce on silence or noise (normalised form). Seen in
# openai/whisper and faster-whisper issue reports; kept short and English on purpose.
KNOWN_HALLUCINATIONS = frozenset(
    {
        "thank you",
        "thank you very much",
        "thanks for watching",
        "thank you for watching",
        "thanks for listening",
        "thank you for listening",
        "please subscribe",
        "subscribe to my channel",
        "like and subscribe",
        "you",
        "bye",
        "so",
        "okay",
        "oh",
        "the end",
        "subtitles by the amaraorg community",
        "transcription by castingwords",
        "music",
        "applause",
        "silence",
        "beep",
    }
)


# Evidence of no speech that drops a known hallucination (weaker than the general rule). A
# lone "Okay." or "Bye." really said (espeak-ng, tiny.en) decodes with no-speech 0.32–0.35 and
# log-prob -0.34…-0.40: a short voice in a 30 s window always looks a little like silence.
_DOUBT_NO_SPEECH = 0.5
_DOUBT_LOGPROB = -0.9
# Less voice than this (seconds) is no voice: whatever was decoded from it is invented.
_NO_VOICE_S = 0.1
# An utterance the level opened while the VAD scored it as silence is speech only when the
# model is sure of it. tiny.en on MFA's whispered and falsetto clips: no-speech 0.04-0.29,
# log-prob -0.16…-0.83.
_LEVEL_NO_SPEECH = 0.5
_LEVEL_LOGPROB = -1.0
TRUSTED_VOICE_S = 1.0
"""Seconds of voice evidence above which doubt alone drops nothing (module docstring)."""
# A letter five or more times in a row is a token loop inside a word, not spelling: tiny.en
# wrote a drawn-out "Montreal" (MFA's ``mfa_long``) as "M" and 69 "a"s, and as one word it
# passed the phrase rules. People's spellings stop at three ("sooo", "hmmm").
_LETTER_RUN = re.compile(r"([^\W\d_])\1{4,}")


@dataclass(frozen=True, slots=True)
class DecodeStats:
    """Confidence figures of one decoded window (faster-whisper ``Segment`` fields)."""

    no_speech_prob: float
    avg_logprob: float
    compression_ratio: float


@dataclass(frozen=True, slots=True)
class Verdict:
    """Outcome of :func:`judge`: the text to keep (maybe trimmed) or why it was dropped."""

    text: str
    dropped: str | None = None


def collapse_repetitions(text: str, max_repeats: int = 3) -> str:
    """Cut a phrase repeated back to back more than ``max_repeats`` times down to one copy.

    Works on word n-grams of 1–8 words, so both ``no no no no no`` and a looping sentence are
    caught; ordinary speech repeats a word two or three times at most.
    """
    words = text.split()
    for size in range(1, 9):
        i = 0
        out: list[str] = []
        while i < len(words):
            unit = words[i : i + size]
            repeats = 1
            while words[i + repeats * size : i + (repeats + 1) * size] == unit:
                repeats += 1
            if len(unit) == size and repeats > max_repeats:
                out += unit
                i += repeats * size
            else:
                out.append(words[i])
                i += 1
        words = out
    return " ".join(words)


def repeats_a_phrase(text: str, min_words: int = 4) -> bool:
    """True when a phrase of at least ``min_words`` words comes twice back to back.

    People repeat a word or two ("words, words, words"), hardly ever a whole phrase at once;
    a decoder that ran past the end of its audio does (tiny.en in a 10 s window on 5.6 s of
    speech: "This is me talking really slow and slightly lower intensity." twice).
    """
    words = normalize_text(text).split()
    for size in range(min_words, len(words) // 2 + 1):
        for i in range(len(words) - 2 * size + 1):
            if words[i : i + size] == words[i + size : i + 2 * size]:
                return True
    return False


def judge(
    text: str,
    stats: DecodeStats,
    voiced_s: float,
    evidence_s: float = 0.0,
    *,
    by_level: bool = False,
) -> Verdict:
    """Decide whether a decoded text is speech worth keeping.

    Args:
        text: The decoded text.
        stats: The decode's confidence figures.
        voiced_s: Seconds the VAD judged voiced in the decoded audio (for ``by_level``, the
            seconds its level held the utterance open).
        evidence_s: Seconds of independent voice evidence in it; from ``TRUSTED_VOICE_S``
            on, the model's doubt alone drops nothing (module docstring).
        by_level: The level opened the utterance, not the VAD (whispered or falsetto speech
            that Silero scores as silence, ``agent.transcribe.segmenter``): with less than
            ``TRUSTED_VOICE_S`` of evidence only a confident decode is kept, and a known
            hallucination never.

    Returns:
        A :class:`Verdict`, its text with any letter run of five or more cut to three;
        ``dropped`` names the rule (``empty``, ``hesitation`` (only hesitations read:
        ``Um...``; transcripts leave them out, as the WER normaliser does), ``no_voice``,
        ``no_speech``, ``low_confidence``, ``repetition``, ``known_hallucination``) when the
        text goes.
    """
    cleaned = _LETTER_RUN.sub(r"\1\1\1", re.sub(r"\s+", " ", text).strip())
    if not normalize_text(cleaned):
        return Verdict("", "hesitation" if hesitations(cleaned) else "empty")
    if voiced_s < _NO_VOICE_S and evidence_s < TRUSTED_VOICE_S:
        return Verdict("", "no_voice")
    if evidence_s >= TRUSTED_VOICE_S:
        return Verdict(collapse_repetitions(cleaned))
    if by_level:
        if stats.no_speech_prob > _LEVEL_NO_SPEECH:
            return Verdict("", "no_speech")
        if stats.avg_logprob < _LEVEL_LOGPROB:
            return Verdict("", "low_confidence")
        if normalize_text(cleaned) in KNOWN_HALLUCINATIONS:
            return Verdict("", "known_hallucination")
    if stats.no_speech_prob > 0.6 and stats.avg_logprob < -1.0:
        return Verdict("", "no_speech")
    if stats.avg_logprob < -1.5:
        return Verdict("", "low_confidence")
    if stats.compression_ratio > 2.4:
        collapsed = collapse_repetitions(cleaned)
        if len(collapsed) < 0.5 * len(cleaned):
            # Mostly loop: keep the one copy only if the rest of the decode was confident.
            if stats.avg_logprob < -0.5:
                return Verdict("", "repetition")
            cleaned = collapsed
    if normalize_text(cleaned) in KNOWN_HALLUCINATIONS and (
        stats.no_speech_prob > _DOUBT_NO_SPEECH or stats.avg_logprob < _DOUBT_LOGPROB
    ):
        return Verdict("", "known_hallucination")
    return Verdict(cleaned)
