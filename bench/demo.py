"""The demo as a benchmark: ``meetbot demo`` on each skin, one JSON line per run.

Each run is the user's command in a subprocess (control plane, simulator, agent, tiny.en on the
real-speech corpus) with ``--json-summary``; the line carries what the summary measured:
pooled WER against the reference text, end-of-utterance → SSE final-segment latency p50/p95
(from the end of each clip's voice on the simulator's timeline), launch → ``active`` and launch
→ ``completed`` seconds, signed webhook deliveries, total wall time and the 1-minute load
average at the end (latency on a shared machine tracks it).

Usage: ``.venv/bin/python bench/demo.py [--platforms google_meet,zoom,teams] [--runs 1]
[--scenario-seconds S]``. Plays the speech corpus (``MEETBOT_SPEECH_DIR`` or
``../shared/data/speech``); without it the demo plays the speech packaged with meetbot.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _elapsed(summary: dict[str, Any], status: str) -> float | None:
    for change in summary["statuses"]:
        if change["status"] == status:
            return float(change["elapsed_s"])
    return None


def run_once(platform: str, scenario_seconds: float | None) -> dict[str, Any]:
    """Run the demo once and return its figures (``ok`` false with ``error`` on failure)."""
    with tempfile.TemporaryDirectory(prefix="meetbot-bench-demo-") as folder:
        summary_path = Path(folder) / "summary.json"
        command = [
            sys.executable,
            "-m",
            "meetbot",
            "demo",
            "--platform",
            platform,
            "--json-summary",
            str(summary_path),
        ]
        if scenario_seconds is not None:
            command += ["--scenario-seconds", str(scenario_seconds)]
        result = subprocess.run(  # noqa: S603 -- our own interpreter and arguments
            command, cwd=REPO, capture_output=True, text=True, check=False
        )
        if not summary_path.is_file():
            return {"ok": False, "error": result.stdout[-500:] + result.stderr[-500:]}
        summary = json.loads(summary_path.read_text())
    return {
        "ok": summary["ok"],
        "error": summary["error"],
        "speech_source": summary["speech_source"],
        "speech_s": summary["speech_seconds"],
        "wer": summary["wer"],
        "reference_words": summary["reference_words"],
        "latency_p50_s": summary["latency_p50_s"],
        "latency_p95_s": summary["latency_p95_s"],
        "turn_latencies_s": [turn["latency_s"] for turn in summary["turns"]],
        "launch_to_active_s": _elapsed(summary, "active"),
        "launch_to_completed_s": _elapsed(summary, "completed"),
        "webhooks_verified": summary["webhooks"]["verified"],
        "total_s": summary["elapsed_s"],
        "load1": summary["load_average_1m"],
    }


def main() -> int:
    """Print one JSON line per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platforms", default="google_meet,zoom,teams")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--scenario-seconds", type=float)
    args = parser.parse_args()
    failed = 0
    for platform in args.platforms.split(","):
        for run in range(args.runs):
            figures = run_once(platform, args.scenario_seconds)
            failed += not figures["ok"]
            print(
                json.dumps({"figure": "demo", "platform": platform, "run": run, **figures}),
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
