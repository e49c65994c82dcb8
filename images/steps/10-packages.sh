#!/usr/bin/env bash
# Install the apt packages of a bot machine (images/packages/common.txt + vm.txt) that are
# missing. A no-op on the natively built base image, where mmdebstrap already included them.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
require_root

mapfile -t wanted < <(package_list common vm)
mapfile -t missing < <(missing_packages "${wanted[@]}")
if [ ${#missing[@]} -eq 0 ]; then
  log "all ${#wanted[@]} apt packages present"
  exit 0
fi
log "installing ${#missing[@]} apt packages: ${missing[*]}"
DEBIAN_FRONTEND=noninteractive apt-get update -q
apt_install "${missing[@]}"
