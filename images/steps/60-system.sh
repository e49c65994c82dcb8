#!/usr/bin/env bash
# System configuration of a bot machine: cloud-init (NoCloud first, for the qemu launcher's
# seed; the clouds' own datasources after it), the agent's environment file, and the serial
# console for boot logs.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
require_root

install -d -m 0755 /etc/cloud/cloud.cfg.d
cat >/etc/cloud/cloud.cfg.d/90-meetbot.cfg <<'CFG'
# meetbot bot machine (images/steps/60-system.sh).
datasource_list: [NoCloud, Ec2, GCE, None]
# Host keys are made at first boot; the image ships none.
ssh_deletekeys: true
ssh_genkeytypes: [ed25519, ecdsa, rsa]
# /etc/hosts names this machine as its seed does (sudo and others resolve the hostname).
manage_etc_hosts: true
# No locale generation: the image has no locales package and runs in C.UTF-8.
locale: false
CFG

# The agent's settings that depend on where the image put things (agent/process/settings.py). The
# runtime's units read this file with EnvironmentFile=; per-bot settings come from the
# control plane at boot, never from here.
cat >"$MEETBOT_ETC/agent.env" <<ENV
MEETBOT_AGENT_MODELS_DIR=$MEETBOT_HOME/models
MEETBOT_AGENT_DATA_DIR=$MEETBOT_HOME/agent
HF_HUB_OFFLINE=1
ENV
chmod 0644 "$MEETBOT_ETC/agent.env"
log "cloud-init and $MEETBOT_ETC/agent.env configured"
