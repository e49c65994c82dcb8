#!/usr/bin/env bash
# Turn a Debian 12 machine into a meetbot bot machine: run every step in images/steps/ in order
# (apt packages, the meetbot user, the agent's venv, the whisper models, the systemd units,
# system configuration). Each step is idempotent, so this is safe to run again; on the natively
# built base image (build-base.sh ran it in the chroot already) it changes nothing.
# Usage: install.sh  (as root; MEETBOT_DIST_DIR names the folder with the wheel and lock)
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
require_root

for step in "$IMAGES_DIR"/steps/[0-9]*.sh; do
  start=$(date +%s)
  log "step $(basename "$step")"
  bash "$step"
  log "step $(basename "$step") done in $(($(date +%s) - start)) s"
done
