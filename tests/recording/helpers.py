"""What the recording tests check a file with: ffprobe's streams, and tiny.en's transcript."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from agent.transcribe.audio_io import read_audio
from agent.transcribe.models import load_whisper_model, resolve_model
from agent.transcribe.normalize import word_error_rate

# tiny.en on speech that went through WebRTC (Opus) and a lossy container: the demo's realtime
# bound (0.15) plus room for the extra lossy generation.
MAX_WER = 0.25


def probe(path: Path) -> dict[str, Any]:
    """ffprobe's JSON of the file's streams and format."""
    done = subprocess.run(  # noqa: S603 - fixed argv, the file is the test's own
        ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)],  # noqa: S607 - ffprobe from PATH, as the agent finds it
        capture_output=True,
        check=True,
    )
    probed: dict[str, Any] = json.loads(done.stdout)
    return probed


def codecs(probed: dict[str, Any]) -> dict[str, str]:
    """``{codec_type: codec_name}`` of the probed streams."""
    return {s["codec_type"]: s["codec_name"] for s in probed["streams"]}


def _transcribe_blocking(path: Path, models_dir: Path) -> str:
    model = load_whisper_model(resolve_model("tiny.en", models_dir), cpu_threads=2)
    audio = read_audio(path).astype(np.float32) / 32768.0
    segments, _ = model.transcribe(audio, language="en", beam_size=1, vad_filter=False)
    return " ".join(segment.text.strip() for segment in segments)


async def transcribe(path: Path, models_dir: Path) -> str:
    """The file's audio as tiny.en hears it (off the event loop)."""
    return await asyncio.to_thread(_transcribe_blocking, path, models_dir)


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate after the project's text normalisation."""
    return word_error_rate(reference, hypothesis)
