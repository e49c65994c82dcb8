"""Soak benchmark: one bot through a long meeting — memory of each process, CPU, latency drift.

Runs ``meetbot demo`` (control plane, testmeeting, one bot transcribing) with the speech
corpus's English clips passed ``--passes`` times as ``--audio`` (speakers take turns; one pass
is about 8 minutes of speech), which is how issue 19 first measured the growth. Every
``--every`` seconds it samples the demo's process tree and prints one JSON line per sample:

- ``uss_mb`` / ``pss_mb`` per role: ``agent`` (the bot's Python), ``driver`` (Playwright's node),
  ``browser`` (Chromium's main process), ``renderer`` (the meeting page), ``chromium_other``,
  ``control_plane`` and ``demo`` (the simulator and the demo's own client);
- ``bot_tree_pss_mb``: agent + driver + every Chromium process, the figure a bot VM must hold;
- ``cpu_s``: CPU seconds of the bot tree so far.

At the end it prints ``soak_summary``: the bot tree's growth in MB per hour after
``--warm-up`` seconds (least squares), its peak, CPU per second in the first and the last
third, and the demo's own summary figures (turns, turns without a final, end-of-turn → final
latency p50 of the first and the last third of the turns, WER). Nothing is asserted; issue 19
states the goals (≤ 50 MB per hour of new audio after a 5-minute warm-up, < 900 MB in all).

Usage: ``python -m bench.soak [--platform google_meet] [--passes 2] [--every 30]``.
Needs the speech corpus (``MEETBOT_SPEECH_DIR`` or ``../shared/data/speech``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parent.parent
BOT_ROLES = ("agent", "driver", "browser", "renderer", "chromium_other")


def emit(**fields: Any) -> None:
    """Print one JSON line with the load average attached."""
    fields.setdefault("load1", round(os.getloadavg()[0], 2))
    print(json.dumps({"bench": "soak", **fields}), flush=True)


def speech_dir() -> Path:
    configured = os.environ.get("MEETBOT_SPEECH_DIR")
    return Path(configured) if configured else REPO.parent / "shared" / "data" / "speech"


def english_clips(speech: Path) -> list[Path]:
    with (speech / "MANIFEST.tsv").open(encoding="utf-8") as manifest:
        rows = csv.DictReader(manifest, delimiter="\t")
        return [speech / row["file"] for row in rows if row["language"] == "en"]


def role(process: psutil.Process) -> str:
    """What one process of the demo's tree is (see the module docstring)."""
    command = " ".join(process.cmdline())
    name = process.name().lower()
    if "chrom" in name:
        if "--type=renderer" in command:
            return "renderer"
        return "browser" if "--type=" not in command else "chromium_other"
    if "node" in name or "run-driver" in command:
        return "driver"
    if " -m agent" in command or "agent.cli" in command or "/agent " in command:
        return "agent"
    if " serve" in command or "control_plane" in command:
        return "control_plane"
    return "demo"


def sample(root: psutil.Process) -> tuple[dict[str, float], dict[str, float], float]:
    """(USS per role, PSS per role, CPU seconds of the bot tree), memory in MiB."""
    uss: dict[str, float] = {}
    pss: dict[str, float] = {}
    cpu = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            kind = role(process)
            memory = process.memory_full_info()
            times = process.cpu_times()
        except psutil.Error:
            continue
        uss[kind] = uss.get(kind, 0.0) + memory.uss / 2**20
        pss[kind] = pss.get(kind, 0.0) + memory.pss / 2**20
        if kind in BOT_ROLES:
            cpu += times.user + times.system + times.children_user + times.children_system
    return uss, pss, cpu


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, MiB) points, in MiB per hour."""
    if len(points) < 3:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_m = sum(m for _, m in points) / len(points)
    var = sum((t - mean_t) ** 2 for t, _ in points)
    cov = sum((t - mean_t) * (m - mean_m) for t, m in points)
    return 3600 * cov / var if var else None


def _p50(values: Sequence[float]) -> float | None:
    ordered = sorted(values)
    return round(ordered[len(ordered) // 2], 3) if ordered else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="google_meet")
    parser.add_argument("--passes", type=int, default=2, help="times the corpus is spoken")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--warm-up", type=float, default=300.0, help="seconds not fitted")
    args = parser.parse_args(argv)

    clips = english_clips(speech_dir()) * args.passes
    with tempfile.TemporaryDirectory(prefix="meetbot-soak-") as work:
        summary_path = Path(work) / "summary.json"
        command = [sys.executable, "-m", "meetbot", "demo", "--platform", args.platform]
        for clip in clips:
            command += ["--audio", str(clip)]
        command += ["--json-summary", str(summary_path), "--data-dir", str(Path(work) / "data")]
        command += ["--timeout", str(len(clips) * 60)]
        demo = subprocess.Popen(  # noqa: S603 - our own CLI with fixed arguments
            command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        root = psutil.Process(demo.pid)
        began = time.monotonic()
        points: list[tuple[float, float]] = []
        cpu_points: list[tuple[float, float]] = []
        try:
            while demo.poll() is None:
                uss, pss, cpu = sample(root)
                elapsed = time.monotonic() - began
                bot_tree = sum(pss.get(kind, 0.0) for kind in BOT_ROLES)
                if pss.get("renderer"):  # the bot is in the meeting
                    points.append((elapsed, bot_tree))
                    cpu_points.append((elapsed, cpu))
                emit(
                    metric="sample",
                    t_s=round(elapsed),
                    uss_mb={k: round(v, 1) for k, v in sorted(uss.items())},
                    pss_mb={k: round(v, 1) for k, v in sorted(pss.items())},
                    bot_tree_pss_mb=round(bot_tree, 1),
                    cpu_s=round(cpu, 1),
                )
                time.sleep(args.every)
        finally:
            if demo.poll() is None:
                demo.terminate()
                demo.wait(60)
        fitted = [(t, m) for t, m in points if t >= args.warm_up]
        third = max(1, len(cpu_points) // 3)
        first, last = cpu_points[: third + 1], cpu_points[-third - 1 :]

        def rate(window: Sequence[tuple[float, float]]) -> float | None:
            if len(window) < 2 or window[-1][0] == window[0][0]:
                return None
            return round((window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0]), 3)

        summary: dict[str, Any] = (
            json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
        )
        turns = summary.get("turns", [])
        latencies = [t.get("latency_s") for t in turns]
        n = max(1, len(latencies) // 3)
        growth = slope_per_hour(fitted)
        emit(
            metric="soak_summary",
            platform=args.platform,
            wall_s=round(time.monotonic() - began),
            bot_tree_growth_mb_per_hour=None if growth is None else round(growth, 1),
            bot_tree_peak_pss_mb=round(max((m for _, m in points), default=0.0), 1),
            cpu_per_s_first_third=rate(first),
            cpu_per_s_last_third=rate(last),
            turns=len(turns),
            turns_without_final=sum(1 for x in latencies if x is None),
            latency_p50_first_third_s=_p50([x for x in latencies[:n] if x is not None]),
            latency_p50_last_third_s=_p50([x for x in latencies[-n:] if x is not None]),
            wer=summary.get("wer"),
            ok=summary.get("ok"),
            exit_code=demo.returncode,
        )
    return 0 if demo.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
