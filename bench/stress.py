"""Stress bench: the stress grid and the conversational recordings at 1x, ours beside WhisperLive.

Each case of ``testmeeting.stress`` (clips of different speakers on one track: levels ±12 dB,
gaps −0.3…+0.4 s, a quiet or hoarse speaker right after a loud one, a 2-s pause inside a
monologue) and the conversational set of ``testmeeting.packaged_speech`` (each clip after the
one before, 0.3 s apart, one ``conversation`` case) is streamed in real time, in 100 ms frames,
with no speaker signal:

- ``mixed``: the case as one track (what Teams' server-mixed audio gives);
- ``per_speaker``: each clip on its own track (Meet's per-participant audio).

For meetbot the realtime tier runs in this process (``RealtimeTranscriber``, the settings'
models); with ``--whisperlive URL`` the same frames go to a running WhisperLive server as well
(one connection per track, ``bench.whisperlive``), one engine after the other. One JSON line
per engine and layout (``bench.transcription.emit``):

- ``utterances``/``utterances_lost``/``utterances_under_90``: clips, clips with under half of
  their reference words recovered in order (``testmeeting.stress.score``), and clips under
  90 % (tiny.en alone on the conversational clips makes 0.175 WER: many fall under 90 %);
- ``spanning``: finals that hold two clips' words (two or more of each);
- ``unaccounted_voice_s`` and its share of the voice evidence (meetbot only: the counter of
  ``agent.transcribe.metrics``), by rule; ``hesitation_voice_s``: voice read as hesitations
  only (``Um...``), counted apart (meetbot only);
- ``wer``: pooled over the clips (each clip's reference against the words assigned to it);
- ``eou_p50_s``/``eou_p95_s``/``eou_max_s``: from the end of each clip's speech to the arrival
  of the final that holds its last recovered word (``testmeeting.stress.Score.last_final``);
  the speech ends at the clip's voice end, or at that final's end when the clip's last words
  were not recovered (how far the final lags the speech it covers). Clips with nothing
  recovered have no figure: they are counted as lost;
- ``cpu_per_audio_s`` (this process, or the server's with ``--pid``) and ``peak_rss_mb``;
- the models: realtime tier (finals and partials) for meetbot, the server's for WhisperLive.

Usage: ``python -m bench.stress [--cases N|all] [--seed S] [--layouts mixed,per_speaker]
[--set NAME=VALUE ...] [--details PATH] [--whisperlive ws://127.0.0.1:9090 --pid PID]
[--no-meetbot]``. ``--set`` changes a ``TranscribeOptions`` field of meetbot's realtime tier
(e.g. ``cpu_threads=1``; ``segmenter.speculate_s=0.25`` a field of its segmenter's);
``--details`` writes each case's finals, scores and the voice the transcriber reported
without text (rule, seconds, span). ``--cases all`` is the whole grid (198 cases, about 75
minutes of audio a layout and engine); the default is a sample of 24 that covers every kind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import aiohttp
import numpy as np
import numpy.typing as npt
import psutil

from agent.capture.audio import SAMPLE_RATE, AudioFrame
from agent.transcribe.engine import WhisperEngine
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.models import resolve_model
from agent.transcribe.normalize import normalize_text, word_errors
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.segmenter import SegmenterOptions
from agent.transcribe.vad import SileroSession
from bench.conversation import Final
from bench.transcription import JOIN, emit, pct
from bench.whisperlive import _END_OF_AUDIO, _connect, _receive
from testmeeting.packaged_speech import conversational_clips
from testmeeting.stress import Case, Interval, Piece, grid, sample, score

REPO = Path(__file__).resolve().parent.parent
FRAME = SAMPLE_RATE // 10
_TAIL_S = 4.0
_LOST_BELOW = 0.5
_COMPLETE_FROM = 0.9
_CONVERSATION_GAP_S = 0.3
# What each "voice without text" report carries (``TranscribeMetrics.lose``).
_LOST_FIELDS = ("rule", "seconds", "span", "words", "track")
# Counters of the realtime tier summed into the ``decodes`` figure beside the decodes by kind.
_COUNTED = frozenset(
    {
        "agreement_commits",
        "sentence_cuts",
        "speculation_hits",
        "speculation_misses",
        "partials_paused",
    }
)


@dataclass(slots=True)
class Tally:
    """What one engine did over the cases of one layout."""

    clips: int = 0
    lost: int = 0
    under_90: int = 0
    decodes: dict[str, float] = field(default_factory=dict)
    spanning: int = 0
    errors: int = 0
    words: int = 0
    latencies: list[float] = field(default_factory=list)
    audio_s: float = 0.0
    cpu_s: float = 0.0
    evidence_s: float = 0.0
    unaccounted: dict[str, float] = field(default_factory=dict)
    hesitation_s: float = 0.0


def conversation_case() -> Case:
    """The conversational set as one case: each clip 0.3 s after the one before."""
    intervals: list[Interval] = []
    pieces: list[Piece] = []
    cursor = 0.5
    for clip in conversational_clips():
        offset = round(cursor * SAMPLE_RATE)
        pieces.append(Piece(np.asarray(clip.samples), offset, 1.0))
        intervals.append(
            Interval(clip.name, clip.speaker, clip.text, cursor, cursor + clip.duration, 0.0, "")
        )
        cursor += clip.duration + _CONVERSATION_GAP_S
    gaps = tuple(_CONVERSATION_GAP_S for _ in intervals[1:])
    return Case(
        "conversation", "conversation", tuple(intervals), gaps, None, cursor + 1.0, tuple(pieces)
    )


def tracks_of(case: Case, layout: str) -> dict[str, npt.NDArray[np.int16]]:
    """The case's audio by track: one mixed track, or each clip on its own."""
    if layout == "mixed":
        return {"mix": case.samples}
    return {f"speaker-{i}": stem for i, stem in enumerate(case.stems())}


