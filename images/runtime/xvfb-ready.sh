#!/usr/bin/env bash
# Wait until the X display answers (xdpyinfo), so nothing starts Chromium before its X server.
# Exit 0 when it answers, 1 after TIMEOUT seconds (default 60).
# Usage: xvfb-ready.sh DISPLAY [TIMEOUT]
set -euo pipefail

display=${1:?usage: xvfb-ready.sh DISPLAY [TIMEOUT]}
timeout_s=${2:-60}
deadline=$((SECONDS + timeout_s))
until xdpyinfo -display "$display" >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "xvfb-ready.sh: display $display did not answer in $timeout_s s" >&2
    exit 1
  fi
  sleep 0.2
done
