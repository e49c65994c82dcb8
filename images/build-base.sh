#!/usr/bin/env bash
# Build the bot machine's base image natively, from Debian's mirrors and PyPI only: mmdebstrap
# makes a Debian 12 root filesystem with a kernel (linux-image-cloud-amd64), cloud-init, and
# every apt package of packages/{common,vm,base}.txt; then install.sh runs in that chroot (the
# meetbot user, the agent's venv from the wheel, the whisper models, the units), so the VM
# itself has almost nothing left to do. The root filesystem fills a whole disk (no partition
# table) that extlinux boots on any BIOS machine: qemu, and Packer's qemu builder. Cloud-init
# grows the filesystem to the disk's size at first boot.
#
# Usage: build-base.sh --dist DIR --output FILE.qcow2 [--size 8G] [--cache DIR] [--mirror URL]
#   --dist    folder with meetbot-*.whl and requirements.lock (meetbot image build makes it)
#   --output  the qcow2 to write (FILE.qcow2.sha256 is written beside it)
#   --size    virtual disk size (default 8G); the image is sparse, so its file is much smaller
#   --cache   folder kept between builds for downloaded .deb files and pip's cache
#   --mirror  Debian mirror (default http://deb.debian.org/debian)
# Needs root, mmdebstrap, e2fsprogs, extlinux, syslinux-common, qemu-utils (scripts/check-images
# and meetbot image build install them with apt).
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
require_root

dist="" output="" size=8G cache="" mirror=http://deb.debian.org/debian
security_mirror=http://deb.debian.org/debian-security
while [ $# -gt 0 ]; do
  case $1 in
    --dist) dist=$2; shift 2 ;;
    --output) output=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --mirror) mirror=$2; shift 2 ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
done
if [ -z "$dist" ] || [ -z "$output" ]; then die "--dist and --output are required"; fi
dist=$(cd "$dist" && pwd)
for tool in mmdebstrap mkfs.ext4 extlinux qemu-img; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
[ -f /usr/lib/EXTLINUX/mbr.bin ] || [ -d /usr/lib/syslinux ] || die "syslinux-common is not installed"

output_dir=$(dirname "$output")
mkdir -p "$output_dir"
work=$(mktemp -d "$output_dir/.build-base.XXXXXX")
mnt=""
cleanup() {
  if [ -n "$mnt" ] && mountpoint -q "$mnt"; then umount "$mnt"; fi
  # A failed customize hook may leave the pip cache mounted in the root filesystem.
  if mountpoint -q "$work/rootfs/var/cache/meetbot-pip" 2>/dev/null; then
    umount "$work/rootfs/var/cache/meetbot-pip"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ -z "$cache" ]; then cache=$work/cache; fi
mkdir -p "$cache/debs" "$cache/pip"
cache=$(cd "$cache" && pwd)

mapfile -t packages < <(package_list common vm base)
include=$(IFS=,; echo "${packages[*]}")
root_uuid=$(cat /proc/sys/kernel/random/uuid)

log "mmdebstrap: Debian 12 with ${#packages[@]} packages (debs cached in $cache/debs)"
start=$(date +%s)
# The hooks run on the host with the root filesystem as "$1": keep the .deb cache, run
# install.sh inside the chroot with pip's cache bind-mounted, then the base-only setup.
# shellcheck disable=SC2016  # "$1" in single quotes is for mmdebstrap to expand in its hook.
mmdebstrap --variant=minbase --mode=root --format=directory \
  --include="$include" \
  --skip=essential/unlink \
  --setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
  --setup-hook="sync-in $cache/debs /var/cache/apt/archives" \
  --customize-hook="sync-out /var/cache/apt/archives $cache/debs" \
  --customize-hook="bash $IMAGES_DIR/chroot-install.sh \"\$1\" $dist $cache/pip" \
  --customize-hook="bash $IMAGES_DIR/base-system.sh \"\$1\" $root_uuid" \
  bookworm "$work/rootfs" \
  "deb $mirror bookworm main" \
  "deb $mirror bookworm-updates main" \
  "deb $security_mirror bookworm-security main"
log "mmdebstrap done in $(($(date +%s) - start)) s"

# One ext4 filesystem as the whole disk. 64bit stays off: extlinux reads it more reliably,
# and a bot's disk is far below 16 TiB.
log "filesystem: ext4 of $size, $(du -sh "$work/rootfs" | cut -f1) used"
truncate -s "$size" "$work/disk.raw"
mkfs.ext4 -q -F -L meetbot-root -U "$root_uuid" -O ^64bit -E root_owner=0:0 \
  -d "$work/rootfs" "$work/disk.raw"
rm -rf "$work/rootfs"

mnt=$work/mnt
mkdir -p "$mnt"
mount -o loop "$work/disk.raw" "$mnt"
extlinux --install "$mnt/boot/extlinux" >/dev/null
umount "$mnt"
mnt=""

log "converting to qcow2"
qemu-img convert -f raw -O qcow2 "$work/disk.raw" "$work/base.qcow2"
mv "$work/base.qcow2" "$output"
(cd "$output_dir" && sha256sum "$(basename "$output")" >"$(basename "$output").sha256")
log "base image $output: $(du -h "$output" | cut -f1) on disk, $size virtual, total $(($(date +%s) - start)) s"