def frames_of(tracks: dict[str, npt.NDArray[np.int16]]) -> list[AudioFrame]:
    """100 ms frames of every track, in time order (tracks interleaved as a page sends them)."""
    out = [
        AudioFrame(track, JOIN + i / SAMPLE_RATE, pcm[i : i + FRAME])
        for track, pcm in tracks.items()
        for i in range(0, len(pcm), FRAME)
    ]
    return sorted(out, key=lambda frame: (frame.start_time, frame.track_id))


async def _pace(began: float, frame: AudioFrame) -> None:
    delay = began + (frame.end_time - JOIN) - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


class LostVoice(logging.Handler):
    """Collects the transcriber's "voice without text" reports (``TranscribeMetrics.lose``)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reports: list[dict[str, object]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.reports.append({key: getattr(record, key, None) for key in _LOST_FIELDS})


async def run_meetbot(
    engine: WhisperEngine,
    silero: SileroSession,
    options: TranscribeOptions,
    frames: list[AudioFrame],
) -> tuple[list[Final], dict[str, float], list[dict[str, object]]]:
    """Stream at 1x into a fresh realtime transcriber; its finals, counters and lost voice."""
    transcriber = RealtimeTranscriber(
        engine, join_time=JOIN, options=options, vad_session=silero, id_prefix="stress"
    )
    finals: list[Final] = []
    lost = LostVoice()
    metrics_log = logging.getLogger(TranscribeMetrics.__module__)
    metrics_log.addHandler(lost)
    try:
        await _stream(transcriber, frames, finals)
    finally:
        metrics_log.removeHandler(lost)
    return finals, transcriber.metrics.snapshot(), lost.reports


async def _stream(
    transcriber: RealtimeTranscriber, frames: list[AudioFrame], finals: list[Final]
) -> None:
    began = time.monotonic()

    async def collect() -> None:
        async for segment in transcriber.segments():
            if segment.completed and segment.text:
                arrival = time.monotonic() - began
                finals.append(Final(segment.text, None, segment.start, segment.end, arrival))

    async with asyncio.TaskGroup() as group:
        group.create_task(collect())
        async with transcriber:
            for frame in frames:
                await _pace(began, frame)
                await transcriber.feed(frame)


async def run_whisperlive(url: str, frames: list[AudioFrame], model: str) -> list[Final]:
    """Stream at 1x to WhisperLive (a connection per track), then silence, then the end."""
    finals: list[Final] = []
    began = [0.0]
    tracks = sorted({frame.track_id for frame in frames})
    async with aiohttp.ClientSession() as session:
        sockets = {track: await _connect(session, url, model) for track in tracks}
        began[0] = time.monotonic()
        async with asyncio.TaskGroup() as group:
            for ws in sockets.values():
                group.create_task(_receive(ws, None, began, finals))
            for frame in frames:
                await _pace(began[0], frame)
                await sockets[frame.track_id].send_bytes(np.asarray(frame.pcm, "<i2").tobytes())
            end = frames[-1].end_time - JOIN
            silence = np.zeros(FRAME, dtype="<i2").tobytes()
            for n in range(1, int(_TAIL_S * 10) + 1):
                await asyncio.sleep(max(0.0, began[0] + end + n * 0.1 - time.monotonic()))
                for ws in sockets.values():
                    await ws.send_bytes(silence)
            for ws in sockets.values():
                await ws.send_bytes(_END_OF_AUDIO)
    return finals


def tally(
    case: Case,
    finals: Sequence[Final],
    into: Tally,
    details: TextIO | None = None,
    lost_voice: Sequence[dict[str, object]] = (),
) -> None:
    """Score one case's finals into ``into`` (and write them with their scores to ``details``,
    with the voice the transcriber reported without text: rule, seconds, span, words)."""
    got = score(case, [(f.text, f.start, f.end) for f in finals], normalize=normalize_text)
    if details is not None:
        row = {
            "case": case.name,
            "clips": [
                (i.clip, round(i.start, 2), round(i.end, 2), i.level_db) for i in case.intervals
            ],
            "recall": [round(r, 3) for r in got.recall],
            "spanning": got.spanning,
            "finals": [
                (round(f.start, 2), round(f.end, 2), f.arrival and round(f.arrival, 2), f.text)
                for f in finals
            ],
            "last_final": list(got.last_final),
            "lost_voice": list(lost_voice),
        }
        details.write(json.dumps(row) + "\n")
        details.flush()
    into.clips += len(case.intervals)
    into.spanning += got.spanning
    for interval, recall, words, last in zip(
        case.intervals, got.recall, got.words, got.last_final, strict=True
    ):
        errors, n = word_errors(interval.text, " ".join(words))
        into.errors += errors
        into.words += n
        if recall < _LOST_BELOW:
            into.lost += 1
        if recall < _COMPLETE_FROM:
            into.under_90 += 1
        # From the end of the speech that final covers (the clip's voice end, or the final's
        # own end when the clip's last words were not recovered) to its arrival.
        final = finals[last] if last is not None else None
        if final is not None and final.arrival is not None:
            spoken = min(interval.end, final.end)
            into.latencies.append(max(0.0, final.arrival - spoken))


def _cpu(pid: int | None) -> float:
    process = psutil.Process(pid) if pid else psutil.Process()
    times = process.cpu_times()
    return float(times.user + times.system)


def report(engine: str, layout: str, t: Tally, models: dict[str, str]) -> None:
    """One JSON line for an engine and layout."""
    unaccounted = sum(t.unaccounted.values())
    emit(
        engine=engine,
        layout=layout,
        metric="stress",
        utterances=t.clips,
        utterances_lost=t.lost,
        utterances_under_90=t.under_90,
        spanning=t.spanning,
        wer=round(t.errors / max(1, t.words), 4),
        eou_p50_s=pct(t.latencies, 50),
        eou_p95_s=pct(t.latencies, 95),
        eou_max_s=round(max(t.latencies), 3) if t.latencies else None,
        cpu_per_audio_s=round(t.cpu_s / max(1e-9, t.audio_s), 3),
        audio_s=round(t.audio_s, 1),
        unaccounted_voice_s=round(unaccounted, 3) if engine == "meetbot" else None,
        unaccounted_share=round(unaccounted / t.evidence_s, 4) if t.evidence_s else None,
        unaccounted_by_rule={k: round(v, 3) for k, v in t.unaccounted.items()},
        hesitation_voice_s=round(t.hesitation_s, 3) if engine == "meetbot" else None,
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        decodes={k: int(v) for k, v in sorted(t.decodes.items())} or None,
        **models,
    )


def _option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    outer, _, inner = name.partition(".")
    known = (
        inner in SegmenterOptions.model_fields
        if outer == "segmenter" and inner
        else name in TranscribeOptions.model_fields
    )
    if not sep or not known:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected NAME=VALUE with a TranscribeOptions field "
            "(or segmenter.NAME=VALUE with a SegmenterOptions field)"
        )
    return name, value


def _options(pairs: list[tuple[str, str]]) -> TranscribeOptions:
    """``--set`` pairs as options; ``segmenter.NAME`` sets a field of the segmenter's."""
    fields: dict[str, object] = {}
    segmenter: dict[str, str] = {}
    for name, value in pairs:
        if name.startswith("segmenter."):
            segmenter[name.removeprefix("segmenter.")] = value
        else:
            fields[name] = value
    if segmenter:
        fields["segmenter"] = SegmenterOptions.model_validate(segmenter)
    return TranscribeOptions.model_validate(fields)


