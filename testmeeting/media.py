"""Audio in and out of the simulator: reading clips, synthesising text, writing WAV.

Everything here blocks (files, subprocesses); the room calls it through ``asyncio.to_thread``.
All PCM is 16 kHz mono int16 little-endian.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path

from meetbot_common import pcm
from testmeeting.errors import ScenarioError

SAMPLE_RATE = 16_000
"""Samples per second of every PCM buffer the simulator handles."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ScenarioError(f"{name} is not installed; it is needed to prepare scenario audio")
    return path


def read_pcm(path: Path) -> bytes:
    """Decode an audio file to 16 kHz mono int16 PCM.

    16 kHz mono 16-bit WAV is read directly; anything else (FLAC, other rates) goes
    through ffmpeg (:func:`meetbot_common.pcm.read_pcm`, at most 60 s).

    Raises:
        ScenarioError: The file is missing or cannot be decoded, or ffmpeg is not installed.
    """
    if not path.is_file():
        raise ScenarioError(f"audio file not found: {path}")
    try:
        return pcm.read_pcm(path, rate=SAMPLE_RATE, timeout=60)
    except FileNotFoundError as exc:  # the file is there: ffmpeg is not
        raise ScenarioError(
            "ffmpeg is not installed; it is needed to prepare scenario audio"
        ) from exc
    except pcm.PcmDecodeError as exc:
        raise ScenarioError(f"cannot decode audio file {path}") from exc


def synthesise(text: str) -> bytes:
    """Speak ``text`` with espeak-ng (English voice) and return 16 kHz mono int16 PCM.

    Raises:
        ScenarioError: espeak-ng or ffmpeg is missing or fails.
    """
    with tempfile.TemporaryDirectory(prefix="testmeeting-tts-") as folder:
        out = Path(folder) / "speech.wav"
        command = [_tool("espeak-ng"), "-v", "en-us", "-s", "160", "-w", str(out), "--", text]
        result = subprocess.run(command, capture_output=True, check=False, timeout=60)  # noqa: S603 -- fixed argv
        if result.returncode != 0 or not out.is_file():
            raise ScenarioError("espeak-ng failed to synthesise an utterance")
        return read_pcm(out)


def wav_bytes(pcm: bytes, sample_rate: int = SAMPLE_RATE) -> bytes:
    """Wrap mono int16 PCM in a WAV container."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(pcm)
    return buffer.getvalue()


def resolve_audio(name: str, search: list[Path]) -> Path:
    """Find an utterance's audio file: absolute, or relative to one of ``search`` in order.

    Raises:
        ScenarioError: No candidate exists.
    """
    candidate = Path(name)
    if candidate.is_absolute():
        return candidate
    for folder in search:
        if (folder / candidate).is_file():
            return folder / candidate
    raise ScenarioError(f"audio file {name!r} not found in {[str(f) for f in search]}")


def reference_text(audio: Path) -> str | None:
    """The reference transcript beside an audio file (same stem, ``.txt``), if present."""
    txt = audio.with_suffix(".txt")
    return txt.read_text(encoding="utf-8").strip() if txt.is_file() else None
