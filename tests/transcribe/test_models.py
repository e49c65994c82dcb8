"""Model assembly from the PyPI packages: joined once, sha256 checked, cached atomically."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.transcribe import models
from agent.transcribe.errors import ModelIntegrityError, ModelUnavailable
from agent.transcribe.models import BASE_MODEL_SIZE, base_model_dir, resolve_model

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_base_is_joined_verified_and_reused(models_dir: Path) -> None:
    path = base_model_dir(models_dir)
    assert (path / "model.bin").stat().st_size == BASE_MODEL_SIZE
    assert {p.name for p in path.iterdir()} >= {
        "model.bin",
        "config.json",
        "tokenizer.json",
        "vocabulary.txt",
        "model.bin.sha256",
    }
    mtime = (path / "model.bin").stat().st_mtime_ns
    assert base_model_dir(models_dir) == path
    assert (path / "model.bin").stat().st_mtime_ns == mtime  # reused, not rejoined
    assert not [p for p in models_dir.iterdir() if p.name.startswith(".base-")]


def test_a_damaged_cache_is_rebuilt(tmp_path: Path) -> None:
    damaged = tmp_path / "base"
    damaged.mkdir()
    (damaged / "model.bin").write_bytes(b"\0" * 1024)
    path = base_model_dir(tmp_path)
    assert (path / "model.bin").stat().st_size == BASE_MODEL_SIZE


def test_a_digest_mismatch_is_refused_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pretend the pin says something else: the real parts must then be refused.
    monkeypatch.setattr(models, "BASE_MODEL_SHA256", "0" * 64)
    with pytest.raises(ModelIntegrityError):
        base_model_dir(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_resolution_of_names_and_directories(tmp_path: Path) -> None:
    tiny = resolve_model("tiny.en", tmp_path)
    assert (tiny.path / "model.bin").is_file()
    assert resolve_model(str(tiny.path), tmp_path).path == tiny.path
    with pytest.raises(ModelUnavailable):
        resolve_model("large-v9", tmp_path)
    with pytest.raises(ModelUnavailable):
        resolve_model(str(tmp_path), tmp_path)  # a directory without model.bin
