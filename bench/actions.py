"""Action detection benchmark: precision, recall and F1 per type, latency, throughput.

Detection goes through the control plane's own path: :func:`control_plane.intelligence.
detection.detect_actions` over one :class:`~control_plane.intelligence.chat.ChatModel`, the
embedded default (``--provider embedded``: :class:`EmbeddedChatModel`, a packaged GGUF
in-process with ``--parallel`` slots and ``--threads``) or any OpenAI-compatible server
(``--provider openai``).

The labelled set is ``bench/data/action_windows.yaml`` (see the file's header): windows
written by hand in the style of realtime transcripts (``origin: written``) and windows of
meetbot's own realtime transcripts (``bench/action_transcripts.py``; ``origin`` names the
recording), each with its expected actions, labelled by hand. Every window goes to the
detector once, with the previous window of the same meeting as context, exactly as the
control plane's detection worker sends them (``control_plane.intelligence.worker``), with the
built-in instructions a bot without its own prompt version gets (``SYSTEM_PROMPT``; figures
before 2026-11-29 evening were measured without them). Figures
are given overall and, with the suffix ``_written`` / ``_transcript``, per origin.

A predicted action matches an unmatched labelled one of the same window when the type is the
same, the texts are alike (content-word overlap ≥ 0.5 of the shorter, or character similarity
≥ 0.6 after normalising) and, when the label names an owner, the prediction names the same
person. Precision = matched / predicted, recall = matched / labelled, F1 their harmonic mean,
per type and overall. Windows whose answer was invalid (``windows_invalid_answer``) or whose
call failed otherwise, a timeout included (``windows_failed``), count as predicting nothing;
both are counted and printed. Answer items that did not become actions (the checks of
:mod:`control_plane.intelligence.action_checks`) are counted by reason
(``items_dropped_<reason>``) and listed per window in a ``--verbose`` log (``dropped``).

``--throughput 1,3,5``: N live meetings at once through ONE model (the replica's).
Meeting k replays the windows of the k-th meeting of the set at a meeting's pace: each line
lasts as long as its words take to say (2.5 words a second, 1.5 s at least, 0.4 s between
lines), a window is handed over ``--pause`` seconds after its last line (the pause that
closes it), a meeting's windows go one at a time (the next waits for the previous answer),
and the meetings start ``--stagger`` seconds apart. Latency is from the window's last line
to its actions (pause included); a replica keeps up with N meetings when the p95 of that
is ≤ ``--goal`` seconds and the answers do not fall further behind as the meeting goes on.

Prints one JSON line per figure (DESIGN.md §9). CPU is this process's user+system seconds per
window: for ``embedded`` that is the model; for ``openai`` only the client (the server's CPU is
the server's, unless it runs in this process: ``--serve-local MODEL`` starts xllamacpp's
OpenAI-compatible HTTP server in this process with ``--parallel`` slots and benchmarks the
``openai`` provider against it: what an operator's own llama.cpp-style server gives with
the same prompt).

Usage::

    nice -n 10 python -m bench.actions --model qwen2.5-coder-0.5b-instruct   # embedded
    nice -n 10 python -m bench.actions --model /path/to/model.gguf --threads 2
    nice -n 10 python -m bench.actions --parallel 5 --throughput 1,3,5
    python -m bench.actions --provider openai --base-url http://127.0.0.1:8080/v1 --model NAME
    python -m bench.actions --score run.log   # figures of a --verbose log, even a partial one
    nice -n 10 python -m bench.actions --serve-local qwen2.5-coder-0.5b-instruct --parallel 5 \
        --throughput 1,3,5

Every figure line carries the machine's 1-minute load average at the start and end of its run
(``load1_start``, ``load1_end``): on a shared machine the latencies mean little without it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import yaml

from agent.contracts.link import ActionType
from bench.stats import free_port, percentile
from control_plane.action_prompts.service import SYSTEM_PROMPT
from control_plane.intelligence.action_checks import DROP_REASONS, ItemDrop
from control_plane.intelligence.chat import ChatAnswerInvalid, ChatError, ChatModel
from control_plane.intelligence.dedupe import normalise_text
from control_plane.intelligence.detection import (
    DetectedAction,
    DetectionRequest,
    WindowLine,
    detect_actions,
)
from control_plane.intelligence.embedded_chat import EmbeddedChatModel
from control_plane.intelligence.models import resolve_model
from control_plane.intelligence.openai_chat import OpenAIChatModel

DATA = Path(__file__).parent / "data" / "action_windows.yaml"
MODELS_DIR = Path("data/models").resolve()
_STOP = frozenset(
    "a an the to of for and or on in at by with is are be we i it that this let's lets "
    "our us you will can do does".split()
)
WORDS_PER_SECOND = 2.5
LINE_GAP_S = 0.4


@dataclass(frozen=True, slots=True)
class Label:
    """One expected action."""

    action_type: ActionType
    text: str
    owner: str | None
    segment_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Case:
    """One window with its context and labels.

    Attributes:
        window_id: ``{meeting}-w{n}``.
        request: What the detector is sent (the previous window as context).
        labels: The expected actions.
        meeting: The meeting's id.
        origin: ``written`` or ``transcript``.
        end_s: Seconds from the meeting's start at which the window's last line ends.
    """

    window_id: str
    request: DetectionRequest
    labels: tuple[Label, ...]
    meeting: str = ""
    origin: str = "written"
    end_s: float = 0.0


def origin_kind(origin: str | None) -> str:
    """``written`` for hand-written windows, ``transcript`` for ours (any recording named)."""
    return "written" if origin in (None, "written") else "transcript"


def load_cases(path: Path = DATA) -> list[Case]:
    """The labelled windows of ``path`` as detector requests (previous window as context)."""
    data = yaml.safe_load(path.read_text())
    cases: list[Case] = []
    for meeting in data["meetings"]:
        previous: tuple[WindowLine, ...] = ()
        origin = origin_kind(meeting.get("origin"))
        t = 0.0
        for w, window in enumerate(meeting["windows"], start=1):
            lines: list[WindowLine] = []
            for n, (speaker, text) in enumerate(window["lines"], start=1):
                length = max(1.5, len(text.split()) / WORDS_PER_SECOND)
                lines.append(
                    WindowLine(f"{meeting['id']}-w{w}-s{n}", speaker, None, t, t + length, text)
                )
                t += length + LINE_GAP_S
            labels = tuple(
                Label(
                    ActionType(label["type"]),
                    label["text"],
                    label.get("owner"),
                    tuple(lines[i - 1].segment_id for i in label["lines"]),
                )
                for label in window["labels"]
            )
            # The instructions a bot without its own prompt version gets (the worker's).
            request = DetectionRequest(
                lines=tuple(lines), context=previous, instructions=SYSTEM_PROMPT.instructions
            )
            cases.append(
                Case(
                    f"{meeting['id']}-w{w}",
                    request,
                    labels,
                    meeting=meeting["id"],
                    origin=origin,
                    end_s=lines[-1].end,
                )
            )
            previous = tuple(lines)
    return cases


def _words(text: str) -> set[str]:
    return {w for w in normalise_text(text).split() if w not in _STOP}


def texts_match(predicted: str, label: str) -> bool:
    """Whether two action texts say the same thing (see the module docstring)."""
    a, b = _words(predicted), _words(label)
    if a and b and len(a & b) / min(len(a), len(b)) >= 0.5:
        return True
    return SequenceMatcher(None, normalise_text(predicted), normalise_text(label)).ratio() >= 0.6


def owners_match(predicted: str | None, label: str | None) -> bool:
    """A labelled owner must be named (first names compared, case-insensitive)."""
    if label is None:
        return True
    if predicted is None:
        return False
    return normalise_text(label).split()[0] in normalise_text(predicted).split()


def match(predicted: list[DetectedAction], labels: tuple[Label, ...]) -> list[bool]:
    """For each prediction, whether it matched a distinct label (greedy, in order)."""
    free = list(labels)
    out: list[bool] = []
    for action in predicted:
        hit = next(
            (
                label
                for label in free
                if label.action_type == action.action_type
                and texts_match(action.text, label.text)
                and owners_match(action.owner, label.owner)
            ),
            None,
        )
        if hit is not None:
            free.remove(hit)
        out.append(hit is not None)
    return out


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load1() -> float:
    """The machine's 1-minute load average."""
    return round(os.getloadavg()[0], 2)


