"""A program the local launcher can start in place of ``python -m agent`` in its tests.

It takes ``--config FILE`` like the agent, writes ``started`` beside the config with the bot id
it read (and ``env.json``: the names of its ``MEETBOT_*``/``AWS_*`` variables), and waits.
With ``--ignore-sigterm`` it shrugs SIGTERM off, so the launcher must kill.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--ignore-sigterm", action="store_true")
    args = parser.parse_args()
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    bot_id = json.loads(args.config.read_text())["bot_id"]
    names = sorted(key for key in os.environ if key.startswith(("MEETBOT_", "AWS_")))
    (args.config.parent / "env.json").write_text(json.dumps(names))
    (args.config.parent / "started").write_text(bot_id)
    print("stand-in agent running", flush=True)
    while True:
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
