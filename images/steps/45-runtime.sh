#!/usr/bin/env bash
# Install the bot's display and sound runtime (images/runtime/*.sh: Xvfb, PulseAudio and their
# readiness checks) into /opt/meetbot/runtime, where meetbot-xvfb.service and
# meetbot-pulseaudio.service run them. The same scripts run outside a VM from a checkout
# (`meetbot agent --display`), so the VM and a laptop start the same runtime.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
require_root

install -d -m 0755 "$MEETBOT_RUNTIME"
shopt -s nullglob
scripts=("$IMAGES_DIR"/runtime/*.sh)
shopt -u nullglob
[ ${#scripts[@]} -gt 0 ] || die "no scripts in $IMAGES_DIR/runtime"
for script in "${scripts[@]}"; do
  install -m 0755 "$script" "$MEETBOT_RUNTIME/$(basename "$script")"
done
# Scripts removed from images/runtime/ since an earlier run go too.
for installed in "$MEETBOT_RUNTIME"/*.sh; do
  [ -e "$IMAGES_DIR/runtime/$(basename "$installed")" ] || rm -f "$installed"
done
log "${#scripts[@]} runtime scripts installed in $MEETBOT_RUNTIME"
