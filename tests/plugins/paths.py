"""Where the repository and the real speech are: ``REPO_ROOT``, ``speech_dir()``, ``speech``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def speech_dir() -> Path:
    """The real-speech folder (``MEETBOT_SPEECH_DIR``, else ``../shared/data/speech``)."""
    configured = os.environ.get("MEETBOT_SPEECH_DIR")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "data" / "speech"


@pytest.fixture(scope="session")
def speech() -> Path:
    """Path of the real-speech folder; skips the test with a clear message when it is absent."""
    path = speech_dir()
    if not (path / "MANIFEST.tsv").is_file():
        pytest.skip(
            f"real speech not found at {path}: set MEETBOT_SPEECH_DIR to the folder holding "
            "MANIFEST.tsv (../shared/data/speech in the meetbot workspace)"
        )
    return path
