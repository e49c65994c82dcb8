"""``meetbot demo``: the whole product on this machine, on real recorded speech.

It starts the control plane (``meetbot serve``, SQLite in a temporary folder), the testmeeting
simulator with three participants taking turns, and a webhook receiver; launches a bot through
the public REST API; prints the bot's status and the transcript live from its SSE stream; then
prints a summary (statuses with times, segments, WER against the scenario's reference text,
end-of-utterance latency p50/p95, signed webhook deliveries, the transcript URL), stops what it
started and exits 0 — or 1 with the reason when something failed (the data folder with the
control plane's and the agent's logs is then kept).

Example::

    meetbot demo --platform zoom
    meetbot demo --audio talk1.wav --audio talk2.flac --keep-running
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from meetbot.demo.errors import DemoError
from meetbot.demo.report import DemoSummary, render
from meetbot.demo.run import DemoOptions, DemoRun
from meetbot.demo.scenario import (
    DemoScenario,
    SpeechSource,
    build_conversation_scenario,
    build_scenario,
    build_soak_scenario,
    default_speech_dir,
    find_speech,
)
from testmeeting.errors import ScenarioError

PLATFORMS = ("google_meet", "zoom", "teams")
RUN_MARGIN_S = 180.0
"""Time allowed beyond the scenario's own length: start-up, joining, leaving, a loaded CPU."""
SOAK_SECONDS = 1200.0
"""Default length of ``--style soak`` (20 minutes: the run CI could afford)."""

_SOURCE_TEXT = {
    SpeechSource.FILES: "your audio files",
    SpeechSource.CORPUS: "real recorded speech",
    SpeechSource.PACKAGED: "real recorded speech packaged with meetbot "
    "(LJ Speech, LibriSpeech, Common Voice, JFK; testmeeting/speech/MANIFEST.tsv)",
    SpeechSource.ESPEAK: "speech synthesised with espeak-ng "
    "(neither a real-speech folder nor the packaged speech was found)",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="meetbot demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--platform",
        choices=PLATFORMS,
        default="google_meet",
        help="which meeting skin the bot joins (default google_meet)",
    )
    parser.add_argument(
        "--audio",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="speak this file (repeatable; speakers take turns; a .txt beside "
        "it is its reference text)",
    )
    parser.add_argument(
        "--speech-dir",
        type=Path,
        help="real-speech folder (default: MEETBOT_SPEECH_DIR, else "
        "../shared/data/speech next to the checkout; without one, the speech "
        "packaged with meetbot plays)",
    )
    parser.add_argument(
        "--scenario-seconds",
        type=float,
        metavar="S",
        help="keep only as many turns as fit in S seconds of speech "
        "(at least one per speaker); default: all (about 37 s)",
    )
    parser.add_argument(
        "--style",
        choices=("turns", "polite", "conversation", "soak"),
        default="turns",
        help="turns: three people, 1.2 s apart (default); polite/conversation: "
        "the corpus conversation of eight people, 1.2 s apart or with "
        "natural turn-taking (overlaps, backchannels, a monologue); soak: "
        "--scenario-seconds (default 1200) of continuous corpus talk with a guest "
        "joining every 3 minutes (chat, hand, screen share) and leaving later",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="the bot records the meeting (audio); the recording is kept in the data folder",
    )
    parser.add_argument(
        "--language",
        metavar="CODE",
        help="the bot's language (e.g. en); default: detected per speaker",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="leave the control plane and the meeting up; print the key and "
        "URLs for curl; stop with Ctrl-C",
    )
    parser.add_argument(
        "--json-summary", type=Path, metavar="FILE", help="also write the summary as JSON to FILE"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="folder for the database and logs (default: a temporary folder, "
        "removed after a successful run)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="give up after S seconds (default: scenario length + 180)",
    )
    return parser


