#!/usr/bin/env bash
# Create the unprivileged `meetbot` system user the agent runs as, and its folders:
# /var/lib/meetbot (home and data, the user's), /opt/meetbot (the venv, root's), /etc/meetbot.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
require_root

if ! getent passwd "$MEETBOT_USER" >/dev/null; then
  log "creating system user $MEETBOT_USER"
  useradd --system --user-group --home-dir "$MEETBOT_HOME" --create-home \
    --shell /usr/sbin/nologin --comment "meetbot agent" "$MEETBOT_USER"
fi
# audio/video: PulseAudio and the X display's devices when a unit runs them as this user.
usermod --append --groups audio,video "$MEETBOT_USER"
install -d -m 0750 -o "$MEETBOT_USER" -g "$MEETBOT_USER" "$MEETBOT_HOME" \
  "$MEETBOT_HOME/models" "$MEETBOT_HOME/agent"
install -d -m 0755 -o root -g root /opt/meetbot "$MEETBOT_ETC"
