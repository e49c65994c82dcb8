"""Draw a soak run (``bench.soak --samples FILE``) as a PNG: memory per process, CPU, load.

Top: PSS of each part of the bot tree (agent Python, node driver, Chromium's browser process,
the meeting's renderer, other Chromium processes, the agent's other children such as the ffmpeg
encoding a recording piece; with ``--display`` the VM runtime's Xvfb and PulseAudio, outside the
total) and the tree's total, in MiB, against the minutes since the bench began, with issue 19's
900 MB goal (every sample, the extra ones during encodes too). Bottom:
the bot tree's CPU (cores busy between two evenly spaced samples) and, on the right axis, the
machine's 1-minute load average.

Usage: ``python -m bench.soak_plot soak.jsonl docs/soak-20min.png``. Needs matplotlib
(``pip install meetbot[bench]``).
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

PARTS = ("agent", "driver", "browser", "renderer", "chromium_other", "agent_child", "runtime")
GOAL_MB = 900


def read(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(samples, summary or None) from a ``--samples`` file."""
    samples: list[dict[str, Any]] = []
    summary: dict[str, Any] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("metric") == "sample":
            samples.append(row)
        elif row.get("metric") == "soak_summary":
            summary = row
    return samples, summary


def draw(samples: Sequence[dict[str, Any]], summary: dict[str, Any] | None, png: Path) -> None:
    """Write the two-panel figure of the module docstring to ``png``."""
    minutes = [s["t_s"] / 60 for s in samples]
    fig, (mem, cpu) = plt.subplots(
        2, 1, figsize=(10, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    for part in PARTS:
        values = [s["pss_mb"].get(part, 0.0) for s in samples]
        if any(values):  # the runtime only with --display
            mem.plot(minutes, values, label=part)
    mem.plot(
        minutes, [s["bot_tree_pss_mb"] for s in samples], label="bot tree", color="k", linewidth=2
    )
    mem.axhline(GOAL_MB, color="r", linestyle="--", linewidth=1, label="goal 900 MB")
    if summary is not None and summary.get("active_from_s") is not None:
        for axis in (mem, cpu):
            axis.axvline(summary["active_from_s"] / 60, color="grey", linestyle=":", linewidth=1)
    mem.set_ylabel("PSS (MiB)")
    mem.legend(loc="upper left", fontsize=8, ncol=3)
    title = "meetbot soak: one bot, continuous talk, guests joining and leaving"
    if summary is not None:
        title += f" ({summary.get('minutes')} min, peak {summary.get('bot_tree_peak_pss_mb')} MB)"
    mem.set_title(title, fontsize=10)
    # Between evenly spaced samples only: the extra ones a second apart during a piece's
    # encode would draw the rounding of ``cpu_s`` as noise.
    regular = [s for s in samples if s.get("regular", True)]
    rates = [
        (b["t_s"] / 60, (b["cpu_s"] - a["cpu_s"]) / (b["t_s"] - a["t_s"]))
        for a, b in itertools.pairwise(regular)
        if b["t_s"] > a["t_s"]
    ]
    cpu.plot([t for t, _ in rates], [r for _, r in rates], label="bot tree CPU (cores)")
    cpu.set_xlabel("minutes since the bench began (dotted: the bot admitted)")
    cpu.set_ylabel("bot tree CPU (cores)")
    load = cpu.twinx()
    load.plot(
        [s["t_s"] / 60 for s in regular],
        [s["load1"] for s in regular],
        color="tab:orange",
        alpha=0.6,
    )
    load.set_ylabel("machine load1 (2 cores)", color="tab:orange")
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", type=Path)
    parser.add_argument("png", type=Path)
    args = parser.parse_args(argv)
    samples, summary = read(args.samples)
    draw(samples, summary, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
