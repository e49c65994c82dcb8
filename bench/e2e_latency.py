"""End-to-end latency: testmeeting → agent (Chromium capture, realtime tier) → SSE client.

Runs the whole product once per platform skin through ``meetbot demo`` (control plane,
testmeeting with participants speaking real recorded speech, one bot, its SSE stream read by
an API client) and prints one JSON line per figure: per-turn end-of-utterance → SSE arrival
of that turn's last final segment (the simulator's ground-truth timeline gives when each turn
stopped), p50/p95 over the turns, WER, wall time, CPU seconds of the whole process tree and
the load average. The latency includes the browser capture path (~0.3 s measured in
research findings §3), whose cost the transcription benchmark does not see.

``--styles`` adds the issue-12 conversation (``meetbot demo --style``): ``polite`` (eight
speakers 1.2 s apart) and ``conversation`` (−300…+300 ms between turns, backchannels, a 21 s
monologue). Run it on ``google_meet`` (one track per participant) and ``zoom`` or ``teams``
(one mixed track, speakers told by the active-speaker indicator) for both layouts. Each clip's
voice end → the SSE arrival of its last final is one latency sample (a monologue's sentences
too); ``heard_as_own_speaker`` is the share of turns whose finals carry only their speaker.

Usage: ``python -m bench.e2e_latency [--platforms google_meet,zoom,teams] [--seconds 40]
[--styles turns,polite,conversation] [--keep DIR]``. ``speaker_word_accuracy`` is the
share of final words whose speaker was voicing when they were said (``meetbot.demo.report``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def emit(**fields: Any) -> None:
    """Print one JSON line with the load average attached."""
    fields.setdefault("load1", round(os.getloadavg()[0], 2))
    print(json.dumps({"bench": "e2e_latency", **fields}), flush=True)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def run_once(platform: str, seconds: float | None, workdir: Path, style: str = "turns") -> int:
    summary_path = workdir / f"summary-{platform}-{style}.json"
    cmd = [
        sys.executable,
        "-m",
        "meetbot",
        "demo",
        "--platform",
        platform,
        "--style",
        style,
        "--json-summary",
        str(summary_path),
        "--data-dir",
        str(workdir / f"{platform}-{style}"),
    ]
    if seconds is not None:
        cmd += ["--scenario-seconds", str(seconds)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    done = subprocess.run(  # noqa: S603 - our own CLI with fixed arguments
        cmd, cwd=REPO, capture_output=True, text=True, check=False
    )
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if not summary_path.is_file():
        emit(
            platform=platform,
            style=style,
            metric="error",
            exit_code=done.returncode,
            stdout_tail=done.stdout[-1500:],
            stderr_tail=done.stderr[-1500:],
        )
        return done.returncode or 1
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    for turn in summary["turns"]:
        latency = turn.get("latency_s")
        emit(
            platform=platform,
            style=style,
            metric="turn",
            speaker=turn.get("speaker"),
            latency_s=None if latency is None else round(latency, 3),
            wer=turn.get("wer"),
            heard_as=turn.get("speakers_heard"),
        )
    latencies = [t["latency_s"] for t in summary["turns"] if t.get("latency_s") is not None]
    own = [t for t in summary["turns"] if t.get("speakers_heard") == [t.get("speaker")]]
    emit(
        platform=platform,
        style=style,
        metric="latency_end_of_utterance_to_sse_s",
        p50=_round(summary["latency_p50_s"]),
        p95=_round(summary["latency_p95_s"]),
        max=round(max(latencies), 3) if latencies else None,
        n=len(latencies),
        turns=len(summary["turns"]),
        turns_without_final=len(summary["turns"]) - len(latencies),
        heard_as_own_speaker=round(len(own) / max(1, len(summary["turns"])), 3),
        speaker_word_accuracy=(
            round(summary["speaker_words_right"] / summary["speaker_words_total"], 4)
            if summary.get("speaker_words_total")
            else None
        ),
    )
    emit(
        platform=platform,
        style=style,
        metric="run",
        ok=summary["ok"],
        error=summary["error"],
        wer=summary["wer"],
        speech_s=summary["speech_seconds"],
        wall_s=round(wall, 1),
        cpu_s_all_processes=round(cpu, 1),
        final_status=summary["final_status"],
    )
    return 0 if summary["ok"] else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platforms", default="google_meet")
    parser.add_argument("--seconds", type=float, help="speech per run (default: the demo's)")
    parser.add_argument(
        "--styles",
        default="turns",
        help="demo styles, comma-separated: turns, polite, conversation",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="folder to keep each run's summary and data in (default: a temporary one)",
    )
    args = parser.parse_args(argv)
    emit(metric="machine", cpus=os.cpu_count(), load=[round(x, 2) for x in os.getloadavg()])
    worst = 0
    with tempfile.TemporaryDirectory(prefix="e2e-latency-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for style in args.styles.split(","):
            for platform in args.platforms.split(","):
                worst = max(worst, run_once(platform, args.seconds, workdir, style))
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
