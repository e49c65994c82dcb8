"""The speech-synthesis seam: text in, mono int16 PCM out, one piece at a time.

A :class:`SpeechSynthesizer` yields :class:`Pcm` pieces as it produces them (a sentence at a
time for the offline voice, network chunks for an HTTP endpoint), so the bot starts speaking
before the whole text is synthesised. :func:`synthesizer_for` picks the implementation the
agent host's settings name: ``piper`` (default, offline, :mod:`agent.voice.piper_tts`) or
``openai`` (any OpenAI-compatible ``/v1/audio/speech``, :mod:`agent.voice.openai_tts`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Pcm:
    """A piece of speech: mono signed 16-bit little-endian samples at ``sample_rate`` Hz."""

    data: bytes
    sample_rate: int

    @property
    def seconds(self) -> float:
        """Duration in seconds."""
        return len(self.data) / 2 / self.sample_rate


class VoiceNotAvailable(ValueError):
    """The requested voice is not one this synthesizer has."""


class SynthesisFailed(RuntimeError):
    """The synthesizer could not produce speech (model missing, endpoint failed)."""


class SpeechSynthesizer(Protocol):
    """Turns text into speech, piece by piece."""

    def check_voice(self, voice: str | None) -> None:
        """Refuse a voice this synthesizer cannot speak with.

        Raises:
            VoiceNotAvailable: Names the voices there are, where known.
        """
        ...

    async def warm_up(self) -> None:
        """Load what the first sentence needs (a model), so speaking starts quickly."""
        ...

    def release(self) -> bool:
        """Drop what :meth:`warm_up` loaded (the next speech loads it again).

        Returns:
            Whether anything was dropped.
        """
        ...

    def stream(self, text: str, voice: str | None) -> AsyncIterator[Pcm]:
        """Speech for ``text`` in pieces, in order, each as soon as it is ready.

        Raises:
            SynthesisFailed: While iterating, when synthesis fails.
        """
        ...
