"""Soak benchmark: one bot through a long meeting — memory of each process, CPU, latency drift.

Runs ``meetbot demo --style soak --record`` (control plane, testmeeting, one bot transcribing
and recording) for ``--minutes`` of continuous talk from the speech corpus, with a guest
joining every three minutes (chat, hand, screen share) and leaving later
(:mod:`testmeeting.soak`). Every ``--every`` seconds it samples the demo's process tree, and
every second while a recording piece is being encoded and uploaded (the agent's log says when;
the encode holds the tree's peak) or the agent runs a child, and prints one JSON line per
sample (``regular``: false for those extra ones, which the growth and CPU fits leave out):

- ``pss_mb`` / ``uss_mb`` per role: ``agent`` (the bot's Python), ``driver`` (Playwright's node),
  ``browser`` (Chromium's main process), ``renderer`` (the meeting page), ``chromium_other``,
  ``agent_child`` (anything else the agent started: the ffmpeg encoding a piece with view frames; an
  audio-only piece is encoded in the agent), ``runtime`` (with ``--display``: the Xvfb and
  PulseAudio a bot VM runs, started here by the agent as on the VM, :mod:`agent.process.runtime`),
  ``control_plane`` and ``demo`` (the simulator and the demo's client);
- ``bot_tree_pss_mb``: the agent and every process under it but the runtime, the figure the
  memory goal counts (the runtime is reported beside it);
- ``cpu_s``: CPU seconds of the bot tree so far, and ``cpu_s_by_role`` the same per role (of the
  processes alive at the sample), to tell which part's CPU drifts in a long meeting.

At the end it prints ``soak_summary``: the bot tree's growth in MB per hour after
``--warm-up`` seconds (least squares), its peak; CPU per wall second and end-of-turn → final
latency p50 per ``--window`` seconds of the meeting (by the turn's start); the tree's min,
median and max after the warm-up over every sample; turns spoken, turns without a final and
segments stored; the recording's length (all its pieces) against the meeting's (active →
stopping). With ``--samples FILE`` the samples and the summary are
also written as JSON lines, which ``python -m bench.soak_plot FILE PNG`` draws. Nothing is
asserted; issue 19 states the goals (≤ 50 MB per hour of new audio after a 5-minute
warm-up, < 900 MB in all, the last window's latency and CPU equal to the first's, every turn
transcribed, the recording as long as the meeting).

Usage: ``python -m bench.soak [--minutes 20] [--every 60] [--samples soak.jsonl] [--language en]
[--display]``. ``--display`` runs the bot as on its VM, headful on its own Xvfb and PulseAudio
(``python -m agent --display`` as the local launcher's agent command).
Plays the speech corpus (``MEETBOT_SPEECH_DIR`` or ``../shared/data/speech``), else the speech
packaged with testmeeting; needs ffprobe.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import psutil

from meetbot.demo.scenario import FIRST_TURN_AT_S, MEETING_IDS, PASSCODES
from testmeeting.packaged_speech import corpus_or_packaged
from testmeeting.soak import corpus_clips, soak_scenario

REPO = Path(__file__).resolve().parent.parent
BOT_ROLES = ("agent", "driver", "browser", "renderer", "chromium_other", "agent_child")
RUNTIME_NAMES = frozenset({"xvfb", "pulseaudio"})
"""The bot VM's display and sound servers (``--display``: the agent starts them here)."""
ENCODE_POLL_S = 1.0
"""Between samples, how often to look for a recording piece's encode (then sample each second:
it lasts some seconds every ten minutes and holds the tree's peak)."""


class Output:
    """Prints JSON lines (load average attached) and copies them to ``--samples``."""

    def __init__(self, copy: TextIO | None) -> None:
        self._copy = copy

    def emit(self, **fields: Any) -> None:
        fields.setdefault("load1", round(os.getloadavg()[0], 2))
        line = json.dumps({"bench": "soak", **fields})
        print(line, flush=True)
        if self._copy is not None:
            self._copy.write(line + "\n")
            self._copy.flush()


def speech_dir() -> Path:
    configured = os.environ.get("MEETBOT_SPEECH_DIR")
    corpus = Path(configured) if configured else REPO.parent / "shared" / "data" / "speech"
    return corpus_or_packaged(corpus)  # the clips packaged with testmeeting when no corpus


