"""``meetbot image``: build the bot machine's VM image, or say where the cached one is.

    meetbot image build [--disk-size 8G] [--accelerator auto|kvm|tcg] [--cpus N] [--memory MiB]
                        [--base-image URL --base-image-checksum SUM] [--var NAME=VALUE]...
    meetbot image path  [same options]   # the cached image for this checkout, or exit 1

Builds need root (mmdebstrap, loop mounts; sudo is used otherwise) and install the missing
apt packages of ``images/packages/{checks,builder}.txt`` first.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from meetbot.image.build import BuildFailed, BuildOptions, build_image
from meetbot.image.cache import cache_root, cached
from meetbot.image.host import ensure_packages
from meetbot.image.inputs import CheckoutNotFound, find_checkout, input_key


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="meetbot image", description="Build and cache the bot machine's VM image."
    )
    parser.add_argument("action", choices=("build", "path"))
    parser.add_argument("--checkout", type=Path, help="meetbot checkout (default: found from .)")
    parser.add_argument(
        "--cache",
        type=Path,
        help="cache root (default: $MEETBOT_IMAGE_CACHE, else /var/cache/meetbot/images)",
    )
    parser.add_argument("--disk-size", default="8G", help="virtual disk size (default 8G)")
    parser.add_argument("--base-size", default="6G", help="native base disk size (default 6G)")
    parser.add_argument("--base-image", help="boot this (path/URL) instead of building a base")
    parser.add_argument("--base-image-checksum", default="none", help="e.g. sha256:HEX")
    parser.add_argument("--accelerator", choices=("auto", "kvm", "tcg"), default="auto")
    parser.add_argument("--cpus", type=int, help="build VM vCPUs (default: 2 if idle, else 1)")
    parser.add_argument("--memory", type=int, default=2048, help="build VM memory in MiB")
    parser.add_argument(
        "--var", action="append", default=[], metavar="NAME=VALUE", help="a packer variable"
    )
    return parser


def _options(args: argparse.Namespace) -> BuildOptions:
    packer_vars: dict[str, str] = {}
    for item in args.var:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"meetbot image: --var wants NAME=VALUE, got {item!r}")
        packer_vars[name] = value
    return BuildOptions(
        disk_size=args.disk_size,
        base_size=args.base_size,
        base_image=args.base_image,
        base_image_checksum=args.base_image_checksum,
        accelerator=args.accelerator,
        cpus=args.cpus,
        memory=args.memory,
        packer_vars=packer_vars,
    )


def _size(size: int) -> str:
    return f"{size / 2**30:.2f} GiB ({size} bytes)"


def main(argv: Sequence[str]) -> int:
    """Run ``meetbot image ...``; returns the exit code (0 ok, 1 failed or not built)."""
    args = _parser().parse_args(argv)
    try:
        checkout = find_checkout(args.checkout)
    except CheckoutNotFound as exc:
        print(f"meetbot image: {exc}", file=sys.stderr)
        return 1
    root = args.cache or cache_root()
    options = _options(args)

    if args.action == "path":
        hit = cached(root, input_key(checkout, options.key_options()))
        if hit is None:
            print("meetbot image: no image built for this checkout yet", file=sys.stderr)
            return 1
        print(hit[0])
        return 0

    installed = ensure_packages(checkout, "checks", "builder")
    if installed:
        print(f"installed apt packages: {' '.join(installed)}")
    try:
        result = build_image(checkout, root, options)
    except BuildFailed as exc:
        print(f"meetbot image: build failed: {exc}", file=sys.stderr)
        return 1
    manifest = result.manifest
    total = manifest.base_seconds + manifest.packer_seconds
    origin = "cached, built" if result.from_cache else "built"
    print(f"image:      {result.image}")
    print(f"{origin}:   {manifest.built_at} under {manifest.accelerator} with {manifest.cpus} vCPU")
    print(
        f"build time: {total:.0f} s (base {manifest.base_seconds:.0f} s, "
        f"packer {manifest.packer_seconds:.0f} s)"
    )
    print(f"size:       {_size(result.image.stat().st_size)}, virtual {manifest.virtual_size}")
    if manifest.selftest:
        print("self-test (inside the VM):")
        print("\n".join(f"  {line}" for line in manifest.selftest))
    return 0
