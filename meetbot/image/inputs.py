"""The inputs of a bot image: where the checkout is, their sha256, and the meetbot wheel.

The key covers ``images/``, ``packer/``, ``requirements.lock``, ``pyproject.toml``,
``README.md`` (the wheel's long description) and every file of the packages the wheel
contains, plus the build options that change the image (e.g. disk size, base image). Python
bytecode and caches are skipped, so running the code does not change the key.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

# What the wheel contains (pyproject.toml [tool.setuptools.packages.find]) and what else
# shapes the image.
WHEEL_PACKAGES = ("meetbot", "agent", "control_plane", "testmeeting", "meetbot_common")
IMAGE_DIRS = ("images", "packer")
TOP_FILES = ("requirements.lock", "pyproject.toml", "README.md")
_SKIP_DIRS = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


class CheckoutNotFound(RuntimeError):
    """No meetbot checkout (with ``images/`` and ``packer/``) was found."""


def find_checkout(start: Path | None = None) -> Path:
    """Return the root of the meetbot checkout that holds ``images/`` and ``packer/``.

    Looks at ``start`` and its parents, then at this package's own checkout (an editable
    install).

    Raises:
        CheckoutNotFound: Neither place is a checkout, e.g. meetbot installed from a wheel.
    """
    origin = (start or Path.cwd()).resolve()
    for candidate in (origin, *origin.parents, Path(__file__).resolve().parents[2]):
        if (candidate / "images" / "build-base.sh").is_file() and (
            candidate / "packer" / "meetbot.pkr.hcl"
        ).is_file():
            return candidate
    raise CheckoutNotFound(
        "meetbot image build needs a meetbot checkout (with images/ and packer/); run it from one"
    )


def _walk(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if any(part in _SKIP_DIRS for part in path.relative_to(root).parts):
            continue
        if path.is_file() and not path.name.endswith(_SKIP_SUFFIXES):
            yield path


def input_files(checkout: Path, exclude: Iterable[str] = ()) -> list[Path]:
    """Every file that goes into the image, as paths relative to ``checkout``, sorted.

    Args:
        checkout: The checkout root.
        exclude: Top-level folders to leave out (e.g. ``packer`` for the base image's key).
    """
    skipped = set(exclude)
    files: list[Path] = []
    for name in (*IMAGE_DIRS, *WHEEL_PACKAGES):
        if name in skipped:
            continue
        files += [p.relative_to(checkout) for p in _walk(checkout / name)]
    files += [Path(name) for name in TOP_FILES if (checkout / name).is_file()]
    return sorted(files)


def input_key(
    checkout: Path, options: Mapping[str, str] | None = None, exclude: Iterable[str] = ()
) -> str:
    """sha256 (hex) of the image's inputs: each file's path and bytes, then the options.

    Args:
        checkout: The checkout root (:func:`find_checkout`).
        options: Build options that change the image (name -> value); order does not matter.
        exclude: Top-level folders left out of the key (see :func:`input_files`).
    """
    digest = hashlib.sha256()
    for relative in input_files(checkout, exclude):
        data = (checkout / relative).read_bytes()
        digest.update(f"file {relative.as_posix()} {len(data)}\n".encode())
        digest.update(data)
    for name, value in sorted((options or {}).items()):
        digest.update(f"option {name}={value}\n".encode())
    return digest.hexdigest()


def _copy_sources(checkout: Path, target: Path, names: Iterable[str]) -> None:
    ignore = shutil.ignore_patterns(*_SKIP_DIRS, "*.pyc", "*.pyo")
    for name in names:
        source = checkout / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        elif source.is_file():
            shutil.copy2(source, target / name)


def build_dist(checkout: Path, dist: Path) -> Path:
    """Build the meetbot wheel from a copy of the checkout into ``dist`` with the lock file.

    The copy keeps build leftovers (``build/``, ``*.egg-info``) out of the checkout. pip
    fetches the build backend (setuptools) from PyPI.

    Returns:
        The wheel's path (``dist/meetbot-*.whl``); ``dist/requirements.lock`` is beside it.

    Raises:
        subprocess.CalledProcessError: pip could not build the wheel.
    """
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="meetbot-wheel-") as tmp:
        source = Path(tmp) / "src"
        source.mkdir()
        _copy_sources(checkout, source, ("pyproject.toml", "README.md", *WHEEL_PACKAGES))
        subprocess.run(  # noqa: S603 - our own interpreter's pip with fixed arguments
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(source)],
            check=True,
        )
    shutil.copy2(checkout / "requirements.lock", dist / "requirements.lock")
    wheels = sorted(dist.glob("meetbot-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one meetbot wheel in {dist}, found {len(wheels)}")
    return wheels[0]