@dataclass(slots=True)
class Tally:
    """Predicted, labelled and matched actions per type, overall and per origin."""

    predicted: Counter[str] = field(default_factory=Counter)
    labelled: Counter[str] = field(default_factory=Counter)
    matched: Counter[str] = field(default_factory=Counter)

    def add(self, case: Case, actions: list[DetectedAction]) -> list[bool]:
        """Count one window's answer; returns which predictions matched a label."""
        hits = match(actions, case.labels)
        for action, hit in zip(actions, hits, strict=True):
            for key in (action.action_type.value, f"overall_{case.origin}"):
                self.predicted[key] += 1
                self.matched[key] += hit
        for label in case.labels:
            self.labelled[label.action_type.value] += 1
            self.labelled[f"overall_{case.origin}"] += 1
        return hits

    def figures(self) -> dict[str, Any]:
        """Precision, recall, F1 and counts per type, overall and per origin."""
        figures: dict[str, Any] = {}
        kinds = [*(t.value for t in ActionType), "overall", "overall_written", "overall_transcript"]
        types = [t.value for t in ActionType]
        for kind in kinds:
            if kind == "overall":
                p = sum(self.predicted[t] for t in types)
                lab = sum(self.labelled[t] for t in types)
                m = sum(self.matched[t] for t in types)
            else:
                p, lab, m = self.predicted[kind], self.labelled[kind], self.matched[kind]
            precision = m / p if p else None
            recall = m / lab if lab else None
            figures[f"precision_{kind}"] = round(precision, 3) if precision is not None else None
            figures[f"recall_{kind}"] = round(recall, 3) if recall is not None else None
            figures[f"f1_{kind}"] = (
                round(2 * m / (p + lab), 3) if p + lab else None  # = 2PR/(P+R)
            )
            figures[f"predicted_{kind}"] = p
            figures[f"labelled_{kind}"] = lab
            figures[f"matched_{kind}"] = m
        return figures


