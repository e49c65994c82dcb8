"""Action detection benchmark: precision and recall per type, latency and CPU per window.

The labelled set is ``bench/data/action_windows.yaml``: meeting transcript windows written by
hand for this benchmark in the style of realtime meeting transcripts (see the file's header),
each with its expected actions. Every window goes to the detector once, with the previous
window of the same meeting as context, exactly as :class:`agent.actions.windowing.ActionWindower`
sends them.

A predicted action matches an unmatched labelled one of the same window when the type is the
same, the texts are alike (content-word overlap ≥ 0.5 of the shorter, or character similarity
≥ 0.6 after normalising) and, when the label names an owner, the prediction names the same
person. Precision = matched / predicted, recall = matched / labelled, per type and overall.
Windows whose answer was invalid count as predicting nothing.

Prints one JSON line per figure (DESIGN.md §9). CPU is this process's user+system seconds per
window: for ``local`` that is the model; for ``openai`` only the client (the server's CPU is
the server's, unless it runs in this process: ``--serve-local``).

Usage::

    nice -n 10 python -m bench.actions --provider local --model qwen2.5-coder-0.5b-instruct
    nice -n 10 python -m bench.actions --provider local --model /path/to/model.gguf
    python -m bench.actions --provider openai --base-url http://127.0.0.1:8080/v1 --model NAME
    python -m bench.actions --score run.log   # figures of a --verbose log, even a partial one
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import time
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

import yaml

from agent.actions.base import ActionDetector
from agent.actions.errors import DetectorError
from agent.actions.local_models import resolve_local_model
from agent.actions.local_provider import LocalActionDetector
from agent.actions.model import DetectedAction, DetectionRequest, WindowLine
from agent.actions.openai_provider import OpenAIActionDetector
from agent.actions.settings import ActionSettings
from agent.actions.windowing import normalise_text
from agent.contracts.link import ActionType
from bench.stats import percentile

DATA = Path(__file__).parent / "data" / "action_windows.yaml"
_STOP = frozenset(
    "a an the to of for and or on in at by with is are be we i it that this let's lets "
    "our us you will can do does".split()
)


@dataclass(frozen=True, slots=True)
class Label:
    """One expected action."""

    action_type: ActionType
    text: str
    owner: str | None
    segment_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Case:
    """One window with its context and labels."""

    window_id: str
    request: DetectionRequest
    labels: tuple[Label, ...]


def load_cases(path: Path = DATA) -> list[Case]:
    """The labelled windows of ``path`` as detector requests (previous window as context)."""
    data = yaml.safe_load(path.read_text())
    cases: list[Case] = []
    for meeting in data["meetings"]:
        previous: tuple[WindowLine, ...] = ()
        t = 0.0
        for w, window in enumerate(meeting["windows"], start=1):
            lines: list[WindowLine] = []
            for n, (speaker, text) in enumerate(window["lines"], start=1):
                length = max(1.5, len(text.split()) / 2.5)
                lines.append(
                    WindowLine(f"{meeting['id']}-w{w}-s{n}", speaker, None, t, t + length, text)
                )
                t += length + 0.4
            labels = tuple(
                Label(
                    ActionType(label["type"]),
                    label["text"],
                    label.get("owner"),
                    tuple(lines[i - 1].segment_id for i in label["lines"]),
                )
                for label in window["labels"]
            )
            request = DetectionRequest(lines=tuple(lines), context=previous)
            cases.append(Case(f"{meeting['id']}-w{w}", request, labels))
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


async def run(detector: ActionDetector, cases: list[Case], verbose: bool) -> dict[str, Any]:
    """Every case through ``detector``; returns the figures."""
    predicted: Counter[str] = Counter()
    labelled: Counter[str] = Counter()
    matched: Counter[str] = Counter()
    latencies: list[float] = []
    cpu: list[float] = []
    tokens: list[int] = []
    invalid = 0
    dropped = 0
    for case in cases:
        wall, cpu0 = time.perf_counter(), _cpu()
        try:
            detection = await detector.detect(case.request)
            actions = list(detection.actions)
            tokens.append(detection.total_tokens)
            dropped += detection.dropped
        except DetectorError as exc:
            invalid += 1
            actions = []
            if verbose:
                print(json.dumps({"window": case.window_id, "error": str(exc)[:200]}))
        latencies.append(time.perf_counter() - wall)
        cpu.append(_cpu() - cpu0)
        hits = match(actions, case.labels)
        for action, hit in zip(actions, hits, strict=True):
            predicted[action.action_type.value] += 1
            matched[action.action_type.value] += hit
        for label in case.labels:
            labelled[label.action_type.value] += 1
        if verbose:
            print(
                json.dumps(
                    {
                        "window": case.window_id,
                        "seconds": round(latencies[-1], 2),
                        "cpu_s": round(cpu[-1], 2),
                        "predicted": [
                            [a.action_type.value, a.text, a.owner, a.due, hit]
                            for a, hit in zip(actions, hits, strict=True)
                        ],
                        "labels": [[x.action_type.value, x.text, x.owner] for x in case.labels],
                    }
                ),
                flush=True,
            )
    return figures_of(predicted, labelled, matched, latencies, cpu, tokens) | {
        "windows": len(cases),
        "windows_invalid_answer": invalid,
        "items_dropped": dropped,
    }


def figures_of(
    predicted: Counter[str],
    labelled: Counter[str],
    matched: Counter[str],
    latencies: list[float],
    cpu: list[float],
    tokens: list[int],
) -> dict[str, Any]:
    """Precision, recall, latency and CPU figures from per-type counts and per-window lists."""
    figures: dict[str, Any] = {}
    for kind in [*(t.value for t in ActionType), "overall"]:
        if kind == "overall":
            p, lab, m = sum(predicted.values()), sum(labelled.values()), sum(matched.values())
        else:
            p, lab, m = predicted[kind], labelled[kind], matched[kind]
        figures[f"precision_{kind}"] = round(m / p, 3) if p else None
        figures[f"recall_{kind}"] = round(m / lab, 3) if lab else None
        figures[f"predicted_{kind}"] = p
        figures[f"labelled_{kind}"] = lab
    figures["latency_p50_s"] = round(percentile(latencies, 0.5), 2)
    figures["latency_p95_s"] = round(percentile(latencies, 0.95), 2)
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
    predicted: Counter[str] = Counter()
    labelled: Counter[str] = Counter()
    matched: Counter[str] = Counter()
    latencies: list[float] = []
    cpu: list[float] = []
    errors = 0
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if "error" in row:
            errors += 1
        if "predicted" not in row:
            continue
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
        for action, hit in zip(actions, match(actions, case.labels), strict=True):
            predicted[action.action_type.value] += 1
            matched[action.action_type.value] += hit
        for label in case.labels:
            labelled[label.action_type.value] += 1
        latencies.append(row["seconds"])
        if "cpu_s" in row:
            cpu.append(row["cpu_s"])
    return figures_of(predicted, labelled, matched, latencies, cpu, []) | {
        "windows": len(latencies),
        "windows_invalid_answer": errors,
    }


async def open_bench_detector(args: argparse.Namespace) -> ActionDetector:
    """The detector the command line asks for."""
    settings = ActionSettings()
    if args.provider == "openai":
        return OpenAIActionDetector(
            base_url=args.base_url,
            api_key=args.api_key,
            model=args.model,
            max_output_tokens=args.max_tokens,
            request_timeout=600,
        )
    path = await asyncio.to_thread(resolve_local_model, args.model, settings.models_dir)
    return await LocalActionDetector.load(
        path,
        model_name=re.sub(r"\.gguf$", "", Path(args.model).name),
        threads=args.threads,
        context_tokens=4096,
        max_output_tokens=args.max_tokens,
    )


async def amain(args: argparse.Namespace) -> None:
    """Load, run, print."""
    if args.score:
        for name, value in score_log(Path(args.score)).items():
            print(json.dumps({"bench": "actions", "log": args.score, name: value}))
        return
    cases = load_cases()
    if args.limit:
        cases = cases[: args.limit]
    started = time.perf_counter()
    detector = await open_bench_detector(args)
    load_s = time.perf_counter() - started
    try:
        figures = await run(detector, cases, args.verbose)
    finally:
        await detector.aclose()
    figures["load_s"] = round(load_s, 2)
    for name, value in figures.items():
        print(json.dumps({"bench": "actions", "detector": detector.name, name: value}))


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["local", "openai"], default="local")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--api-key", default="unused")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--limit", type=int, default=0, help="first N windows only")
    parser.add_argument("--verbose", action="store_true", help="one line per window too")
    parser.add_argument("--score", default="", help="only score a --verbose log of a run")
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
