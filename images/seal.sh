#!/usr/bin/env bash
# Seal a provisioned bot machine so that its next boot is a first boot: the build's SSH user
# gone, cloud-init's state, logs and seed cleared (the qemu launcher's or the cloud's user-data
# runs again), no SSH host keys, an empty machine-id, no apt caches, no staging files.
# Usage: seal.sh [--remove-user NAME] [--poweroff]   (as root; last thing a build runs)
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
require_root

remove_user="" poweroff=0
while [ $# -gt 0 ]; do
  case $1 in
    --remove-user) remove_user=$2; shift 2 ;;
    --poweroff) poweroff=1; shift ;;
    *) die "unknown argument $1" ;;
  esac
done

if [ -n "$remove_user" ] && getent passwd "$remove_user" >/dev/null; then
  case $remove_user in
    root | "$MEETBOT_USER") die "refusing to remove $remove_user" ;;
  esac
  log "removing build user $remove_user"
  userdel --force --remove "$remove_user" 2>/dev/null || userdel --force "$remove_user"
  rm -f /etc/sudoers.d/90-cloud-init-users
fi
if command -v cloud-init >/dev/null; then
  cloud-init clean --logs --seed
fi
rm -f /etc/ssh/ssh_host_*
: >/etc/machine-id
rm -f /var/lib/dbus/machine-id
apt-get clean
rm -rf /var/lib/apt/lists/* /tmp/meetbot-image /tmp/meetbot-selftest.*
sync
log "sealed"
if [ "$poweroff" = 1 ]; then
  # Detached, so the SSH session that ran this ends cleanly before the machine goes down.
  systemd-run --on-active=2 --timer-property=AccuracySec=100ms systemctl poweroff
fi
