#!/usr/bin/env bash
# Wait until the bot's PulseAudio answers, check its devices, and make `meeting` the default
# sink and `bot_mic` the default source, so Chromium (started after this) plays the meeting
# into `meeting` and would take `bot_mic` as its microphone. Exit 1 after TIMEOUT seconds
# (default 60) or when a device is missing.
# Usage: PULSE_SERVER=unix:/run/meetbot-pulse/pulse/native pulseaudio-ready.sh [TIMEOUT]
set -euo pipefail

timeout_s=${1:-60}
deadline=$((SECONDS + timeout_s))
until pactl info >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "pulseaudio-ready.sh: PulseAudio (${PULSE_SERVER:-default}) did not answer in $timeout_s s" >&2
    exit 1
  fi
  sleep 0.2
done
sinks=$(pactl list short sinks | cut -f2)
sources=$(pactl list short sources | cut -f2)
for sink in meeting bot_voice; do
  grep -qx "$sink" <<<"$sinks" || { echo "pulseaudio-ready.sh: no sink $sink" >&2; exit 1; }
done
for source in meeting.monitor bot_mic; do
  grep -qx "$source" <<<"$sources" || { echo "pulseaudio-ready.sh: no source $source" >&2; exit 1; }
done
pactl set-default-sink meeting
pactl set-default-source bot_mic