def _speech_dir(given: Path | None) -> Path | None:
    if given is not None:
        return given
    env = os.environ.get("MEETBOT_SPEECH_DIR")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file():
        return default_speech_dir(checkout)
    return default_speech_dir(Path.cwd())


async def _main(
    args: argparse.Namespace, console: Console, reported: list[DemoSummary]
) -> DemoSummary:
    corpus = _speech_dir(args.speech_dir)
    speech_dir = corpus
    if not args.audio or args.style != "turns":
        # No corpus here: the packaged clips, decoded into the data folder, play instead.
        speech_dir = await asyncio.to_thread(find_speech, corpus, args.data_dir_resolved / "speech")
    demo: DemoScenario
    if args.style == "soak" and speech_dir is not None and speech_dir.is_dir():
        demo = await asyncio.to_thread(
            build_soak_scenario,
            args.platform,
            speech_dir,
            args.scenario_seconds or SOAK_SECONDS,
        )
    elif args.style != "turns" and speech_dir is not None and speech_dir.is_dir():
        demo = await asyncio.to_thread(
            build_conversation_scenario, args.platform, speech_dir, args.style
        )
    else:
        demo = await asyncio.to_thread(
            build_scenario,
            args.platform,
            audio=list(args.audio),
            speech_dir=speech_dir if speech_dir is not None and speech_dir.is_dir() else None,
            max_speech_seconds=args.scenario_seconds,
        )
    console.print(
        f"[bold]meetbot demo[/bold]: {len(demo.references)} turns, "
        f"{demo.speech_seconds:.1f} s of {escape(_SOURCE_TEXT[demo.source])}"
        + (f" from {escape(str(speech_dir))}" if demo.source is SpeechSource.CORPUS else "")
        + (
            f" (no corpus at {escape(str(corpus))})"
            if demo.source is SpeechSource.PACKAGED and corpus is not None
            else ""
        ),
        highlight=False,
    )
    end_at = demo.scenario.end_at or demo.speech_seconds
    options = DemoOptions(
        platform=args.platform,
        data_dir=args.data_dir_resolved,
        speech_dir=speech_dir,
        keep_running=args.keep_running,
        record=args.record,
        language=args.language,
        timeout_s=args.timeout or end_at + RUN_MARGIN_S,
    )
    run = DemoRun(options, demo, console)

    def report(summary: DemoSummary) -> None:
        reported.append(summary)
        render(summary, console)
        if args.json_summary is not None:
            args.json_summary.write_text(summary.model_dump_json(indent=2), encoding="utf-8")

    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        # SIGTERM stops the demo as Ctrl-C does: everything started is stopped in order.
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await run.run(report)
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def main(argv: Sequence[str]) -> int:
    """Entry point of ``meetbot demo``; returns 0 when the bot completed and was heard."""
    args = _parser().parse_args(list(argv))
    console = Console(highlight=False)
    for path in args.audio:
        if not path.is_file():
            console.print(f"[red]meetbot demo: no such audio file: {escape(str(path))}")
            return 2
    temporary = args.data_dir is None
    args.data_dir_resolved = (
        Path(tempfile.mkdtemp(prefix="meetbot-demo-")) if temporary else args.data_dir.resolve()
    )
    reported: list[DemoSummary] = []
    try:
        asyncio.run(_main(args, console, reported))
    except (ScenarioError, DemoError) as exc:
        console.print(f"[bold red]meetbot demo failed:[/] {escape(str(exc))}")
    except (KeyboardInterrupt, asyncio.CancelledError):
        console.print("meetbot demo: stopped")
        if not reported:
            return 130
    summary = reported[0] if reported else None
    ok = summary is not None and summary.ok
    if temporary and ok:
        shutil.rmtree(args.data_dir_resolved, ignore_errors=True)
    elif not ok:
        console.print(f"logs kept in {escape(str(args.data_dir_resolved))}", highlight=False)
    with contextlib.suppress(OSError):
        sys.stdout.flush()
    return 0 if ok else 1
