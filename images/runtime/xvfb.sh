#!/usr/bin/env bash
# The bot's X display: Xvfb in the foreground (systemd's ExecStart, or a child of
# `meetbot agent --display`), 1280x720 at 24 bit unless MEETBOT_SCREEN says otherwise. Headful
# Chromium draws on it and a video recording grabs it (ffmpeg x11grab). TCP is off: only local
# clients of the same user reach it (through its socket in /tmp/.X11-unix).
# Usage: xvfb.sh DISPLAY            e.g. xvfb.sh :99
set -euo pipefail

display=${1:?usage: xvfb.sh DISPLAY (e.g. :99)}
case $display in
  :[0-9]*) ;;
  *) echo "xvfb.sh: display must look like :99, not '$display'" >&2; exit 2 ;;
esac
screen=${MEETBOT_SCREEN:-1280x720x24}
# -nolisten tcp: no network clients; -noreset: the server survives its last client closing
# (Chromium restarting between meetings must find it again).
exec Xvfb "$display" -screen 0 "$screen" -nolisten tcp -noreset