def role(process: psutil.Process, agents: Collection[int] = ()) -> str:
    """What one process of the demo's tree is (see the module docstring).

    ``agents`` are the agent processes' pids: any other process under one of them that is not
    Playwright's driver or Chromium is an ``agent_child``.
    """
    command = " ".join(process.cmdline())
    name = process.name().lower()
    if name in RUNTIME_NAMES:
        return "runtime"
    if "chrom" in name:
        if "--type=renderer" in command:
            return "renderer"
        return "browser" if "--type=" not in command else "chromium_other"
    if "node" in name or "run-driver" in command:
        return "driver"
    if " -m agent" in command or "agent.cli" in command or "/agent " in command:
        return "agent"
    if agents and any(parent.pid in agents for parent in process.parents()):
        return "agent_child"
    if " serve" in command or "control_plane" in command:
        return "control_plane"
    return "demo"


def roles(root: psutil.Process) -> list[tuple[psutil.Process, str]]:
    """Each live process of ``root``'s tree with its :func:`role` (a vanished one left out)."""
    tree = [root, *root.children(recursive=True)]
    agents = set()
    for process in tree:
        with contextlib.suppress(psutil.Error):
            if role(process) == "agent":
                agents.add(process.pid)
    out = []
    for process in tree:
        with contextlib.suppress(psutil.Error):
            out.append((process, role(process, agents)))
    return out


class PieceLog:
    """Whether a recording piece is between its end and its upload, from the agents' logs.

    An audio-only piece is encoded inside the agent (no child to see): the agent logs
    ``recording piece ended`` when it cuts one and ``recording uploaded`` (or ``recording
    failed``) when it is done. The logs under ``data_dir/bots/*/agent.log`` are read
    incrementally, so a poll costs the lines written since the last one.

    Args:
        data_dir: The demo's data folder.
    """

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._offsets: dict[Path, int] = {}
        self._open = 0

    def busy(self) -> bool:
        """Whether a piece ended and is not uploaded yet."""
        for log in sorted(self._data_dir.glob("bots/*/agent.log")):
            with contextlib.suppress(OSError), log.open("rb") as handle:
                handle.seek(self._offsets.get(log, 0))
                chunk = handle.read()
                complete = chunk[: chunk.rfind(b"\n") + 1]  # a line being written waits
                self._offsets[log] = self._offsets.get(log, 0) + len(complete)
                self._open += complete.count(b"recording piece ended")
                self._open -= complete.count(b"recording uploaded")
                self._open -= complete.count(b"recording failed")
        self._open = max(self._open, 0)
        return self._open > 0


def agent_children(root: psutil.Process) -> bool:
    """Whether an ``agent_child`` (a recording piece's ffmpeg) runs now; cheap (no memory read)."""
    try:
        return any(kind == "agent_child" for _, kind in roles(root))
    except psutil.Error:
        return False


def sample(
    root: psutil.Process,
) -> tuple[dict[str, float], dict[str, float], float, dict[str, float]]:
    """(USS per role, PSS per role, CPU seconds of the bot tree, CPU seconds per role).

    Memory in MiB.
    """
    uss: dict[str, float] = {}
    pss: dict[str, float] = {}
    by_role: dict[str, float] = {}
    cpu = 0.0
    for process, kind in roles(root):
        try:
            memory = process.memory_full_info()
            times = process.cpu_times()
        except psutil.Error:
            continue
        uss[kind] = uss.get(kind, 0.0) + memory.uss / 2**20
        pss[kind] = pss.get(kind, 0.0) + memory.pss / 2**20
        spent = times.user + times.system + times.children_user + times.children_system
        by_role[kind] = by_role.get(kind, 0.0) + spent
        if kind in BOT_ROLES:
            cpu += spent
    return uss, pss, cpu, by_role


