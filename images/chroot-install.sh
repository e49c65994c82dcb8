#!/usr/bin/env bash
# mmdebstrap customize hook of build-base.sh: run install.sh inside the new root filesystem,
# natively, with this checkout's images/ and the given dist folder copied in and pip's cache
# bind-mounted from the host (kept between builds). pip in the chroot trusts the host's CA
# bundle for this build only (a host behind a TLS-intercepting proxy needs that); the image
# keeps Debian's own. The chroot gets a clean environment, not the host's pip settings.
# Usage: chroot-install.sh ROOTFS DIST_DIR PIP_CACHE_DIR
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
require_root
[ $# -eq 3 ] || die "usage: $0 ROOTFS DIST_DIR PIP_CACHE_DIR"
root=$1 dist=$2 pip_cache=$3

stage=$root/tmp/meetbot-image
rm -rf "$stage"
mkdir -p "$stage/dist" "$root/var/cache/meetbot-pip"
cp -a "$IMAGES_DIR" "$stage/images"
cp -a "$dist"/. "$stage/dist/"
host_ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
if [ -f "$host_ca" ]; then cp "$host_ca" "$stage/host-ca.crt"; fi
mount --bind "$pip_cache" "$root/var/cache/meetbot-pip"
status=0
chroot_env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
  LANG=C.UTF-8 PIP_CACHE_DIR=/var/cache/meetbot-pip MEETBOT_DIST_DIR=/tmp/meetbot-image/dist)
if [ -f "$stage/host-ca.crt" ]; then chroot_env+=(PIP_CERT=/tmp/meetbot-image/host-ca.crt); fi
chroot "$root" env -i "${chroot_env[@]}" bash /tmp/meetbot-image/images/install.sh || status=$?
umount "$root/var/cache/meetbot-pip"
rmdir "$root/var/cache/meetbot-pip"
rm -rf "$stage"
exit "$status"
