#!/usr/bin/env bash
# The bot container's entry point: what meetbot-xvfb, meetbot-pulseaudio and meetbot-agent
# (images/units/) do on a VM, without systemd. Runs as root, drops to the meetbot user for
# everything but the bootstrap exchange (the grant is root-only) and the log upload.
# The Pod ends when the agent does (restartPolicy: Never); SIGTERM (Pod deletion) reaches the
# agent, which leaves the meeting within terminationGracePeriodSeconds.
set -euo pipefail
grant=/etc/meetbot/bootstrap.json
venv=/opt/meetbot/venv
runtime=/opt/meetbot/runtime
[ -f "$grant" ] || { echo "entrypoint: no bootstrap grant at $grant" >&2; exit 2; }

install -d -m 0700 -o meetbot -g meetbot /run/meetbot /run/meetbot-pulse
set -a
# shellcheck disable=SC1091
. /etc/meetbot/agent.env
set +a
export HOME=/var/lib/meetbot DISPLAY=:99 XDG_RUNTIME_DIR=/run/meetbot-pulse
export PULSE_SERVER=unix:/run/meetbot-pulse/pulse/native PYTHONUNBUFFERED=1
export MEETBOT_AGENT_DISPLAY=:99 MEETBOT_AGENT_PULSE_SERVER=$PULSE_SERVER MEETBOT_AGENT_HEADLESS=false

as_bot() { setpriv --reuid=meetbot --regid=meetbot --init-groups -- "$@"; }
as_bot "$runtime/xvfb.sh" :99 &
as_bot "$runtime/xvfb-ready.sh" :99 60
as_bot "$runtime/pulseaudio.sh" &
as_bot "$runtime/pulseaudio-ready.sh" 60

# The exchange works once: the container is never restarted (restartPolicy: Never).
"$venv/bin/python" -m agent.bootstrap --grant "$grant" --out /run/meetbot/bot.json --owner meetbot
log=/run/meetbot/agent.log
agent=0
as_bot "$venv/bin/python" -m agent --config /run/meetbot/bot.json > >(tee "$log") 2>&1 &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM INT
wait "$pid" || agent=$?
wait "$pid" 2>/dev/null || true
"$venv/bin/python" -m agent.log_upload --config /run/meetbot/bot.json --file "$log" || true
exit "$agent"