def spread(ordered: Sequence[float]) -> dict[str, float] | None:
    """min / median / max of sorted MiB figures, and how many there were."""
    if not ordered:
        return None
    middle = ordered[len(ordered) // 2]
    return {
        "min": round(ordered[0], 1),
        "median": round(middle, 1),
        "max": round(ordered[-1], 1),
        "samples": len(ordered),
    }


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


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def meeting_seconds(summary: dict[str, Any]) -> tuple[float | None, float | None]:
    """(epoch the bot became active, seconds it stayed active) from the demo's statuses."""
    statuses = summary.get("statuses", [])
    active = next((s["at"] for s in statuses if s["status"] == "active"), None)
    stopping = next((s["at"] for s in statuses if s["status"] == "stopping"), None)
    if active is None or stopping is None:
        return (None if active is None else _epoch(active)), None
    return _epoch(active), _epoch(stopping) - _epoch(active)


def _duration(path: Path) -> float | None:
    probe = subprocess.run(  # noqa: S603 - fixed ffprobe arguments
        [  # noqa: S607 - ffprobe from PATH, as the recorder's ffmpeg
            "ffprobe",
            "-v",
            "error",
            "-show_entries",
            "format=duration",
            "-of",
            "csv=p=0",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return float(probe.stdout.strip())
    except ValueError:
        return None


def recording_files(data_dir: Path) -> list[Path]:
    """The stored recordings under ``data_dir`` (the control plane's ``recordings`` folders)."""
    return sorted(
        p
        for p in data_dir.rglob("*")
        if p.is_file()
        and p.parent.name == "recordings"
        and p.suffix in (".ogg", ".webm", ".mp3", ".m4a", ".mp4")
    )


def recording_seconds(data_dir: Path) -> tuple[float | None, int]:
    """(Total length in seconds of the stored recordings (ffprobe), how many files).

    A long meeting's recording comes in pieces (``MEETBOT_AGENT_RECORDING_PIECE_SECONDS``,
    docs/api.md 2.6): their lengths add up to the recording's.
    """
    lengths = [d for d in map(_duration, recording_files(data_dir)) if d is not None]
    return (round(sum(lengths), 1) if lengths else None), len(lengths)


def windows(
    turn_starts: Sequence[float],
    latencies: Sequence[float | None],
    cpu_points: Sequence[tuple[float, float]],
    offset: float,
    every: float,
) -> list[dict[str, Any]]:
    """Latency p50 and CPU per wall second in each ``every`` seconds of the meeting.

    ``turn_starts`` are scenario seconds (0 = the bot's admission); ``cpu_points`` are
    (seconds since the bench began, CPU seconds); ``offset`` is the admission in bench seconds.
    """
    out: list[dict[str, Any]] = []
    end = max(turn_starts, default=0.0)
    start = 0.0
    while start <= end:
        stop = start + every
        lat = [
            x
            for t, x in zip(turn_starts, latencies, strict=True)
            if start <= t < stop and x is not None
        ]
        missing = sum(
            1
            for t, x in zip(turn_starts, latencies, strict=True)
            if start <= t < stop and x is None
        )
        cpu = [(t, c) for t, c in cpu_points if start <= t - offset < stop]
        rate = (
            round((cpu[-1][1] - cpu[0][1]) / (cpu[-1][0] - cpu[0][0]), 3)
            if len(cpu) >= 2 and cpu[-1][0] > cpu[0][0]
            else None
        )
        out.append(
            {
                "from_s": start,
                "to_s": stop,
                "turns": len(lat) + missing,
                "without_final": missing,
                "latency_p50_s": _p50(lat),
                "cpu_per_s": rate,
            }
        )
        start = stop
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="google_meet")
    parser.add_argument("--minutes", type=float, default=20.0, help="length of the talk")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--warm-up", type=float, default=300.0, help="seconds not fitted")
    parser.add_argument("--window", type=float, default=600.0, help="seconds per window")
    parser.add_argument("--samples", type=Path, help="also write the JSON lines here")
    parser.add_argument(
        "--language", help="the bot's language (e.g. en: tiny.en alone, no detection model)"
    )
    parser.add_argument(
        "--display",
        action="store_true",
        help="run the bot as on its VM: headful on an Xvfb and a PulseAudio of its own",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep the demo's folder (logs, recording, summary.json with every turn) here",
    )
    args = parser.parse_args(argv)

    seconds = args.minutes * 60
    speech = speech_dir()
    _, turns = soak_scenario(
        corpus_clips(speech),
        seconds,
        platform=args.platform,
        meeting_id=MEETING_IDS[args.platform],
        passcode=PASSCODES.get(args.platform),
        lead_in_s=FIRST_TURN_AT_S,
    )
    copy = args.samples.open("w", encoding="utf-8") if args.samples is not None else None
    out = Output(copy)
    with tempfile.TemporaryDirectory(prefix="meetbot-soak-") as work:
        data_dir = args.data_dir.resolve() if args.data_dir else Path(work) / "data"
        # Kept with the data when asked: each turn's transcript and speakers, for a post-mortem
        # of a turn without a final.
        summary_path = (data_dir if args.data_dir else Path(work)) / "summary.json"
        command = [sys.executable, "-m", "meetbot", "demo", "--platform", args.platform]
        command += ["--style", "soak", "--scenario-seconds", str(seconds), "--record"]
        command += ["--json-summary", str(summary_path), "--data-dir", str(data_dir)]
        command += ["--timeout", str(seconds + 600)]
        if args.language:
            command += ["--language", args.language]
        env = {**os.environ, "MEETBOT_SPEECH_DIR": str(speech)}
        if args.display:
            env["MEETBOT_LOCAL_AGENT_COMMAND"] = f"{sys.executable},-m,agent,--display"
        demo = subprocess.Popen(  # noqa: S603 - our own CLI with fixed arguments
            command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        root = psutil.Process(demo.pid)
        began = time.monotonic()
        began_epoch = time.time()
        points: list[tuple[float, float]] = []
        cpu_points: list[tuple[float, float]] = []
        in_meeting: list[tuple[float, float]] = []  # every sample's tree, encode ones too
        runtime: list[tuple[float, float]] = []
        next_at = began
        piece_log = PieceLog(data_dir)
        try:
            while demo.poll() is None:
                now = time.monotonic()
                regular = now >= next_at
                if not regular and not (piece_log.busy() or agent_children(root)):
                    time.sleep(min(ENCODE_POLL_S, next_at - now))
                    continue
                uss, pss, cpu, cpu_by_role = sample(root)
                elapsed = time.monotonic() - began
                bot_tree = sum(pss.get(kind, 0.0) for kind in BOT_ROLES)
                if pss.get("renderer"):  # the bot is in the meeting
                    in_meeting.append((elapsed, bot_tree))
                    if "runtime" in pss:
                        runtime.append((elapsed, pss["runtime"]))
                    if regular:  # the fits take evenly spaced samples only
                        points.append((elapsed, bot_tree))
                        cpu_points.append((elapsed, cpu))
                if regular:
                    next_at += args.every
                out.emit(
                    metric="sample",
                    regular=regular,
                    t_s=round(elapsed),
                    uss_mb={k: round(v, 1) for k, v in sorted(uss.items())},
                    pss_mb={k: round(v, 1) for k, v in sorted(pss.items())},
                    bot_tree_pss_mb=round(bot_tree, 1),
                    cpu_s=round(cpu, 1),
                    cpu_s_by_role={k: round(v, 1) for k, v in sorted(cpu_by_role.items())},
                )
                time.sleep(ENCODE_POLL_S)
        finally:
            if demo.poll() is None:
                demo.terminate()
                demo.wait(60)
        summary: dict[str, Any] = (
            json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
        )
        active_at, meeting_s = meeting_seconds(summary)
        said = summary.get("turns", [])
        latencies = [t.get("latency_s") for t in said]
        # Each reported turn's own start: the demo joins a speaker's clips said back to back
        # into one turn, so the scenario's clips cannot be paired with its turns by position.
        starts = [t["started_at"] - (active_at or began_epoch) for t in said]
        # Samples are taken from the bench's start: the growth is fitted from the admission on.
        offset = (active_at - began_epoch) if active_at is not None else 0.0
        fitted = [(t, m) for t, m in points if t - offset >= args.warm_up]
        growth = slope_per_hour(fitted)
        settled = sorted(m for t, m in in_meeting if t - offset >= args.warm_up)
        with_runtime = sorted(m for t, m in runtime if t - offset >= args.warm_up)
        recorded_s, pieces = recording_seconds(data_dir)
        out.emit(
            metric="soak_summary",
            platform=args.platform,
            language=args.language,
            minutes=args.minutes,
            wall_s=round(time.monotonic() - began),
            active_from_s=None if active_at is None else round(active_at - began_epoch, 1),
            bot_tree_growth_mb_per_hour=None if growth is None else round(growth, 1),
            bot_tree_peak_pss_mb=round(max((m for _, m in in_meeting), default=0.0), 1),
            bot_tree_after_warm_up_mb=spread(settled),
            display=args.display,
            runtime_after_warm_up_mb=spread(with_runtime),
            windows=windows(starts, latencies, cpu_points, offset, args.window),
            turns_spoken=len(turns),
            turns_reported=len(said),
            turns_without_final=sum(1 for x in latencies if x is None),
            stored_segments=summary.get("stored_segments"),
            wer=summary.get("wer"),
            meeting_s=None if meeting_s is None else round(meeting_s, 1),
            recording_s=recorded_s,
            recording_pieces=pieces,
            final_status=summary.get("final_status"),
            final_reason=summary.get("final_reason"),
            ok=summary.get("ok"),
            exit_code=demo.returncode,
        )
    if copy is not None:
        copy.close()
    return 0 if demo.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
