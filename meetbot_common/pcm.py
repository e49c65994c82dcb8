"""Audio files decoded to raw PCM by ffmpeg: mono, signed 16-bit little-endian samples.

The agent (the deferred pass reading its per-track WAVs and recordings, ``audio_url`` for the
microphone) and the test meeting (scenario clips, espeak-ng output) decode audio the same way:
a WAV that already has the wanted format is read as it is, anything else goes through one
``ffmpeg`` command line. The rate is the caller's (16 kHz for speech recognition, 24 kHz for
the page's microphone).
"""

from __future__ import annotations

import shutil
import subprocess
import wave
from pathlib import Path


class PcmDecodeError(RuntimeError):
    """ffmpeg ran but could not decode the input; the message names the file."""


def decode_command(source: str, *, rate: int, max_seconds: float | None = None) -> list[str]:
    """The ffmpeg argv that decodes ``source`` to mono s16le PCM at ``rate`` Hz on stdout.

    Args:
        source: What ffmpeg reads: a file path, or ``"pipe:0"`` for stdin.
        rate: Output sample rate in Hz, e.g. 16000.
        max_seconds: Decode at most this many seconds of input; all of it when None.

    Raises:
        FileNotFoundError: ffmpeg is not on ``PATH``.
    """
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise FileNotFoundError("ffmpeg is not installed")
    limit = [] if max_seconds is None else ["-t", str(max_seconds)]
    return [
        ffmpeg,
        "-nostdin",
        "-loglevel",
        "error",
        "-i",
        source,
        *limit,
        "-f",
        "s16le",
        "-ac",
        "1",
        "-ar",
        str(rate),
        "pipe:1",
    ]


def _plain_wav(path: Path, rate: int) -> bytes | None:
    """The samples of a mono 16-bit WAV at ``rate``; None for any other file or WAV format."""
    if path.suffix.lower() != ".wav":
        return None
    try:
        with wave.open(str(path), "rb") as wav:
            if (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) != (1, 2, rate):
                return None
            return wav.readframes(wav.getnframes())
    except (wave.Error, EOFError):
        # A WAV the wave module cannot parse (float samples, WAVE_FORMAT_EXTENSIBLE, a cut
        # header): the caller hands it to ffmpeg, which reads those.
        return None


def read_pcm(path: Path, *, rate: int, timeout: float | None = None) -> bytes:
    """The file at ``path`` as mono s16le PCM at ``rate`` Hz (2 bytes a sample). Blocking.

    A mono 16-bit WAV at ``rate`` is read directly; anything else (other WAVs, FLAC, mp3,
    mp4, webm…) is decoded by ffmpeg.

    Args:
        path: The audio file.
        rate: Output sample rate in Hz, e.g. 16000.
        timeout: Seconds ffmpeg may take; no limit when None.

    Raises:
        FileNotFoundError: ``path`` does not exist, or ffmpeg is not installed.
        PcmDecodeError: ffmpeg could not decode the file.
        subprocess.TimeoutExpired: ffmpeg took longer than ``timeout`` (it is killed).
    """
    if not path.is_file():
        raise FileNotFoundError(path)
    pcm = _plain_wav(path, rate)
    if pcm is not None:
        return pcm
    command = decode_command(str(path), rate=rate)
    done = subprocess.run(command, capture_output=True, check=False, timeout=timeout)  # noqa: S603 -- fixed argv
    if done.returncode != 0:
        raise PcmDecodeError(f"ffmpeg could not decode {path.name}: exit {done.returncode}")
    return done.stdout
