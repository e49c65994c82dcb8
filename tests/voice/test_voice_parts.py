"""The voice's parts with their real surroundings: Piper and the packaged voice, ffmpeg,
``audio_url`` fetching from a loopback server (limits, redirects, errors), and the
OpenAI-compatible client against a loopback ``/v1/audio/speech``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agent.meeting.watch import others_speaking
from agent.voice import audio_file
from agent.voice.audio_file import AudioUnavailable, audio_pieces, decode_audio
from agent.voice.openai_tts import OpenAISpeechSynthesizer
from agent.voice.piper_tts import PiperSynthesizer, first_clause, voice_files
from agent.voice.synthesis import SynthesisFailed, VoiceNotAvailable
from meetbot_common.ssrf import TargetPolicy

pytestmark = pytest.mark.model


def test_the_bots_own_speaking_indicator_is_nobodys_speech() -> None:
    lit = {"Alice", "Notetaker", "Notetaker (You)", "You", "Bob"}
    assert others_speaking(lit, "notetaker") == {"Alice", "Bob"}
    assert others_speaking({"Notetaker"}, "Notetaker") == set()


def test_the_first_clause_goes_first_when_there_is_one() -> None:
    assert first_clause("Good morning, everyone. Let us start.") == [
        "Good morning,",
        "everyone. Let us start.",
    ]
    assert first_clause("The plan: ship on Friday.") == ["The plan:", "ship on Friday."]
    # One word before the comma, or a comma only after the first sentence: no split.
    assert first_clause("Hi, there.") == ["Hi, there."]
    assert first_clause("Yes. Then, later.") == ["Yes. Then, later."]
    assert first_clause("Let us start with the budget.") == ["Let us start with the budget."]


async def test_piper_speaks_sentence_by_sentence_with_the_packaged_voice() -> None:
    model, config = voice_files()
    assert model.stat().st_size > 50_000_000 and config.is_file()
    synth = PiperSynthesizer(cpu_threads=1)
    synth.check_voice(None)
    synth.check_voice("joe")
    with pytest.raises(VoiceNotAvailable):
        synth.check_voice("alloy")
    pieces = [p async for p in synth.stream("Good morning, everyone. The report is ready.", None)]
    # The opening clause, then one piece per sentence of the rest.
    assert len(pieces) == 3
    assert {p.sample_rate for p in pieces} == {22_050}
    assert pieces[0].seconds < pieces[1].seconds + pieces[2].seconds
    for piece in pieces:
        samples = np.frombuffer(piece.data, dtype=np.int16)
        assert np.abs(samples.astype(np.int32)).max() > 10_000  # speech, not silence


@pytest.fixture
async def files(speech: Path) -> AsyncIterator[str]:
    """A loopback server: /clip.wav (real speech), /big, /moved (302), /missing (404)."""
    clip = (speech / "jfk.wav").read_bytes()

    async def serve_clip(request: web.Request) -> web.Response:
        return web.Response(body=clip, content_type="audio/wav")

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=b"\0" * (audio_file.MAX_AUDIO_BYTES + 1))

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound("/clip.wav")

    app = web.Application()
    app.router.add_get("/clip.wav", serve_clip)
    app.router.add_get("/big", big)
    app.router.add_get("/moved", moved)
    server = TestServer(app)
    await server.start_server()
    try:
        yield str(server.make_url(""))
    finally:
        await server.close()


LOOPBACK = TargetPolicy(allow_http=True, allow_private=True)
"""The agent's media rules as ``media_allow_http``/``media_allow_private`` make them."""


async def test_audio_url_is_fetched_decoded_and_limited(files: str) -> None:
    pieces = await audio_pieces(f"{files}/clip.wav", LOOPBACK)
    assert {p.sample_rate for p in pieces} == {24_000}
    assert 10.5 < sum(p.seconds for p in pieces) < 11.5  # jfk.wav lasts 11 s
    for path, reason in (
        ("/big", "larger than"),
        ("/moved", "302"),  # redirects are not followed
        ("/missing", "404"),
    ):
        with pytest.raises(AudioUnavailable, match=reason):
            await audio_pieces(files + path, LOOPBACK)
    with pytest.raises(AudioUnavailable, match="http"):
        await audio_pieces("file:///etc/passwd", LOOPBACK)
    with pytest.raises(AudioUnavailable, match="not allowed"):  # the default rules
        await audio_pieces(f"{files}/clip.wav", TargetPolicy())
    with pytest.raises(AudioUnavailable, match="decoded"):
        await decode_audio(b"this is not audio")


@pytest.fixture
async def speech_endpoint() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """An OpenAI-compatible /v1/audio/speech on loopback: 1.2 s of a 24 kHz tone, in pieces."""
    seen: list[dict[str, Any]] = []
    tone = (np.sin(np.arange(28_800) * 2 * np.pi * 440 / 24_000) * 12_000).astype(np.int16)

    async def speech(request: web.Request) -> web.StreamResponse:
        seen.append({"auth": request.headers.get("Authorization"), **(await request.json())})
        if seen[-1]["voice"] == "broken":
            return web.Response(status=500)
        response = web.StreamResponse()
        await response.prepare(request)
        data = tone.tobytes()
        for start in range(0, len(data), 9_999):  # odd sizes: pieces must stay sample-aligned
            await response.write(data[start : start + 9_999])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/audio/speech", speech)
    server = TestServer(app)
    await server.start_server()
    try:
        yield str(server.make_url("")), seen
    finally:
        await server.close()


async def test_an_openai_compatible_endpoint_streams_pcm_pieces(
    speech_endpoint: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = speech_endpoint
    synth = OpenAISpeechSynthesizer(url + "/", "sk-test", "tts-1", "alloy")
    pieces = [p async for p in synth.stream("Hello there.", None)]
    assert {p.sample_rate for p in pieces} == {24_000}
    assert all(len(p.data) % 2 == 0 for p in pieces)
    assert len(pieces) >= 2  # handed on while the body streams, not at its end
    assert sum(len(p.data) for p in pieces) == 28_800 * 2
    assert seen == [
        {
            "auth": "Bearer sk-test",
            "model": "tts-1",
            "input": "Hello there.",
            "voice": "alloy",
            "response_format": "pcm",
        }
    ]
    with pytest.raises(SynthesisFailed, match="500"):
        _ = [p async for p in synth.stream("Hello.", "broken")]
    unreachable = OpenAISpeechSynthesizer("http://127.0.0.1:9", "", "tts-1", "alloy")
    with pytest.raises(SynthesisFailed, match="unreachable"):
        _ = [p async for p in unreachable.stream("Hello.", None)]
