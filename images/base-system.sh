#!/usr/bin/env bash
# mmdebstrap customize hook of build-base.sh: what only the natively built base image needs,
# since an official cloud image has it already: fstab and extlinux for a root filesystem that
# fills the whole disk, a hostname, no SSH host keys (cloud-init makes them at first boot),
# and no apt caches.
# Usage: base-system.sh ROOTFS ROOT_UUID
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
require_root
[ $# -eq 2 ] || die "usage: $0 ROOTFS ROOT_UUID"
root=$1 uuid=$2

printf 'UUID=%s / ext4 defaults,errors=remount-ro 0 1\n' "$uuid" >"$root/etc/fstab"
echo meetbot >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 meetbot\n::1 localhost ip6-localhost ip6-loopback\n' \
  >"$root/etc/hosts"

# /vmlinuz and /initrd.img are the kernel package's symlinks to the current kernel in /boot.
if [ ! -e "$root/vmlinuz" ] || [ ! -e "$root/initrd.img" ]; then die "no /vmlinuz or /initrd.img in $root"; fi
install -d "$root/boot/extlinux"
# no_timer_check: under software emulation on a loaded host the kernel's IO-APIC timer check
# can fail and panic the boot ("IO-APIC + timer doesn't work!"; seen here at load 12).
cat >"$root/boot/extlinux/extlinux.conf" <<CONF
DEFAULT debian
PROMPT 0
TIMEOUT 0
LABEL debian
  LINUX /vmlinuz
  INITRD /initrd.img
  APPEND root=UUID=$uuid ro console=tty0 console=ttyS0,115200n8 net.ifnames=0 no_timer_check
CONF

if [ ! -f "$root/etc/network/interfaces" ]; then
  printf 'source /etc/network/interfaces.d/*\n\nauto lo\niface lo inet loopback\n' \
    >"$root/etc/network/interfaces"
fi
rm -f "$root"/etc/ssh/ssh_host_*
rm -f "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin
rm -rf "$root"/var/lib/apt/lists/*
: >"$root/etc/machine-id"
