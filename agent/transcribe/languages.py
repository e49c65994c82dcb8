"""Per-speaker language memory for transcription without a fixed language."""

from __future__ import annotations

from collections import Counter


class LanguageMemory:
    """Keeps each speaker's language stable once detection is confident.

    A speaker's language is locked after one utterance detected with probability ≥
    ``lock_probability``, or after three utterances by majority; until then each utterance is
    detected anew.

    Args:
        lock_probability: Detection probability (0–1) that locks a language at once.
    """

    def __init__(self, lock_probability: float) -> None:
        self._lock_probability = lock_probability
        self._locked: dict[str, str] = {}
        self._votes: dict[str, Counter[str]] = {}

    def prior(self, at_least: int = 2) -> str | None:
        """Return the meeting's language so far; None while unknown or mixed.

        That is the one every locked speaker has, once at least ``at_least`` speakers are
        locked.
        """
        languages = set(self._locked.values())
        if len(self._locked) >= at_least and len(languages) == 1:
            return next(iter(languages))
        return None

    def only(self, language: str) -> bool:
        """Whether every locked speaker speaks ``language`` (True while none is locked)."""
        return all(locked == language for locked in self._locked.values())

    def language_for(self, speaker: str) -> str | None:
        """The locked language of ``speaker``, or None while still detecting."""
        return self._locked.get(speaker)

    def observe(self, speaker: str, language: str, probability: float) -> None:
        """Record one detection for ``speaker``."""
        if speaker in self._locked:
            return
        votes = self._votes.setdefault(speaker, Counter())
        votes[language] += 1
        if probability >= self._lock_probability or sum(votes.values()) >= 3:
            self._locked[speaker] = (
                language if probability >= self._lock_probability else votes.most_common(1)[0][0]
            )
