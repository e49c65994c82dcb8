"""The speech packaged with testmeeting: small, licensed, and the corpus's clips under its names.

The real thing throughout: the package's Opus files decoded by ffmpeg, the corpus (when this
machine has it) for the comparison, the demo's own source choice.
"""

from __future__ import annotations

import csv
import shutil
import wave
from pathlib import Path

import numpy as np
import pytest

from meetbot.demo.scenario import (
    CORPUS_TURNS,
    SpeechSource,
    build_scenario,
    find_speech,
    pick_source,
)
from testmeeting import packaged_speech
from testmeeting.conversation import SCRIPT, build_conversation
from tests.plugins.paths import speech_dir

pytestmark = pytest.mark.unit

MAX_BYTES = 3 * 1024 * 1024
ALLOWED_LICENCES = ("Public domain", "CC0 1.0", "CC BY 4.0")


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged set decoded once for this module."""
    return packaged_speech.materialise(tmp_path_factory.mktemp("packaged") / "speech")


def _wav(path: Path) -> tuple[tuple[int, int, int], np.ndarray]:
    with wave.open(str(path), "rb") as clip:
        shape = (clip.getframerate(), clip.getnchannels(), clip.getsampwidth())
        return shape, np.frombuffer(clip.readframes(clip.getnframes()), dtype="<i2")


def test_the_set_is_small_licensed_and_attributed() -> None:
    rows = packaged_speech.packaged_rows()
    # Files only: conversational/ is a separate set with its own manifest (test_stress.py).
    files = sorted(p.name for p in packaged_speech.PACKAGED_DIR.iterdir() if p.is_file())
    assert sum((packaged_speech.PACKAGED_DIR / f).stat().st_size for f in files) <= MAX_BYTES
    assert files == sorted(
        ["MANIFEST.tsv"]
        + [r["packaged"] for r in rows]
        + [r["file"].removesuffix(".wav") + ".txt" for r in rows]
    )
    for row in rows:
        assert row["license"].startswith(ALLOWED_LICENCES), row["file"]
        assert row["attribution"] and row["changes"] and row["source_repo"], row["file"]
        assert row["packaged"].endswith(".opus")
        assert (packaged_speech.PACKAGED_DIR / row["packaged"]).read_bytes()[:4] == b"OggS"
    # Every clip the demo, the conversation scenario and the tests name is packaged.
    names = {r["file"] for r in rows}
    assert set(CORPUS_TURNS) <= names
    assert {clip for _, clips, _ in SCRIPT for clip in clips} <= names
    assert "LJ001-0001.wav" in names and "jfk.wav" in names


def test_materialise_gives_the_corpus_layout_once(packaged: Path) -> None:
    folder = packaged
    assert packaged_speech.is_materialised(folder)
    with (folder / "MANIFEST.tsv").open(encoding="utf-8") as manifest:
        rows = list(csv.DictReader(manifest, delimiter="\t"))
    assert rows == packaged_speech.packaged_rows()
    for row in rows:
        shape, samples = _wav(folder / row["file"])
        assert shape == (16_000, 1, 2)
        # Opus keeps the length to the sample after its pre-skip; allow one 20 ms frame.
        assert len(samples) / 16_000 == pytest.approx(float(row["duration_s"]), abs=0.02)
        assert np.abs(samples.astype(np.int32)).max() > 1000, row["file"]
        assert (folder / row["file"]).with_suffix(".txt").read_text(encoding="utf-8").strip()
    stamp = (folder / "jfk.wav").stat().st_mtime_ns
    assert packaged_speech.materialise(folder) == folder
    assert (folder / "jfk.wav").stat().st_mtime_ns == stamp  # decoded once, not again


def test_packaged_clips_are_the_corpus_recordings(packaged: Path) -> None:
    corpus = speech_dir()
    if not (corpus / "MANIFEST.tsv").is_file():
        pytest.skip(f"the corpus is not at {corpus}: nothing to compare the packaged set with")
    folder = packaged
    for row in packaged_speech.packaged_rows():
        _, original = _wav(corpus / row["file"])
        _, decoded = _wav(folder / row["file"])
        n = min(len(original), len(decoded))
        a, b = original[:n].astype(np.float64), decoded[:n].astype(np.float64)
        # Same recording, same alignment: the waveforms correlate closely.
        assert np.corrcoef(a, b)[0, 1] > 0.9, row["file"]
        ref = (corpus / row["file"]).with_suffix(".txt").read_text(encoding="utf-8")
        assert (folder / row["file"]).with_suffix(".txt").read_text(encoding="utf-8") == ref


def test_the_demo_plays_the_packaged_set_without_the_corpus(packaged: Path, tmp_path: Path) -> None:
    # The scratch folder already holds this set: it is used as it is, not decoded again.
    folder = find_speech(tmp_path / "no-corpus-here", packaged)
    assert folder == packaged
    assert pick_source([], folder) is SpeechSource.PACKAGED
    demo = build_scenario("google_meet", audio=[], speech_dir=folder, max_speech_seconds=18)
    assert demo.source is SpeechSource.PACKAGED
    assert len(demo.references) == 3 and all(demo.references)
    # The conversation scenario is built from the packaged clips too.
    assert len(build_conversation(folder, "conversation").turns) == len(SCRIPT)


def test_the_corpus_wins_over_the_packaged_set(packaged: Path, tmp_path: Path) -> None:
    # A plain folder of the demo's clips (no packaged marker) is a corpus.
    corpus = tmp_path / "corpus"
    shutil.copytree(packaged, corpus, ignore=shutil.ignore_patterns(packaged_speech.MARKER))
    assert find_speech(corpus, tmp_path / "scratch") == corpus
    assert pick_source([], corpus) is SpeechSource.CORPUS
    assert not (tmp_path / "scratch").exists()


def test_espeak_only_when_the_packaged_set_is_missing_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An install without the package data (e.g. a wheel built without it).
    monkeypatch.setattr(packaged_speech, "PACKAGED_DIR", tmp_path / "not-installed")
    assert find_speech(tmp_path / "no-corpus-here", tmp_path / "scratch") is None
    assert pick_source([], None) is SpeechSource.ESPEAK
    with pytest.raises(FileNotFoundError, match="packaged speech not installed"):
        packaged_speech.materialise(tmp_path / "scratch")
