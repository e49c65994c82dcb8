"""Where the repository and the real speech are: ``REPO_ROOT``, ``speech_dir()``, ``speech``.

Real speech is the shared corpus (``MEETBOT_SPEECH_DIR``, else ``../shared/data/speech``) when
it is there; on any other machine it is the set packaged with testmeeting
(:mod:`testmeeting.packaged_speech`), decoded once per session to the corpus's layout (16 kHz
mono WAV and ``.txt`` under the same names, ``MANIFEST.tsv``). A test that needs a clip the
packaged set does not carry asks :func:`need_clip`, which skips it with the reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testmeeting import packaged_speech

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def speech_dir() -> Path:
    """The real-speech corpus folder (``MEETBOT_SPEECH_DIR``, else ``../shared/data/speech``)."""
    configured = os.environ.get("MEETBOT_SPEECH_DIR")
    return Path(configured) if configured else REPO_ROOT.parent / "shared" / "data" / "speech"


@pytest.fixture(scope="session")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path of the real-speech folder: the corpus, else the packaged set decoded for this session.

    Skips the test with a clear message when neither is available (no corpus, and the packaged
    set is not installed or ffmpeg cannot decode it).
    """
    corpus = speech_dir()
    if (corpus / "MANIFEST.tsv").is_file():
        return corpus
    if not packaged_speech.available():
        pytest.skip(
            f"real speech not found at {corpus} and the packaged set "
            f"({packaged_speech.PACKAGED_DIR}) is not installed: set MEETBOT_SPEECH_DIR"
        )
    return packaged_speech.materialise(tmp_path_factory.mktemp("packaged-speech"))


def need_clip(speech: Path, name: str) -> Path:
    """``speech / name``; skips the test when ``speech`` is the packaged set without that clip.

    A clip missing from the corpus itself is not skipped: the path is returned and the test
    fails on it, as a broken corpus should.
    """
    path = speech / name
    if not path.is_file() and packaged_speech.is_materialised(speech):
        pytest.skip(
            f"{name} is not in the packaged speech set (only clips licensed public domain, "
            "CC0 or CC BY are packaged; testmeeting/speech/MANIFEST.tsv): set "
            "MEETBOT_SPEECH_DIR to the full corpus to run this test"
        )
    return path
