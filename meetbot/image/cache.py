"""Where built images live: a cache outside the checkout, one folder per input key.

Layout of the cache root (``$MEETBOT_IMAGE_CACHE``, default ``/var/cache/meetbot/images``)::

    downloads/debs/        .deb files kept between base builds
    downloads/pip/         pip's cache for the venv built in the chroot
    <key>/meetbot-bot.qcow2  the image
    <key>/manifest.json    what was built, when, how long it took, its size, the self-test
    <key>/build.log        the whole build's output
    <key>.lock             held while a build of <key> runs
    <key>.partial-*/       a build in progress (renamed to <key>/ when it succeeds)

A folder ``<key>/`` exists only for a complete, self-tested image.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_CACHE_ROOT = Path("/var/cache/meetbot/images")
IMAGE_FILE = "meetbot-bot.qcow2"
MANIFEST_FILE = "manifest.json"


def cache_root() -> Path:
    """The cache root: ``$MEETBOT_IMAGE_CACHE`` or ``/var/cache/meetbot/images``."""
    configured = os.environ.get("MEETBOT_IMAGE_CACHE")
    return Path(configured) if configured else DEFAULT_CACHE_ROOT


@dataclass(frozen=True, slots=True)
class Manifest:
    """What ``manifest.json`` records about one built image.

    Attributes:
        key: The input key (sha256 hex).
        image: Image file name inside the key's folder.
        built_at: UTC time the build finished (ISO 8601).
        accelerator: qemu accelerator the build VM used (``kvm`` or ``tcg``).
        cpus: vCPUs of the build VM.
        base_seconds: Time of the native base build (mmdebstrap, venv), in seconds.
        packer_seconds: Time of ``packer build`` (boot, provisioning, self-test), in seconds.
        size_bytes: Size of the image file on disk, in bytes.
        virtual_size: Virtual disk size as given to the build (qemu-img units).
        options: The options that entered the key.
        selftest: The self-test's report lines, as printed inside the VM.
    """

    key: str
    image: str
    built_at: str
    accelerator: str
    cpus: int
    base_seconds: float
    packer_seconds: float
    size_bytes: int
    virtual_size: str
    options: dict[str, str] = field(default_factory=dict)
    selftest: list[str] = field(default_factory=list)

    def write(self, folder: Path) -> None:
        """Write ``folder/manifest.json``."""
        (folder / MANIFEST_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        """Read ``folder/manifest.json``.

        Raises:
            FileNotFoundError: No manifest there.
            ValueError: The manifest is not valid JSON of this shape.
        """
        data: Any = json.loads((folder / MANIFEST_FILE).read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{folder / MANIFEST_FILE} is not a JSON object")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"{folder / MANIFEST_FILE}: {exc}") from exc


def cached(root: Path, key: str) -> tuple[Path, Manifest] | None:
    """Return the image path and manifest of ``key`` if a complete build is cached."""
    folder = root / key
    try:
        manifest = Manifest.read(folder)
    except (FileNotFoundError, ValueError):
        return None
    image = folder / manifest.image
    return (image, manifest) if image.is_file() else None