async def main_async(args: argparse.Namespace) -> None:
    cases = grid(args.seed) if args.cases == "all" else sample(int(args.cases), args.seed)
    cases = [*cases, conversation_case()]
    options = _options(args.set)
    details = args.details.open("w", encoding="utf-8") if args.details else None
    engine = await asyncio.to_thread(
        WhisperEngine.load,
        resolve_model(options.model, REPO / "data" / "models"),
        options.cpu_threads,
    )
    silero = SileroSession()
    for layout in args.layouts.split(","):
        if not args.no_meetbot:
            t = Tally()
            for case in cases:
                frames = frames_of(tracks_of(case, layout))
                c0 = _cpu(None)
                finals, counters, lost_voice = await run_meetbot(engine, silero, options, frames)
                t.cpu_s += _cpu(None) - c0
                t.audio_s += case.duration_s
                t.evidence_s += counters.get("voice_evidence_seconds", 0.0)
                t.hesitation_s += counters.get("hesitation_voice_seconds", 0.0)
                for key, value in counters.items():
                    if key.startswith("unaccounted_voice_seconds_"):
                        rule = key.removeprefix("unaccounted_voice_seconds_")
                        t.unaccounted[rule] = t.unaccounted.get(rule, 0.0) + value
                    if key.startswith(("decodes_", "encoded_seconds_")) or key in _COUNTED:
                        t.decodes[key] = t.decodes.get(key, 0.0) + value
                tally(case, finals, t, details, lost_voice)
            report(
                "meetbot",
                layout,
                t,
                {"model_finals": options.model, "model_partials": options.model},
            )
        if args.whisperlive:
            t = Tally()
            for case in cases:
                frames = frames_of(tracks_of(case, layout))
                c0 = _cpu(args.pid) if args.pid else 0.0
                finals = await run_whisperlive(args.whisperlive, frames, args.whisperlive_model)
                t.cpu_s += (_cpu(args.pid) - c0) if args.pid else float("nan")
                t.audio_s += case.duration_s
                tally(case, finals, t)
            report("whisperlive", layout, t, {"model_finals": args.whisperlive_model})


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="24", help="how many cases of the grid, or 'all'")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        type=_option,
        metavar="NAME=VALUE",
        help="a TranscribeOptions field for meetbot's realtime tier (e.g. cpu_threads=1)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layouts", default="mixed,per_speaker")
    parser.add_argument("--whisperlive", help="WhisperLive websocket URL, to run it beside us")
    parser.add_argument("--whisperlive-model", default="tiny.en")
    parser.add_argument("--pid", type=int, help="WhisperLive server pid (its CPU seconds)")
    parser.add_argument("--no-meetbot", action="store_true", help="WhisperLive only")
    parser.add_argument("--details", type=Path, help="write each case's finals and scores here")
    args = parser.parse_args(argv)
    if args.cases != "all" and not args.cases.isdigit():
        parser.error("--cases takes a number or 'all'")
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
