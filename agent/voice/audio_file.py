"""``audio_url``: fetch an audio file and decode it to PCM for the microphone.

Limits (docs/api.md 2.5): at most :data:`MAX_AUDIO_BYTES` fetched, :data:`MAX_AUDIO_SECONDS`
played, 15 s to fetch, redirects not followed (a redirect could lead elsewhere). The control
plane checked the URL against the webhook address rules before sending the command; the fetch
applies the agent's media rules again where it connects (:func:`meetbot_common.ssrf.
client_session`: the guarded resolver checks the addresses it connects to, so a name that
answers differently now than at the control plane's check cannot reach an internal address).
Any format ffmpeg reads; decoded to 24 kHz mono 16-bit.
"""

from __future__ import annotations

import asyncio

import aiohttp

from agent.voice.synthesis import Pcm
from meetbot_common.pcm import decode_command
from meetbot_common.ssrf import (
    DELIVERY_TIMEOUT_SECONDS,
    TargetPolicy,
    TargetRefused,
    check_url,
    client_session,
)

MAX_AUDIO_BYTES = 20 * 1024 * 1024
MAX_AUDIO_SECONDS = 600.0
FETCH_TIMEOUT_S = DELIVERY_TIMEOUT_SECONDS  # client_session's total timeout
SAMPLE_RATE = 24_000
PIECE_BYTES = SAMPLE_RATE * 2  # 1 s


class AudioUnavailable(RuntimeError):
    """The file could not be fetched or decoded, or breaks a limit; the message says which."""


async def fetch_audio(url: str, policy: TargetPolicy) -> bytes:
    """The file's bytes (at most :data:`MAX_AUDIO_BYTES`), fetched under ``policy``.

    Raises:
        AudioUnavailable: Not http(s), refused by ``policy`` (the URL or an address its host
            resolves to when connecting), unreachable, not 200, or too large.
    """
    if not url.startswith(("http://", "https://")):
        raise AudioUnavailable("audio_url must be http(s)")
    try:
        check_url(url, policy)
    except TargetRefused as exc:
        raise AudioUnavailable(f"audio_url is not allowed: {exc}") from exc
    try:
        async with (
            client_session(policy) as session,
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
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        # aiohttp wraps the guarded resolver's refusal into its connection error.
        refused = exc if isinstance(exc, TargetRefused) else getattr(exc, "os_error", None)
        if isinstance(refused, TargetRefused):
            raise AudioUnavailable(f"audio_url is not allowed: {refused}") from exc
        raise AudioUnavailable("audio_url could not be fetched") from exc
    return bytes(body)


async def decode_audio(data: bytes) -> bytes:
    """24 kHz mono int16 PCM of an audio file, ffmpeg reading it from a pipe.

    Raises:
        AudioUnavailable: ffmpeg is missing, cannot decode it, or it lasts longer than
            :data:`MAX_AUDIO_SECONDS`.
    """
    try:
        command = decode_command("pipe:0", rate=SAMPLE_RATE, max_seconds=MAX_AUDIO_SECONDS + 1)
    except FileNotFoundError as exc:
        raise AudioUnavailable("ffmpeg is not installed") from exc
    process = await asyncio.create_subprocess_exec(
        *command,
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


async def audio_pieces(url: str, policy: TargetPolicy) -> list[Pcm]:
    """The file at ``url`` (fetched under ``policy``) as 1 s pieces of PCM.

    Raises:
        AudioUnavailable: See :func:`fetch_audio` and :func:`decode_audio`.
    """
    pcm = await decode_audio(await fetch_audio(url, policy))
    return [
        Pcm(pcm[start : start + PIECE_BYTES], SAMPLE_RATE)
        for start in range(0, len(pcm), PIECE_BYTES)
    ]