@dataclass(slots=True)
class Outcome:
    """One window's answer: its actions, or why there are none."""

    actions: list[DetectedAction]
    tokens: int | None = None
    drops: tuple[ItemDrop, ...] = ()
    invalid: bool = False
    failed: bool = False
    error: str = ""


async def detect_once(chat: ChatModel, case: Case, max_tokens: int) -> Outcome:
    """One call; an invalid answer or any failure is an outcome with no actions."""
    try:
        detection = await detect_actions(chat, case.request, max_tokens=max_tokens)
    except ChatAnswerInvalid as exc:
        return Outcome([], invalid=True, error=str(exc)[:200])
    except ChatError as exc:
        return Outcome([], failed=True, error=f"{type(exc).__name__}: {str(exc)[:200]}")
    return Outcome(list(detection.actions), detection.total_tokens, detection.drops)


def _log_window(case: Case, outcome: Outcome, hits: list[bool], seconds: float, cpu: float) -> None:
    row: dict[str, Any] = {
        "window": case.window_id,
        "seconds": round(seconds, 2),
        "cpu_s": round(cpu, 2),
        "predicted": [
            [a.action_type.value, a.text, a.owner, a.due, hit]
            for a, hit in zip(outcome.actions, hits, strict=True)
        ],
        "labels": [[x.action_type.value, x.text, x.owner] for x in case.labels],
        "dropped": [[drop.reason, drop.text] for drop in outcome.drops],
    }
    if outcome.invalid or outcome.failed:
        row["error"] = outcome.error
        row["invalid"] = outcome.invalid
    print(json.dumps(row), flush=True)


async def run(chat: ChatModel, cases: list[Case], args: argparse.Namespace) -> dict[str, Any]:
    """Every case through ``chat``, one at a time; returns the figures."""
    tally = Tally()
    latencies: list[float] = []
    cpu: list[float] = []
    tokens: list[int] = []
    invalid = failed = 0
    dropped: Counter[str] = Counter()
    for case in cases:
        wall, cpu0 = time.perf_counter(), _cpu()
        outcome = await detect_once(chat, case, args.max_tokens)
        latencies.append(time.perf_counter() - wall)
        cpu.append(_cpu() - cpu0)
        invalid += outcome.invalid
        failed += outcome.failed
        dropped.update(drop.reason for drop in outcome.drops)
        if outcome.tokens is not None:
            tokens.append(outcome.tokens)
        hits = tally.add(case, outcome.actions)
        if args.verbose:
            _log_window(case, outcome, hits, latencies[-1], cpu[-1])
    return figures_of(tally, latencies, cpu, tokens) | {
        "windows": len(cases),
        "windows_written": sum(c.origin == "written" for c in cases),
        "windows_transcript": sum(c.origin == "transcript" for c in cases),
        "windows_invalid_answer": invalid,
        "windows_failed": failed,
        **dropped_figures(dropped),
    }


def dropped_figures(dropped: Counter[str]) -> dict[str, int]:
    """``items_dropped`` and ``items_dropped_<reason>`` for every reason (0 when none)."""
    return {"items_dropped": sum(dropped.values())} | {
        f"items_dropped_{reason}": dropped[reason] for reason in DROP_REASONS
    }


