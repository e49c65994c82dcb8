"""The speech synthesizer the agent host's settings name (``MEETBOT_AGENT_TTS_PROVIDER``)."""

from __future__ import annotations

from agent.process.settings import AgentSettings
from agent.voice.openai_tts import OpenAISpeechSynthesizer
from agent.voice.piper_tts import PiperSynthesizer
from agent.voice.synthesis import SpeechSynthesizer


def synthesizer_for(settings: AgentSettings) -> SpeechSynthesizer:
    """Piper with the packaged voice, or the OpenAI-compatible endpoint at ``tts_url``.

    Raises:
        ValueError: ``openai`` without a ``tts_url``.
    """
    if settings.tts_provider == "openai":
        if not settings.tts_url:
            raise ValueError("MEETBOT_AGENT_TTS_URL is needed with the openai provider")
        return OpenAISpeechSynthesizer(
            settings.tts_url, settings.tts_api_key, settings.tts_model, settings.tts_voice
        )
    return PiperSynthesizer(settings.tts_cpu_threads)
