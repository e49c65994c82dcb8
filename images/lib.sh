# Shared helpers of the image scripts; sourced, never run. Bash only.
# shellcheck shell=bash
# shellcheck disable=SC2034  # the MEETBOT_* names are for the scripts that source this file

# Where this checkout's images/ folder is (the folder of lib.sh).
IMAGES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Fixed places on a bot machine; the runtime's units rely on them.
MEETBOT_USER=meetbot
MEETBOT_HOME=/var/lib/meetbot          # the user's home and data: models/, agent/
MEETBOT_VENV=/opt/meetbot/venv         # the agent's virtual environment (root-owned)
MEETBOT_ETC=/etc/meetbot               # agent.env and the runtime's configuration
MEETBOT_RUNTIME=/opt/meetbot/runtime   # images/runtime/*.sh: Xvfb and PulseAudio of the bot

log() {
  printf '%s: %s\n' "$(basename "$0")" "$*" >&2
}

die() {
  log "error: $*"
  exit 1
}

require_root() {
  [ "$(id -u)" = 0 ] || die "run as root"
}

# Print the packages of the named lists (images/packages/NAME.txt), comments and blanks dropped.
package_list() {
  local name
  for name in "$@"; do
    [ -f "$IMAGES_DIR/packages/$name.txt" ] || die "no package list $name.txt"
    sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$IMAGES_DIR/packages/$name.txt"
  done
}

# Print the packages of the given names that dpkg does not list as installed.
missing_packages() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

# apt-get install with retries: another apt (unattended-upgrades, cloud-init) may hold the lock.
apt_install() {
  local try
  for try in 1 2 3 4 5; do
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"; then
      return 0
    fi
    log "apt-get install failed (try $try); retrying"
    sleep $((try * 5))
  done
  return 1
}

# True when PID 1 is systemd, i.e. not inside a chroot or a container build.
systemd_running() {
  [ -d /run/systemd/system ]
}
