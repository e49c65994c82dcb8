#!/usr/bin/env bash
# Self-test of a bot machine: does everything the agent needs actually work here? Run as root
# at the end of `packer build` (and by hand on any bot machine). Each check runs with a time
# limit and prints PASS or FAIL with its time and a detail line; the report ends with a summary
# and the exit status is non-zero when any check failed.
# Checks: the venv imports the agent; the bundled models resolve (base joined and verified);
# faster-whisper loads tiny.en and transcribes a clip spoken by espeak-ng; Chromium starts
# headless under Playwright and runs a page's script; ffmpeg encodes H.264/AAC mp4; Xvfb serves
# a display that ffmpeg can grab; PulseAudio plays into the meeting sink (the default one) and
# its monitor records sound, not digital silence — both started by the runtime's scripts.
# Usage: selftest.sh  (as root; SELFTEST_TIMEOUT=seconds per check, default 600)
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
require_root

limit=${SELFTEST_TIMEOUT:-600}
py=$MEETBOT_VENV/bin/python
work=$(mktemp -d /tmp/meetbot-selftest.XXXXXX)
chmod 0755 "$work"
install -d -m 0700 -o "$MEETBOT_USER" -g "$MEETBOT_USER" "$work/run" "$work/bot"
trap 'rm -rf "$work"' EXIT

# Run a command as the agent's user, as the runtime will, within the time limit.
as_bot() {
  runuser -u "$MEETBOT_USER" -- env HOME="$MEETBOT_HOME" XDG_RUNTIME_DIR="$work/run" \
    HF_HUB_OFFLINE=1 timeout --kill-after=10 "$limit" "$@"
}

# Start a runtime server (images/runtime/) as the agent's user in a session of its own, logging
# to $work/NAME.log, and stop its whole session when the check's subshell exits.
start_server() {
  local name=$1
  shift
  setsid runuser -u "$MEETBOT_USER" -- env HOME="$MEETBOT_HOME" XDG_RUNTIME_DIR="$work/run" \
    "$@" >"$work/$name.log" 2>&1 &
  # shellcheck disable=SC2064  # the pid is meant to be expanded now
  trap "kill -- -$! 2>/dev/null || true" EXIT
}

SENTENCE="Hello everyone, thank you for joining the meeting today."

check_venv() {
  timeout "$limit" "$py" -c '
import importlib.metadata as md
import agent, agent.meeting.bot, control_plane, faster_whisper, meetbot, playwright
print(", ".join(f"{name} {md.version(name)}" for name in ("meetbot", "faster-whisper", "playwright")))
'
}

check_models() {
  as_bot "$py" -c '
import sys
from pathlib import Path
from agent.transcribe.models import resolve_model
for name in ("tiny.en", "base"):
    print(name, "->", resolve_model(name, Path(sys.argv[1])).path)
' "$MEETBOT_HOME/models"
}

