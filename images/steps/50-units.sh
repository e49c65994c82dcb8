#!/usr/bin/env bash
# Install every systemd unit in images/units/ (*.service, *.path, *.timer, *.target, *.socket,
# *.mount) into /etc/systemd/system and enable those that have an [Install] section. Units
# removed from images/units/ since an earlier run are disabled and removed as well (a manifest
# in /etc/meetbot/units.installed remembers what this script installed).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
require_root

manifest=$MEETBOT_ETC/units.installed
install -d -m 0755 "$MEETBOT_ETC"
touch "$manifest"

shopt -s nullglob
units=()
for path in "$IMAGES_DIR"/units/*.{service,path,timer,target,socket,mount}; do
  units+=("$(basename "$path")")
done
shopt -u nullglob

while read -r old; do
  [ -n "$old" ] || continue
  if ! printf '%s\n' "${units[@]}" | grep -qxF "$old"; then
    log "removing unit $old (no longer in images/units/)"
    systemctl disable "$old" >/dev/null 2>&1 || true
    rm -f "/etc/systemd/system/$old"
  fi
done <"$manifest"

for unit in "${units[@]}"; do
  install -m 0644 "$IMAGES_DIR/units/$unit" "/etc/systemd/system/$unit"
done
printf '%s\n' "${units[@]}" | sed '/^$/d' >"$manifest"

if systemd_running; then
  systemctl daemon-reload
fi
for unit in "${units[@]}"; do
  if grep -q '^\[Install\]' "/etc/systemd/system/$unit"; then
    systemctl enable "$unit"
  fi
done
log "${#units[@]} units installed from images/units/"