def figures_of(
    tally: Tally, latencies: list[float], cpu: list[float], tokens: list[int]
) -> dict[str, Any]:
    """Quality figures of ``tally`` with latency, CPU and token figures per window."""
    figures = tally.figures()
    if latencies:
        figures["latency_p50_s"] = round(percentile(latencies, 0.5), 2)
        figures["latency_p95_s"] = round(percentile(latencies, 0.95), 2)
        figures["latency_max_s"] = round(max(latencies), 2)
    if cpu:
        figures["cpu_s_per_window_p50"] = round(percentile(cpu, 0.5), 2)
        figures["cpu_s_per_window_mean"] = round(sum(cpu) / len(cpu), 2)
    figures["tokens_per_window_mean"] = round(sum(tokens) / len(tokens)) if tokens else None
    return figures


def score_log(path: Path) -> dict[str, Any]:
    """Figures from a ``--verbose`` log (also of a run stopped early: its windows only).

    Re-matches each window's logged predictions against the labels of the data file.
    """
    cases = {case.window_id: case for case in load_cases()}
    tally = Tally()
    latencies: list[float] = []
    cpu: list[float] = []
    invalid = failed = 0
    dropped: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        if "predicted" not in row:
            continue
        if "error" in row:
            if row.get("invalid", True):
                invalid += 1
            else:
                failed += 1
        case = cases[row["window"]]
        actions = [
            DetectedAction(
                action_type=ActionType(kind),
                text=text,
                owner=owner,
                due=due,
                segment_ids=("logged",),
            )
            for kind, text, owner, due, _ in row["predicted"]
        ]
        tally.add(case, actions)
        dropped.update(reason for reason, _ in row.get("dropped", []))
        latencies.append(row["seconds"])
        if "cpu_s" in row:
            cpu.append(row["cpu_s"])
    return figures_of(tally, latencies, cpu, []) | {
        "windows": len(latencies),
        "windows_invalid_answer": invalid,
        "windows_failed": failed,
        **dropped_figures(dropped),  # logs before s43 did not list their drops: 0
    }


async def live_meeting(
    chat: ChatModel,
    cases: list[Case],
    start: float,
    args: argparse.Namespace,
    latencies: list[tuple[int, float]],
    outcomes: list[Outcome],
) -> None:
    """One meeting's windows at a meeting's pace (see the module docstring)."""
    for n, case in enumerate(cases):
        ready = start + case.end_s + args.pause
        delay = ready - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        outcome = await detect_once(chat, case, args.max_tokens)
        latencies.append((n, time.monotonic() - (start + case.end_s)))
        outcomes.append(outcome)
        if args.verbose:  # a run stopped early still shows what it measured
            row = {"window": case.window_id, "last_line_to_actions_s": round(latencies[-1][1], 2)}
            print(json.dumps(row | {"error": outcome.error} if outcome.error else row), flush=True)


