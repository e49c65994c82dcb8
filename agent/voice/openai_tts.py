"""Any OpenAI-compatible speech endpoint (``POST {url}/v1/audio/speech``) as the bot's voice.

For operators who want another voice than the packaged one (setting
``MEETBOT_AGENT_TTS_PROVIDER=openai`` with ``…_TTS_URL``, ``…_TTS_API_KEY``, ``…_TTS_MODEL``,
``…_TTS_VOICE``). The request asks for ``response_format: "pcm"``, which OpenAI's API reference
defines as raw 24 kHz signed 16-bit little-endian mono samples (Vexa's bot plays the same format
with ``paplay --raw --rate=24000``, research notes peers-2026-11.md). The body is read as it
streams and handed on in pieces of about half a second, so speech starts before the endpoint
finished.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp

from agent.voice.synthesis import Pcm, SynthesisFailed

SAMPLE_RATE = 24_000
PIECE_BYTES = SAMPLE_RATE  # 0.5 s of 16-bit samples
TIMEOUT_S = 60.0


class OpenAISpeechSynthesizer:
    """:class:`~agent.voice.synthesis.SpeechSynthesizer` over an OpenAI-compatible endpoint.

    Args:
        url: Base URL (``https://api.openai.com`` or a local server); ``/v1/audio/speech`` is
            appended.
        api_key: Sent as ``Authorization: Bearer``; empty sends none.
        model: The endpoint's model name.
        voice: The voice used when a speak command names none.
    """

    def __init__(self, url: str, api_key: str, model: str, voice: str) -> None:
        self._endpoint = url.rstrip("/") + "/v1/audio/speech"
        self._api_key = api_key
        self._model = model
        self._voice = voice

    def check_voice(self, voice: str | None) -> None:
        """Every name is passed to the endpoint, which judges it."""

    async def warm_up(self) -> None:
        """Nothing to load."""

    def release(self) -> bool:
        """Nothing is held: returns False."""
        return False

    async def stream(self, text: str, voice: str | None) -> AsyncIterator[Pcm]:
        """24 kHz pieces of about 0.5 s as the endpoint sends them.

        Raises:
            SynthesisFailed: The endpoint is unreachable or answers other than 200.
        """
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        body = {
            "model": self._model,
            "input": text,
            "voice": voice or self._voice,
            "response_format": "pcm",
        }
        pending = b""
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as session,
                session.post(self._endpoint, json=body, headers=headers) as response,
            ):
                if response.status != 200:
                    raise SynthesisFailed(f"speech endpoint answered {response.status}")
                async for block in response.content.iter_chunked(8192):
                    pending += block
                    if len(pending) >= PIECE_BYTES:
                        cut = len(pending) - len(pending) % 2
                        yield Pcm(pending[:cut], SAMPLE_RATE)
                        pending = pending[cut:]
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise SynthesisFailed("speech endpoint unreachable") from exc
        if len(pending) >= 2:
            yield Pcm(pending[: len(pending) - len(pending) % 2], SAMPLE_RATE)