check_whisper() {
  timeout "$limit" espeak-ng -s 140 -w "$work/clip.wav" "$SENTENCE"
  chmod 0644 "$work/clip.wav"
  as_bot "$py" -c '
import os, re, sys, time
from pathlib import Path
from agent.transcribe.models import load_whisper_model, resolve_model
t0 = time.monotonic()
model = load_whisper_model(resolve_model("tiny.en", Path(sys.argv[1])), cpu_threads=os.cpu_count() or 1)
t1 = time.monotonic()
segments, _ = model.transcribe(sys.argv[2], beam_size=1, temperature=0.0)
text = " ".join(s.text.strip() for s in segments)
t2 = time.monotonic()
words = lambda s: re.findall(r"[a-z]+", s.lower())
want, got = words(sys.argv[3]), set(words(text))
hits = sum(w in got for w in want)
cpu = Path("/proc/cpuinfo").read_text()
vendor = re.search(r"vendor_id\s*:\s*(\S+)", cpu)
isa = [flag for flag in ("avx512f", "avx2", "sse4_2") if re.search(rf"\b{flag}\b", cpu)]
# CTranslate2 sends int8 to MKL on Intel CPUs and to oneDNN on others; oneDNN under qemu TCG
# (whose -cpu max says AuthenticAMD) is slow enough to fail this check.
maker = vendor.group(1) if vendor else "unknown"
print(f"CPU {maker}:", " ".join(isa) or "no SSE4.2")
print(f"load {t1 - t0:.1f} s, transcribe {t2 - t1:.1f} s, {hits}/{len(want)} words: {text!r}")
sys.exit(0 if hits >= len(want) * 4 // 5 else 1)
' "$MEETBOT_HOME/models" "$work/clip.wav" "$SENTENCE"
}

check_chromium() {
  as_bot "$py" -c '
import time
from playwright.sync_api import sync_playwright
t0 = time.monotonic()
with sync_playwright() as p:
    # No Playwright timeouts: the check runs under its own limit (SELFTEST_TIMEOUT), and a
    # loaded emulated build VM took over 30 s (Playwright'"'"'s default) to load a data: page.
    browser = p.chromium.launch(
        executable_path="/usr/bin/chromium", headless=True, timeout=0
    )
    page = browser.new_page()
    page.set_default_timeout(0)
    page.goto("data:text/html,<title>t</title><p id=x></p><script>x.textContent = 6 * 7</script>")
    value = page.inner_text("#x")
    version = browser.version
    browser.close()
print(f"Chromium {version} ran the page script: {value} in {time.monotonic() - t0:.1f} s")
raise SystemExit(0 if value == "42" else 1)
'
}

check_ffmpeg() {
  local encoders
  encoders=$(ffmpeg -hide_banner -encoders)
  grep -q ' libx264 ' <<<"$encoders" || { echo "no libx264 encoder"; return 1; }
  grep -q ' aac ' <<<"$encoders" || { echo "no aac encoder"; return 1; }
  ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc=size=320x240:rate=15 \
    -f lavfi -i sine=frequency=440:sample_rate=48000 -t 2 -c:v libx264 -preset ultrafast \
    -pix_fmt yuv420p -c:a aac -b:a 96k -movflags +faststart "$work/test.mp4"
  local streams
  streams=$(ffprobe -v error -show_entries stream=codec_name,sample_rate -of csv=p=0 \
    "$work/test.mp4")
  echo "mp4 streams: $(tr '\n' ' ' <<<"$streams")"
  grep -qx h264 <<<"$streams" || { echo "no H.264 stream"; return 1; }
  grep -qx aac,48000 <<<"$streams" || { echo "no 48 kHz AAC stream"; return 1; }
}

# The display and sound checks start the servers with the runtime's own scripts
# (images/runtime/, installed in $MEETBOT_RUNTIME), as meetbot-xvfb.service and
# meetbot-pulseaudio.service do.
check_xvfb() {
  local display=:97
  start_server xvfb "$MEETBOT_RUNTIME/xvfb.sh" "$display"
  if ! as_bot "$MEETBOT_RUNTIME/xvfb-ready.sh" "$display" 60; then
    cat "$work/xvfb.log"
    return 1
  fi
  as_bot xdpyinfo -display "$display" | grep -E 'dimensions|depth of root' | tr -s ' ' | tr '\n' ';'
  echo
  as_bot ffmpeg -hide_banner -loglevel error -f x11grab -video_size 1280x720 -i "$display" \
    -frames:v 1 "$work/bot/screen.png"
  [ -s "$work/bot/screen.png" ] && echo "x11grab: one 1280x720 frame"
}

check_pulseaudio() {
  local recorder pulse=(env PULSE_SERVER="unix:$work/run/pulse/native")
  if [ ! -f "$work/clip.wav" ]; then
    timeout "$limit" espeak-ng -s 140 -w "$work/clip.wav" "$SENTENCE"
    chmod 0644 "$work/clip.wav"
  fi
  start_server pulseaudio "$MEETBOT_RUNTIME/pulseaudio.sh"
  if ! as_bot "${pulse[@]}" "$MEETBOT_RUNTIME/pulseaudio-ready.sh" 60; then
    cat "$work/pulseaudio.log"
    return 1
  fi
  as_bot "${pulse[@]}" pactl info | grep -E 'Server Version|Default Sink|Default Source' |
    tr '\n' ';'
  echo
  # Record the meeting sink's monitor (what a recording hears) while the clip plays into it,
  # over and over until the recording is done: on a loaded emulated build VM ffmpeg took
  # seconds to connect, and one play had ended before it did (a recording of silence).
  as_bot "${pulse[@]}" ffmpeg -hide_banner -loglevel error -f pulse -i meeting.monitor -t 6 \
    -ac 1 -ar 16000 -f s16le "$work/bot/monitor.raw" >"$work/rec.log" 2>&1 &
  recorder=$!
  while kill -0 "$recorder" 2>/dev/null; do
    as_bot "${pulse[@]}" paplay --device=meeting "$work/clip.wav" || true
  done
  wait "$recorder" || { echo "ffmpeg -f pulse failed"; cat "$work/rec.log"; return 1; }
  timeout "$limit" "$py" -c '
import sys
import numpy as np
pcm = np.fromfile(sys.argv[1], dtype="<i2")
peak = int(np.abs(pcm.astype(np.int32)).max()) if pcm.size else 0
print(f"monitor recorded {pcm.size / 16000:.1f} s, peak {peak}")
sys.exit(0 if peak > 1000 else 1)
' "$work/bot/monitor.raw"
}

checks=(
  "venv imports the agent:check_venv"
  "bundled whisper models:check_models"
  "faster-whisper tiny.en transcribes:check_whisper"
  "Chromium headless via Playwright:check_chromium"
  "ffmpeg H.264/AAC mp4:check_ffmpeg"
  "Xvfb display + x11grab:check_xvfb"
  "PulseAudio meeting sink records sound:check_pulseaudio"
)

echo "meetbot image self-test on $(hostname) ($(uname -r), $(nproc) CPU, $(date -u +%FT%TZ))"
passed=0
failed=0
for entry in "${checks[@]}"; do
  name=${entry%%:*} func=${entry#*:}
  start=$(date +%s%N)
  # Not in an `if`: there bash would ignore errexit inside the check.
  set +e
  out=$(set -e; "$func" 2>&1)
  status=$?
  set -e
  if [ "$status" -eq 0 ]; then
    verdict=PASS passed=$((passed + 1))
  else
    verdict=FAIL failed=$((failed + 1))
  fi
  took_ms=$((($(date +%s%N) - start) / 1000000))
  printf '%s  %-42s %4d.%d s\n' "$verdict" "$name" $((took_ms / 1000)) $((took_ms % 1000 / 100))
  if [ "$verdict" = PASS ]; then
    tail -n 2 <<<"$out" | sed 's/^/      /'
  else
    tail -n 25 <<<"$out" | sed 's/^/      /'
  fi
done
echo "self-test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