async def throughput(
    chat: ChatModel, cases: list[Case], meetings: int, args: argparse.Namespace
) -> dict[str, Any]:
    """``meetings`` live meetings at once through ``chat``; their latency figures."""
    by_meeting: dict[str, list[Case]] = {}
    for case in cases:
        by_meeting.setdefault(case.meeting, []).append(case)
    chosen = list(by_meeting.values())[:meetings]
    if len(chosen) < meetings:
        raise SystemExit(f"only {len(chosen)} meetings in the set, {meetings} asked")
    chosen = [m[: args.windows_per_meeting] for m in chosen]
    latencies: list[tuple[int, float]] = []
    outcomes: list[Outcome] = []
    began = time.monotonic()
    load_start = load1()
    await asyncio.gather(
        *(
            live_meeting(chat, m, began + k * args.stagger, args, latencies, outcomes)
            for k, m in enumerate(chosen)
        )
    )
    values = [latency for _, latency in latencies]
    half = max(1, args.windows_per_meeting // 2)
    early = [latency for n, latency in latencies if n < half]
    late = [latency for n, latency in latencies if n >= half]
    p95 = percentile(values, 0.95)
    growth = (sum(late) / len(late) - sum(early) / len(early)) if late and early else 0.0
    keeps_up = p95 <= args.goal and growth <= args.goal / 2
    return {
        "meetings": meetings,
        "windows": len(values),
        "pause_s": args.pause,
        "last_line_to_actions_p50_s": round(percentile(values, 0.5), 2),
        "last_line_to_actions_p95_s": round(p95, 2),
        "last_line_to_actions_max_s": round(max(values), 2),
        "late_minus_early_mean_s": round(growth, 2),
        "keeps_up": keeps_up,
        "windows_invalid_answer": sum(o.invalid for o in outcomes),
        "windows_failed": sum(o.failed for o in outcomes),
        "wall_s": round(time.monotonic() - began, 1),
        "load1_start": load_start,
        "load1_end": load1(),
    }


@contextmanager
def serve_local(args: argparse.Namespace) -> Iterator[str]:
    """xllamacpp's OpenAI-compatible HTTP server in this process; yields its base URL."""
    import xllamacpp  # type: ignore[import-untyped]  # ships no type hints

    path = resolve_model(args.serve_local, MODELS_DIR)
    port = free_port()
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = 4096 * args.parallel
    params.n_predict = args.max_tokens
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.sampling.temp = 0
    params.sampling.top_k = 1
    params.warmup = False
    params.verbosity = -1
    params.cont_batching = True
    params.hostnames = ["127.0.0.1"]
    params.port = port
    server = xllamacpp.Server(params)
    try:
        yield f"{server.listening_address}/v1"
    finally:
        del server


def open_chat(args: argparse.Namespace) -> ChatModel:
    """The replica's model the command line asks for."""
    if args.provider == "openai":
        return OpenAIChatModel(
            base_url=args.base_url,
            api_key=args.api_key,
            model=args.model,
            request_timeout=args.timeout,
        )
    return EmbeddedChatModel(
        model=args.model,
        models_dir=MODELS_DIR,
        threads=args.threads,
        slots=args.parallel,
        context_tokens=4096,
    )


def select(cases: list[Case], args: argparse.Namespace) -> list[Case]:
    """The cases the command line asks for (context stays the true previous window)."""
    if args.origin != "all":
        cases = [c for c in cases if c.origin == args.origin]
    if args.every > 1:
        cases = cases[args.offset :: args.every]
    if args.limit:
        cases = cases[: args.limit]
    return cases


def emit(detector: str, figures: dict[str, Any], extra: dict[str, Any]) -> None:
    """One JSON line per figure."""
    for name, value in figures.items():
        print(json.dumps({"bench": "actions", "detector": detector, **extra, name: value}))


async def amain(args: argparse.Namespace) -> None:
    """Load, run, print."""
    if args.score:
        for name, value in score_log(Path(args.score)).items():
            print(json.dumps({"bench": "actions", "log": args.score, name: value}))
        return
    cases = select(load_cases(), args)
    started = time.perf_counter()
    chat = open_chat(args)
    extra: dict[str, Any] = {"run": args.label} if args.label else {}
    try:
        if isinstance(chat, EmbeddedChatModel):
            await chat.load()
            extra |= {"threads": args.threads, "slots": args.parallel}
        load_s = time.perf_counter() - started
        if args.throughput:
            for n in (int(x) for x in args.throughput.split(",")):
                figures = await throughput(chat, load_cases(), n, args)
                emit(chat.name, figures, extra | {"mode": "throughput"})
            return
        load_start = load1()
        figures = await run(chat, cases, args)
        figures |= {"load1_start": load_start, "load1_end": load1()}
    finally:
        await chat.aclose()
    figures["load_s"] = round(load_s, 2)
    emit(chat.name, figures, extra)


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["embedded", "openai"], default="embedded")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--api-key", default="unused")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--timeout", type=float, default=600.0, help="openai request timeout")
    parser.add_argument("--limit", type=int, default=0, help="first N windows only")
    parser.add_argument("--origin", choices=["all", "written", "transcript"], default="all")
    parser.add_argument("--every", type=int, default=1, help="every K-th window only")
    parser.add_argument("--offset", type=int, default=0, help="first window of --every")
    parser.add_argument("--verbose", action="store_true", help="one line per window too")
    parser.add_argument("--score", default="", help="only score a --verbose log of a run")
    parser.add_argument("--label", default="", help="a name for the run, on every line")
    parser.add_argument("--serve-local", default="", help="packaged model or GGUF to serve")
    parser.add_argument("--parallel", type=int, default=1, help="slots of the embedded model")
    parser.add_argument("--throughput", default="", help="comma-separated meeting counts")
    parser.add_argument("--windows-per-meeting", type=int, default=4)
    parser.add_argument("--pause", type=float, default=4.0, help="pause that closes a window")
    parser.add_argument("--stagger", type=float, default=7.0, help="seconds between meetings")
    parser.add_argument("--goal", type=float, default=15.0, help="p95 goal, seconds")
    args = parser.parse_args()
    if args.serve_local:
        with serve_local(args) as base_url:
            args.provider, args.base_url = "openai", base_url
            args.model = args.model if args.model != parser.get_default("model") else "local"
            asyncio.run(amain(args))
        return
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
