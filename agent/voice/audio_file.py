"""``audio_url``: fetch an audio file and decode it to PCM for the microphone.

Limits (docs/api.md 2.5): at most :data:`MAX_AUDIO_BYTES` fetched, :data:`MAX_AUDIO_SECONDS`
played, 15 s to fetch, redirects not followed (the control plane checked the URL against the
webhook address rules before sending the command; a redirect could lead elsewhere). Any
format ffmpeg reads; decoded to 24 kHz mono 16-bit.
"""

from __future__ import annotations

import asyncio
import shutil

import aiohttp

from agent.voice.synthesis import Pcm

MAX_AUDIO_BYTES = 20 * 1024 * 1024
MAX_AUDIO_SECONDS = 600.0
FETCH_TIMEOUT_S = 15.0
SAMPLE_RATE = 24_000
PIECE_BYTES = SAMPLE_RATE * 2  # 1 s


class AudioUnavailable(RuntimeError):
    """The file could not be fetched or decoded, or breaks a limit; the message says which."""


async def fetch_audio(url: str) -> bytes:
    """The file's bytes (at most :data:`MAX_AUDIO_BYTES`).

    Raises:
        AudioUnavailable: Not http(s), unreachable, not 200, or too large.
    """
    if not url.startswith(("http://", "https://")):
        raise AudioUnavailable("audio_url must be http(s)")
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_S)) as session,
            session.get(url, allow_redirects=False) as response,
        ):
            if response.status != 200:
                raise AudioUnavailable(f"audio_url answered {response.status}")
            body = bytearray()
            # read(n) returns what has arrived so far, not n bytes: read to the end.
            async for block in response.content.iter_chunked(64 * 1024):
                body += block
                if len(body) > MAX_AUDIO_BYTES:
                    raise AudioUnavailable(f"audio file is larger than {MAX_AUDIO_BYTES} bytes")
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise AudioUnavailable("audio_url could not be fetched") from exc
    return bytes(body)


async def decode_audio(data: bytes) -> bytes:
    """24 kHz mono int16 PCM of an audio file, ffmpeg reading it from a pipe.

    Raises:
        AudioUnavailable: ffmpeg is missing, cannot decode it, or it lasts longer than
            :data:`MAX_AUDIO_SECONDS`.
    """
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise AudioUnavailable("ffmpeg is not installed")
    process = await asyncio.create_subprocess_exec(
        ffmpeg,
        "-nostdin",
        "-loglevel",
        "error",
        "-i",
        "pipe:0",
        "-t",
        str(MAX_AUDIO_SECONDS + 1),
        "-f",
        "s16le",
        "-ac",
        "1",
        "-ar",
        str(SAMPLE_RATE),
        "pipe:1",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        pcm, _ = await process.communicate(data)
    except asyncio.CancelledError:  # an interrupt while decoding: leave no ffmpeg behind
        process.kill()
        await process.wait()
        raise
    if process.returncode != 0 or not pcm:
        raise AudioUnavailable("audio file could not be decoded")
    if len(pcm) / 2 / SAMPLE_RATE > MAX_AUDIO_SECONDS:
        raise AudioUnavailable(f"audio lasts longer than {MAX_AUDIO_SECONDS:.0f} s")
    return pcm


async def audio_pieces(url: str) -> list[Pcm]:
    """The file at ``url`` as 1 s pieces of PCM.

    Raises:
        AudioUnavailable: See :func:`fetch_audio` and :func:`decode_audio`.
    """
    pcm = await decode_audio(await fetch_audio(url))
    return [
        Pcm(pcm[start : start + PIECE_BYTES], SAMPLE_RATE)
        for start in range(0, len(pcm), PIECE_BYTES)
    ]
