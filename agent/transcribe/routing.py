"""Which model decodes an utterance, and in which language (``language`` None).

A bot without a fixed language pairs an English-only model with a multilingual one. While no
speaker is locked to another language (:class:`~agent.transcribe.languages.LanguageMemory`),
a speaker not locked yet is tried on the fast English model first (a *tentative* route): a
sure decode locks them to English, an unsure one (:meth:`LanguageRouter.unsure_in_english`)
sends the utterance to the multilingual model, which detects their language. Once another
language is locked, new speakers go to detection at once. English speakers stay on the
English model, the others on the multilingual one.

Trying English first is what makes an English meeting's first finals fast: detection decodes
on ``base``, two to three times tiny.en's time (the first final of each of the first two
speakers on the skins took 2.3-3.2 s from the end of speech against 0.8-1.2 s for the rest,
issue 32). It costs a non-English speaker one tiny.en decode before detection.

An unsure utterance shorter than ``DETECT_MIN_AUDIO_S`` is detected only while the meeting is
not yet known to be English; once two speakers are locked to English it stays English (the
idle multilingual model is released then, :class:`~agent.transcribe.standby.MultilingualStandby`,
and a lone short word would load it for nothing).
"""

from __future__ import annotations

from typing import NamedTuple

from agent.contracts.bot_config import Task
from agent.transcribe.commit import SegmentCommitter
from agent.transcribe.engine import DecodeResult, WhisperEngine
from agent.transcribe.languages import LanguageMemory
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.standby import Loader, MultilingualStandby
from agent.transcribe.utterance import Utterance

# A new speaker in a meeting whose speakers all spoke English is tried on the English model
# first; a decode this unsure (or looping) is taken as another language and detected on the
# multilingual one. tiny.en on real speech: English -0.05…-0.58, Spanish/French/German/
# Chinese clips -0.57…-1.83 (the -0.57 one looping, compression ratio > 2.2).
_FOREIGN_LOGPROB = -0.5
_FOREIGN_COMPRESSION = 2.2
DETECT_MIN_AUDIO_S = 1.5
"""…unless the utterance is shorter than this (seconds of audio): a lone "No." or "Six." is
unsure in English because it is short, not foreign, and detecting a language from it loaded
the released multilingual model for nothing (the soak's guests: the tree's peaks, and a
short answer's final 5 s late). The speaker stays untried; their next longer one decides."""


class Route(NamedTuple):
    """How one utterance is decoded.

    Attributes:
        multilingual: The multilingual model decodes it (else the English, or only, one).
        language: Its language code; None: the model detects it.
        tentative: The language is only the meeting's so far: checked on the result.
    """

    multilingual: bool
    language: str | None
    tentative: bool


class LanguageRouter:
    """Chooses each decode's model and language, and holds the multilingual model.

    Args:
        engine: The English-only (or only) model.
        languages: Per-speaker language memory (used when ``language`` is None).
        committer: Whose speaker an utterance is (:meth:`SegmentCommitter.speaker_key`).
        metrics: Counts the multilingual model's releases and loads.
        idle_s: Meeting seconds without a multilingual decode after which it may be released
            (None: never).
        language: Fixed language code, or None to detect it per speaker.
        task: Transcribe, or translate to English.
        multilingual: The multilingual model, when it is loaded from the start.
    """

    def __init__(
        self,
        engine: WhisperEngine,
        languages: LanguageMemory,
        committer: SegmentCommitter,
        metrics: TranscribeMetrics,
        idle_s: float | None,
        *,
        language: str | None,
        task: Task,
        multilingual: WhisperEngine | None,
    ) -> None:
        self._engine = engine
        self._standby = MultilingualStandby(metrics, idle_s)
        if multilingual is not None:
            self._standby.attach(multilingual, None, 0.0)
        self._languages = languages
        self._commit = committer
        self._language = language
        self._task = task

    @property
    def detects_languages(self) -> bool:
        """Whether a multilingual model detects languages (loaded, or released until needed)."""
        return self._standby.available

    def attach_multilingual(self, engine: WhisperEngine, loader: Loader | None, now: float) -> None:
        """Use ``engine`` for detection and non-English speakers from ``now`` (epoch seconds).

        Ignored with a fixed language or when translating. ``loader`` given, the model is
        released while the meeting is English.
        """
        if self._language is None and self._task is Task.TRANSCRIBE:
            self._standby.attach(engine, loader, now)

    def route(self, utt: Utterance) -> Route:
        """Choose the model that decodes ``utt`` and its language."""
        if self._language is not None:
            return Route(False, self._language, False)
        known = self._languages.language_for(self._commit.speaker_key(utt))
        if known is not None or not self._standby.available:
            return Route(self.multilingual_for(known), known, False)
        if self._task is Task.TRANSCRIBE and self._languages.only("en"):
            # Nobody spoke another language so far: try the fast English model first.
            return Route(False, "en", True)
        return Route(True, None, False)

    def defers_detection(self, audio_s: float) -> bool:
        """Whether an unsure tentative decode of ``audio_s`` seconds stays English for now.

        Only in a meeting known to be English (two speakers locked to it), and only when the
        utterance is too short to tell a language by (``DETECT_MIN_AUDIO_S``).
        """
        return audio_s < DETECT_MIN_AUDIO_S and self._languages.prior() == "en"

    def detecting(self, utt: Utterance) -> bool:
        """Whether the language of ``utt``'s speaker is still being detected."""
        return self._standby.available and self.route(utt).language is None

    def multilingual_for(self, language: str | None) -> bool:
        """Whether ``language`` needs the multilingual model (all but English transcription)."""
        if not self._standby.available:
            return False
        return not (language == "en" and self._task is Task.TRANSCRIBE)

    async def engine_of(self, multilingual: bool, now: float) -> WhisperEngine:
        """The English (or only) engine, or the multilingual one, loaded again if released."""
        if multilingual:
            engine = await self._standby.get(now)
            if engine is not None:
                return engine
        return self._engine

    async def detector(self, now: float) -> WhisperEngine | None:
        """The multilingual engine to detect a language with (loaded again if released).

        None when its load failed (detection then ends for the meeting).
        """
        return await self._standby.get(now)

    async def release_if_idle(self, now: float) -> None:
        """Release the multilingual model while it is idle and the meeting English."""
        await self._standby.release_if_idle(now, self._languages.prior() == "en")

    @staticmethod
    def unsure_in_english(result: DecodeResult) -> bool:
        """Whether a tentative English decode reads as another language (or a loop)."""
        return (
            result.stats.avg_logprob < _FOREIGN_LOGPROB
            or result.stats.compression_ratio > _FOREIGN_COMPRESSION
        )

    def observe(
        self, speaker: str, language: str | None, engine: WhisperEngine, result: DecodeResult
    ) -> None:
        """Record the language a decode found for ``speaker`` when it detected one.

        Args:
            speaker: The utterance's speaker key (:meth:`SegmentCommitter.speaker_key`).
            language: The language the decode was given (None: it detected one).
            engine: The engine that decoded it.
            result: Its result.
        """
        if self._language is None and language is None and engine.multilingual:
            self._languages.observe(speaker, result.language, result.language_probability)

    def settle_english(self, speaker: str) -> None:
        """Record that ``speaker``, tried on the English model, was sure in it."""
        self._languages.observe(speaker, "en", 1.0)
