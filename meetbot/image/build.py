"""Build a bot image: the native base (build-base.sh), then ``packer build`` with the self-test.

Every step's output goes to the build's log; the console shows the milestones with the time
since the build started. A finished build is renamed into the cache under its input key; a
failed one leaves its ``<key>.partial-*`` folder (log included) for inspection.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TextIO

from control_plane.launchers.qemu_accel import CPU_MODEL, Accelerator, probe_accelerator
from meetbot.image.cache import IMAGE_FILE, Manifest, cached
from meetbot.image.host import as_root, idle_cpus, packer_version
from meetbot.image.inputs import build_dist, input_key
from meetbot.image.seed import BUILD_USER, new_password, write_seed

PACKER_SOURCE = "qemu.meetbot"
# Lines of build-base.sh's output worth showing: the scripts' own lines and mmdebstrap's.
_BASE_SHOWN = re.compile(r"^(I: |E: |W: |[\w.-]+\.sh: )")
_SELFTEST_START = "meetbot image self-test"
_SELFTEST_END = re.compile(r"self-test: \d+ passed, \d+ failed")


class BuildFailed(RuntimeError):
    """A step of the build failed; the message names it and where its log is."""


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """How to build.

    Attributes:
        disk_size: Virtual disk size of the image (qemu-img units, e.g. ``8G``).
        base_size: Virtual size of the natively built base disk (at most ``disk_size``).
        base_image: Boot this image (path or URL, e.g. Debian's official cloud image) instead
            of building the base natively.
        base_image_checksum: Packer's ``iso_checksum`` for ``base_image``.
        accelerator: ``auto`` probes KVM by booting the base image's kernel; or ``kvm``/``tcg``.
        cpus: vCPUs of the build VM; None: 2 if the machine is idle, else 1.
        memory: Memory of the build VM, in MiB.
        packer_vars: Further ``-var NAME=VALUE`` for the template; they enter the key.
    """

    disk_size: str = "8G"
    base_size: str = "6G"
    base_image: str | None = None
    base_image_checksum: str = "none"
    accelerator: Literal["auto", "kvm", "tcg"] = "auto"
    cpus: int | None = None
    memory: int = 2048
    packer_vars: dict[str, str] = field(default_factory=dict)

    def key_options(self) -> dict[str, str]:
        """The options that change the image, for the input key."""
        options = {"disk_size": self.disk_size, "base": self.base_image or "build-base"}
        if self.base_image is None:
            options["base_size"] = self.base_size
        else:
            options["base_image_checksum"] = self.base_image_checksum
        options.update({f"var.{name}": value for name, value in self.packer_vars.items()})
        return options


@dataclass(frozen=True, slots=True)
class BuildResult:
    """A built (or cached) image.

    Attributes:
        image: The qcow2 file.
        manifest: Its manifest (times, size, accelerator, self-test).
        from_cache: True when an earlier build was reused.
    """

    image: Path
    manifest: Manifest
    from_cache: bool


class Progress:
    """Prints milestones with the time since the build started, and logs every line."""

    def __init__(self, log: TextIO, out: TextIO = sys.stdout) -> None:
        """Start the clock; ``log`` receives everything, ``out`` the milestones."""
        self._log = log
        self._out = out
        self._start = time.monotonic()

    def _stamp(self) -> str:
        elapsed = int(time.monotonic() - self._start)
        return f"[{elapsed // 60:02d}:{elapsed % 60:02d}]"

    def say(self, message: str) -> None:
        """Show and log one line."""
        line = f"{self._stamp()} {message}"
        print(line, file=self._out, flush=True)
        self._log.write(line + "\n")
        self._log.flush()

    def run(
        self,
        command: list[str],
        shown: Callable[[str], bool],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> list[str]:
        """Run ``command``, log all its output, show the lines ``shown`` accepts.

        Returns:
            All output lines.

        Raises:
            BuildFailed: The command exited non-zero.
        """
        lines: list[str] = []
        proc = subprocess.Popen(  # noqa: S603 - our own scripts and packer, fixed arguments
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            text=True,
            errors="replace",
        )
        assert proc.stdout is not None  # noqa: S101 - stdout=PIPE above
        with proc:
            for raw in proc.stdout:
                line = raw.rstrip("\n")
                lines.append(line)
                self._log.write(line + "\n")
                if shown(line):
                    print(f"{self._stamp()}   {line}", file=self._out, flush=True)
            self._log.flush()
        if proc.returncode != 0:
            tail = "\n".join(lines[-30:])
            raise BuildFailed(f"{Path(command[0]).name} exited with {proc.returncode}:\n{tail}")
        return lines


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def selftest_report(lines: list[str]) -> list[str]:
    """Cut the self-test's report out of packer's output, without packer's line prefixes."""
    report: list[str] = []
    for line in lines:
        text = re.sub(r"^\s*(==> )?[\w.-]+: ", "", line)
        if _SELFTEST_START in text:
            report = []
        if report or _SELFTEST_START in text:
            report.append(text)
        if _SELFTEST_END.search(text):
            break
    return report


def _template_dir(checkout: Path, target: Path, progress: Progress) -> Path:
    """Copy the template; packer < 1.7 cannot read plugins.pkr.hcl, newer ones run init."""
    target.mkdir(parents=True)
    modern = packer_version() >= (1, 7, 0)
    for source in sorted((checkout / "packer").glob("*.pkr.hcl")):
        if source.name == "plugins.pkr.hcl" and not modern:
            continue
        shutil.copy2(source, target / source.name)
    if modern:
        progress.run(["packer", "init", str(target)], lambda _line: True)
    return target


def _build_base(
    checkout: Path, root: Path, dist: Path, options: BuildOptions, progress: Progress
) -> tuple[Path, str, float]:
    """Build (or reuse) the native base image; returns its path, sha256 and build seconds.

    The base is cached under ``base/<key>/`` by the hash of everything but ``packer/``, so a
    template change does not rebuild it; older bases are removed.
    """
    key = input_key(checkout, {"base_size": options.base_size}, exclude=("packer",))
    folder = root / "base" / key
    image = folder / "base.qcow2"
    checksum_file = folder / "base.qcow2.sha256"
    if image.is_file() and checksum_file.is_file():
        progress.say(f"base image: cached {image}")
        return image, checksum_file.read_text().split()[0], 0.0
    for old in (root / "base").glob("*"):
        shutil.rmtree(old, ignore_errors=True)
    started = time.monotonic()
    progress.say("base image: mmdebstrap + install.sh in the chroot (natively)")
    command = as_root([
        "bash", str(checkout / "images" / "build-base.sh"), "--dist", str(dist),
        "--output", str(image), "--size", options.base_size, "--cache", str(root / "downloads"),
    ])  # fmt: skip
    progress.run(command, lambda line: bool(_BASE_SHOWN.match(line)))
    seconds = time.monotonic() - started
    progress.say(f"base image: built in {seconds:.0f} s, {image.stat().st_size / 1e9:.2f} GB")
    return image, checksum_file.read_text().split()[0], seconds


def _choose_accelerator(
    options: BuildOptions, base: Path | None, progress: Progress
) -> Accelerator:
    if options.accelerator != "auto":
        return options.accelerator
    if base is None:
        progress.say("accelerator: tcg (a remote base cannot be probed; pass --accelerator kvm)")
        return "tcg"
    progress.say("accelerator: probing KVM by booting the base image's kernel")
    accelerator = probe_accelerator(base)
    progress.say(f"accelerator: {accelerator}")
    return accelerator


def build_image(
    checkout: Path, root: Path, options: BuildOptions, out: TextIO = sys.stdout
) -> BuildResult:
    """Return the cached image for these inputs, building it first if there is none.

    Args:
        checkout: The meetbot checkout (:func:`meetbot.image.inputs.find_checkout`).
        root: The cache root (:func:`meetbot.image.cache.cache_root`).
        options: How to build.
        out: Where progress goes.

    Raises:
        BuildFailed: A step failed; the partial folder with ``build.log`` is kept.
    """
    key = input_key(checkout, options.key_options())
    hit = cached(root, key)
    if hit is not None:
        return BuildResult(hit[0], hit[1], from_cache=True)
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{key}.lock"):
        hit = cached(root, key)  # another build may have finished while we waited
        if hit is not None:
            return BuildResult(hit[0], hit[1], from_cache=True)
        for stale in root.glob(f"{key}.partial-*"):
            shutil.rmtree(stale, ignore_errors=True)  # an earlier failed build of these inputs
        partial = Path(tempfile.mkdtemp(prefix=f"{key}.partial-", dir=root))
        try:
            with (partial / "build.log").open("w") as log:
                progress = Progress(log, out)
                progress.say(f"building image {key[:16]} in {partial}")
                manifest = _build(checkout, root, partial, key, options, progress)
        except BuildFailed as exc:
            raise BuildFailed(f"{exc}\nlogs: {partial}/build.log, {partial}/serial.log") from exc
        finally:
            # Keep only the logs of a failed build; the disk images are gigabytes.
            for leftover in ("dist", "seed", "template", "output", "packer_cache"):
                shutil.rmtree(partial / leftover, ignore_errors=True)
        final = root / key
        partial.rename(final)
        return BuildResult(final / manifest.image, manifest, from_cache=False)


def _build(
    checkout: Path, root: Path, partial: Path, key: str, options: BuildOptions, progress: Progress
) -> Manifest:
    progress.say("wheel: building meetbot from the checkout")
    wheel = build_dist(checkout, partial / "dist")
    progress.say(f"wheel: {wheel.name}")

    base_seconds = 0.0
    base: Path | None = None
    if options.base_image is None:
        dist = partial / "dist"
        base, sha256, base_seconds = _build_base(checkout, root, dist, options, progress)
        base_url, base_checksum = str(base), f"sha256:{sha256}"
    else:
        base_url, base_checksum = options.base_image, options.base_image_checksum
    accelerator = _choose_accelerator(options, base, progress)
    cpus = options.cpus or idle_cpus()

    password = new_password()
    write_seed(partial / "seed", password)
    template = _template_dir(checkout, partial / "template", progress)
    variables = {
        "base_image": base_url,
        "base_image_checksum": base_checksum,
        "accelerator": accelerator,
        "qemu_cpu": CPU_MODEL[accelerator],
        "cpus": str(cpus),
        "memory": str(options.memory),
        "disk_size": options.disk_size,
        "output_directory": str(partial / "output"),
        "seed_dir": str(partial / "seed"),
        "images_dir": str(checkout / "images"),
        "dist_dir": str(partial / "dist"),
        "serial_log": str(partial / "serial.log"),
        "image_name": Path(IMAGE_FILE).stem,
        "ssh_username": BUILD_USER,
        **options.packer_vars,
    }
    command = ["packer", "build", "-color=false", f"-only={PACKER_SOURCE}"]
    for name, value in variables.items():
        command += ["-var", f"{name}={value}"]
    command.append(str(template))
    env = {
        **os.environ,
        "PKR_VAR_ssh_password": password,  # in the environment, not in the process list
        "PACKER_CACHE_DIR": str(partial / "packer_cache"),
        "CHECKPOINT_DISABLE": "1",
    }
    progress.say(f"packer build: qemu, {accelerator}, {cpus} vCPU, {options.memory} MiB")
    started = time.monotonic()
    lines = progress.run(command, lambda _line: True, env=env, cwd=partial)
    packer_seconds = time.monotonic() - started

    built = partial / "output" / IMAGE_FILE
    if not built.is_file():
        raise BuildFailed(f"packer finished without {built}; see {partial / 'build.log'}")
    built.rename(partial / IMAGE_FILE)
    report = selftest_report(lines)
    manifest = Manifest(
        key=key,
        image=IMAGE_FILE,
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        accelerator=accelerator,
        cpus=cpus,
        base_seconds=round(base_seconds, 1),
        packer_seconds=round(packer_seconds, 1),
        size_bytes=(partial / IMAGE_FILE).stat().st_size,
        virtual_size=options.disk_size,
        options=options.key_options(),
        selftest=report,
    )
    manifest.write(partial)
    progress.say(f"packer build: done in {packer_seconds:.0f} s")
    return manifest
