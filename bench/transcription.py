"""Transcription benchmark: WER offline vs streaming, RTF, CPU, RSS, end-of-utterance latency.

Prints one JSON line per figure (docs/architecture.md §9). For each model (each in its own
process, so
peak RSS is the model's own):

1. ``offline``: every English clip decoded whole (faster-whisper, beam 5 and beam 1, with
   timestamps: the standard file transcription) → per-clip and pooled WER, RTF, CPU s.
2. ``streaming_fast``: the realtime tier over each clip, frames fed as fast as taken (the
   endpointing runs on frame timestamps) → per-clip and pooled WER, and the ratio to offline.
3. ``vad``: Silero vs energy VAD on the multi-speaker sequence (turns with no segment, WER).
4. ``streaming_realtime``: the multi-speaker sequence replayed in real time (sleeping between
   100 ms frames, partials on) → end of speech → final segment latency p50/p95 (per turn,
   from the clip's last voiced sample; and per final, from the segment's own end), WER,
   CPU seconds per audio second, peak RSS, partial interval degradations.
5. ``conversation``: the polite and the natural conversation (``testmeeting.conversation``:
   −300…+300 ms between turns, backchannels over the speaker, a 21 s monologue) replayed in
   real time with partials on, on per-speaker tracks and on one mixed track with the speaker
   indicator → end-of-turn → final p50/p95 against the goals (0.8 s / 2.5 s), turns without
   a final, WER, word-level speaker accuracy, finals spanning two speakers, CPU per audio
   second (goal ≤ 0.35 with tiny.en).
6. ``language``: each non-English corpus clip (es, fr, de, zh) and an English one, in real time,
   with no ``language`` (tiny.en paired with the bundled base: detection per speaker) →
   detected language, end of speech → final latency, WER (CER for Chinese).

Usage: ``python -m bench.transcription [--models tiny.en,base] [--skip-realtime]
[--only-conversation] [--only-language] [--realtime-window-s full|SECONDS]``.
Needs the speech corpus (``MEETBOT_SPEECH_DIR`` or ``../shared/data/speech``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
import wave
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psutil

from agent.capture.audio import SAMPLE_RATE, AudioFrame, SpeakerActivity
from agent.contracts.bot_config import Task
from agent.contracts.link import Segment
from agent.transcribe.engine import DecodeOptions, WhisperEngine
from agent.transcribe.models import resolve_model
from agent.transcribe.normalize import word_errors
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.vad import SileroSession
from bench.conversation import Final, Layout, score, stream_items
from testmeeting.conversation import Conversation, build_conversation

REPO = Path(__file__).resolve().parent.parent
CLIPS = [
    "jfk.wav",
    "ls_testclean_1089-134686-0001.wav",
    "ls_testclean_1995-1837-0001.wav",
    "ls_testclean_61-70968-0000.wav",
    "fw_stereo_diarization_ch1.wav",
    "LJ001-0001.wav",
    "LJ001-0003.wav",
    "LJ001-0005.wav",
    "LJ001-0007.wav",
    "LJ001-0009.wav",
    "common_voice_en_22058264.wav",
    "common_voice_en_22058266.wav",
    "common_voice_en_22058267.wav",
    "mfa_acoustic_corpus.wav",
]
# The "meeting": turns by different speakers, in this order, with 0.5-1.5 s between them.
MEETING = [
    ("Sam", "ls_testclean_1089-134686-0001.wav"),
    ("Linda", "LJ001-0001.wav"),
    ("John", "jfk.wav"),
    ("Mary", "ls_testclean_1995-1837-0001.wav"),
    ("Chris", "common_voice_en_22058264.wav"),
    ("Linda", "LJ001-0003.wav"),
    ("Dan", "ls_testclean_61-70968-0000.wav"),
    ("Mike", "mfa_acoustic_corpus.wav"),
    ("Fay", "fw_stereo_diarization_ch1.wav"),
    ("Linda", "LJ001-0005.wav"),
    ("Chris", "common_voice_en_22058266.wav"),
    ("Linda", "LJ001-0007.wav"),
    ("Chris", "common_voice_en_22058267.wav"),
    ("Linda", "LJ001-0009.wav"),
]
JOIN = 1_800_000_000.0
FRAME = SAMPLE_RATE // 10


def emit(**fields: Any) -> None:
    """Print one JSON line with the load average and time attached."""
    fields.setdefault("load1", round(os.getloadavg()[0], 2))
    print(json.dumps({"bench": "transcription", **fields}), flush=True)


def speech_dir() -> Path:
    configured = os.environ.get("MEETBOT_SPEECH_DIR")
    return Path(configured) if configured else REPO.parent / "shared" / "data" / "speech"


def load(name: str) -> npt.NDArray[np.int16]:
    with wave.open(str(speech_dir() / name), "rb") as wav:
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.int16)


def ref(name: str) -> str:
    return (speech_dir() / name.replace(".wav", ".txt")).read_text(encoding="utf-8")


def last_voiced_s(pcm: npt.NDArray[np.int16]) -> float:
    """Seconds from the clip start to the end of its last 20 ms block above -40 dBFS of peak."""
    block = SAMPLE_RATE // 50
    x = pcm[: len(pcm) - len(pcm) % block].astype(np.float32).reshape(-1, block)
    rms = np.sqrt(np.mean(x * x, axis=1))
    loud = np.nonzero(rms > 0.01 * float(np.abs(pcm).max()))[0]
    return float((loud[-1] + 1) * block / SAMPLE_RATE) if len(loud) else 0.0


def cpu_seconds() -> float:
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


def pooled(pairs: Sequence[tuple[int, int]]) -> float:
    errors, words = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return round(errors / words, 4) if words else 0.0


def frames_of(pcm: npt.NDArray[np.int16], track: str, start: float) -> list[AudioFrame]:
    return [
        AudioFrame(track, start + i / SAMPLE_RATE, pcm[i : i + FRAME])
        for i in range(0, len(pcm), FRAME)
    ]


def build_meeting() -> tuple[npt.NDArray[np.int16], list[tuple[str, str, float, float]]]:
    """The multi-speaker sequence and its turns ``(speaker, clip, start_s, speech_end_s)``."""
    rng = np.random.default_rng(11)
    parts: list[npt.NDArray[np.int16]] = [np.zeros(SAMPLE_RATE // 2, dtype=np.int16)]
    turns = []
    cursor = 0.5
    for speaker, clip in MEETING:
        pcm = load(clip)
        turns.append((speaker, clip, cursor, cursor + last_voiced_s(pcm)))
        gap = float(rng.uniform(0.5, 1.5))
        parts += [pcm, np.zeros(int(gap * SAMPLE_RATE), dtype=np.int16)]
        cursor += len(pcm) / SAMPLE_RATE + gap
    parts.append(np.zeros(SAMPLE_RATE, dtype=np.int16))
    return np.concatenate(parts), turns


async def stream(
    engine: WhisperEngine,
    silero: SileroSession | None,
    items: Sequence[AudioFrame | SpeakerActivity],
    options: TranscribeOptions,
    *,
    real_time: bool,
    track_speakers: dict[str, str] | None = None,
    multilingual: WhisperEngine | None = None,
) -> tuple[list[tuple[Segment, float]], RealtimeTranscriber, float]:
    """Replay ``items``; returns (segment, monotonic arrival) pairs, the transcriber, start."""
    transcriber = RealtimeTranscriber(
        engine,
        join_time=JOIN,
        options=options,
        vad_session=silero,
        id_prefix="bench",
        track_speakers=track_speakers,
        multilingual=multilingual,
    )
    got: list[tuple[Segment, float]] = []

    async def collect() -> None:
        async for segment in transcriber.segments():
            got.append((segment, time.monotonic()))

    began = time.monotonic()
    async with asyncio.TaskGroup() as group:
        group.create_task(collect())
        async with transcriber:
            for item in items:
                if isinstance(item, SpeakerActivity):
                    transcriber.speaker_activity(item)
                    continue
                if real_time:
                    # A frame is available once its last sample has been "spoken".
                    delay = began + (item.end_time - JOIN) - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                await transcriber.feed(item)
    return got, transcriber, began


def text_of(got: Sequence[tuple[Segment, float]]) -> str:
    return " ".join(s.text for s, _ in sorted(got, key=lambda p: p[0].start) if s.completed)


async def run_model(
    base: TranscribeOptions,
    skip_realtime: bool,
    only_realtime: bool,
    only: str,
    styles: Sequence[str] = ("polite", "conversation"),
    layouts: Sequence[Layout] = ("per_speaker", "mixed"),
) -> None:
    model = base.model
    t0 = time.perf_counter()
    engine = await asyncio.to_thread(
        WhisperEngine.load, resolve_model(model, REPO / "data" / "models")
    )
    silero = SileroSession()
    emit(
        model=model,
        metric="load_seconds",
        value=round(time.perf_counter() - t0, 3),
        rss_mb=round(psutil.Process().memory_info().rss / 2**20, 1),
    )
    if only == "conversation":
        await conversations(engine, silero, base, styles, layouts)
        return
    if only == "language":
        await languages(engine, silero, base)
        return

    meeting, turns = build_meeting()
    meeting_ref = " ".join(ref(clip) for _, clip in MEETING)
    mframes = frames_of(meeting, "mix", JOIN)
    if not only_realtime:
        await offline_and_fast(engine, silero, base, mframes, turns, meeting_ref)
    if not skip_realtime:
        await real_time_replay(engine, silero, base, meeting, mframes, turns, meeting_ref)
        await conversations(engine, silero, base)
        await languages(engine, silero, base)
    emit(model=model, metric="peak_rss_mb", value=round(peak_rss_mb(), 1))


def conversation_row(
    model: str,
    style: str,
    layout: Layout,
    talk: Conversation,
    finals: Sequence[Final],
    cpu: float,
) -> dict[str, Any]:
    """The section 5 figures of one run, scored by :func:`bench.conversation.score`.

    Shared by our transcriber's rows and bench.whisperlive's, so both are scored alike.

    Args:
        model: Model name (or the system's, e.g. ``whisperlive:tiny.en``).
        style: ``polite`` or ``conversation``.
        layout: The track layout streamed.
        talk: The conversation.
        finals: Final segments with their arrival (seconds from the stream's start).
        cpu: CPU seconds the transcribing process spent on it.

    Returns:
        The row's fields (``metric="conversation"``), ready for :func:`emit`.
    """
    result = score(talk, finals, layout)
    return {
        "model": model,
        "metric": "conversation",
        "style": style,
        "layout": layout,
        "audio_s": round(talk.duration, 1),
        "turns": result.turns,
        "turns_without_final": [t.speaker for t in result.lost],
        "turn_end_to_final_p50_s": pct(result.delays, 50),
        "turn_end_to_final_p95_s": pct(result.delays, 95),
        "turn_end_to_final_max_s": pct(result.delays, 100),
        "goal_p50_s": 0.8,
        "goal_p95_s": 2.5,
        "wer": round(result.wer, 4),
        "speaker_word_accuracy": round(result.speaker_accuracy, 4),
        "finals_spanning_two_speakers": len(result.spanning),
        "finals": len(finals),
        "cpu_s_per_audio_s": round(cpu / talk.duration, 3),
    }


async def conversations(
    engine: WhisperEngine,
    silero: SileroSession,
    base: TranscribeOptions,
    styles: Sequence[str] = ("polite", "conversation"),
    layouts: Sequence[Layout] = ("per_speaker", "mixed"),
) -> None:
    """Section 5: polite and natural conversation, both track layouts, in real time."""
    model = base.model
    for style in styles:
        talk = build_conversation(speech_dir(), "polite" if style == "polite" else "conversation")
        for layout in layouts:
            named = {f"track-{n}": n for n in talk.speakers} if layout == "per_speaker" else None
            c0 = cpu_seconds()
            got, transcriber, began = await stream(
                engine,
                silero,
                stream_items(talk, layout, JOIN),
                base,
                real_time=True,
                track_speakers=named,
            )
            cpu = cpu_seconds() - c0
            finals = [
                Final(s.text, s.speaker, s.start, s.end, at - began)
                for s, at in got
                if s.completed and s.text
            ]
            metrics = transcriber.metrics.snapshot()
            emit(
                **conversation_row(model, style, layout, talk, finals, cpu),
                decodes={k[8:]: v for k, v in metrics.items() if k.startswith("decodes_")},
                # The floor under any latency: one decode, slower the busier the machine.
                mean_decode_s=round(
                    metrics["decode_seconds"]
                    / max(1, sum(v for k, v in metrics.items() if k.startswith("decodes_"))),
                    3,
                ),
                partial_interval_s=round(metrics["partial_interval_s"], 2),
            )


# Non-English speech of the corpus (sources and licences in its MANIFEST.tsv): MLS Spanish
# (CC BY 4.0), a French sentence (BSD-3-Clause repository file), a LibriVox German reading
# (public domain; its first 20 s) and AISHELL-1 Mandarin (Apache 2.0); JFK as the English check.
LANGUAGE_CLIPS = [
    ("es", "es_mls_13697_11991_000000.wav", None),
    ("fr", "fr_sr_french.wav", None),
    ("de", "de_aeneas_librivox.wav", 20.0),
    ("zh", "zh_aishell_BAC009S0724W0121.wav", None),
    ("en", "jfk.wav", None),
]


def _spaced(text: str) -> str:
    """Characters separated by spaces (WER over this is the CER of unspaced scripts)."""
    return " ".join(ch for ch in text if not ch.isspace() and ch.isalnum())


async def languages(engine: WhisperEngine, silero: SileroSession, base: TranscribeOptions) -> None:
    """Section 6: each language with no ``language`` set, in real time, partials on."""
    model = base.model
    multilingual: WhisperEngine | None = None
    if not engine.multilingual:
        multilingual = await asyncio.to_thread(
            WhisperEngine.load, resolve_model("base", REPO / "data" / "models")
        )
    for expected, clip, seconds in LANGUAGE_CLIPS:
        pcm = load(clip)
        if seconds is not None:
            pcm = pcm[: int(seconds * SAMPLE_RATE)]
        audio = np.concatenate([pcm, np.zeros(SAMPLE_RATE, dtype=np.int16)])
        got, _, began = await stream(
            engine,
            silero,
            frames_of(audio, "t", JOIN),
            base,
            real_time=True,
            multilingual=multilingual,
        )
        timed = [(s, at) for s, at in got if s.completed and s.text]
        text = " ".join(s.text for s, _ in sorted(timed, key=lambda p: p[0].start))
        reference = ref(clip)
        if seconds is not None:
            reference = " ".join(reference.split()[: len(text.split())])
        if expected == "zh":
            errs = word_errors(_spaced(reference), _spaced(text))
        else:
            errs = word_errors(reference, text)
        speech_end = last_voiced_s(pcm)
        last = max((at for _, at in timed), default=None)
        emit(
            model=model,
            metric="language",
            clip=clip,
            expected=expected,
            detected=sorted({s.language for s, _ in timed if s.language}),
            wer=round(errs[0] / max(1, errs[1]), 4),
            cer=expected == "zh",
            speech_end_to_last_final_s=None
            if last is None
            else round(last - began - speech_end, 3),
            truncated_reference=seconds is not None,
            text=text[:120],
        )


async def offline_and_fast(
    engine: WhisperEngine,
    silero: SileroSession,
    base: TranscribeOptions,
    mframes: list[AudioFrame],
    turns: list[tuple[str, str, float, float]],
    meeting_ref: str,
) -> None:
    """Sections 1–3: offline WER/RTF, fast streaming WER, the VAD comparison."""
    model = base.model
    offline5: list[tuple[int, int]] = []
    offline1: list[tuple[int, int]] = []
    streamed: list[tuple[int, int]] = []
    audio_s = cpu5 = cpu1 = wall5 = wall1 = 0.0
    fast = base.model_copy(update={"partials": False})
    for clip in CLIPS:
        pcm = load(clip)
        audio = pcm.astype(np.float32) / 32768.0
        audio_s += len(pcm) / SAMPLE_RATE
        row: dict[str, Any] = {"model": model, "metric": "clip_wer", "clip": clip}
        for beam, pool in ((5, offline5), (1, offline1)):
            c0, w0 = cpu_seconds(), time.perf_counter()
            result = await asyncio.to_thread(
                engine.decode,
                audio,
                language="en",
                task=Task.TRANSCRIBE,
                options=DecodeOptions(beam_size=beam, without_timestamps=False),
            )
            c1, w1 = cpu_seconds() - c0, time.perf_counter() - w0
            if beam == 5:
                cpu5, wall5 = cpu5 + c1, wall5 + w1
            else:
                cpu1, wall1 = cpu1 + c1, wall1 + w1
            errs = word_errors(ref(clip), result.text)
            pool.append(errs)
            row[f"offline_beam{beam}"] = round(errs[0] / max(1, errs[1]), 4)
        pad = np.zeros(SAMPLE_RATE, dtype=np.int16)
        got, _, _ = await stream(
            engine, silero, frames_of(np.concatenate([pcm, pad]), "t", JOIN), fast, real_time=False
        )
        errs = word_errors(ref(clip), text_of(got))
        streamed.append(errs)
        row["streaming"] = round(errs[0] / max(1, errs[1]), 4)
        row["words"] = errs[1]
        emit(**row)
    emit(
        model=model,
        metric="offline",
        beam=5,
        wer=pooled(offline5),
        rtf=round(wall5 / audio_s, 4),
        cpu_s=round(cpu5, 2),
        audio_s=round(audio_s, 1),
    )
    emit(
        model=model,
        metric="offline",
        beam=1,
        wer=pooled(offline1),
        rtf=round(wall1 / audio_s, 4),
        cpu_s=round(cpu1, 2),
        audio_s=round(audio_s, 1),
    )
    ratio = pooled(streamed) / pooled(offline5) if pooled(offline5) else None
    emit(
        model=model,
        metric="streaming_fast",
        wer=pooled(streamed),
        ratio_to_offline_beam5=ratio and round(ratio, 3),
        ratio_to_offline_beam1=round(pooled(streamed) / pooled(offline1), 3)
        if pooled(offline1)
        else None,
    )

    # 3. VAD choice on the multi-speaker sequence.
    for vad in ("silero", "energy"):
        opts = base.model_copy(update={"partials": False, "vad": vad})
        got, _, _ = await stream(
            engine, silero if vad == "silero" else None, mframes, opts, real_time=False
        )
        finals = [s for s, _ in got if s.completed and s.text]
        missed = sum(
            1 for _, _, lo, hi in turns if not any(s.start < hi and lo < s.end for s in finals)
        )
        errs = word_errors(meeting_ref, text_of(got))
        emit(
            model=model,
            metric="vad",
            vad=vad,
            turns=len(turns),
            turns_without_segment=missed,
            wer=round(errs[0] / errs[1], 4),
            segments=len(finals),
        )


async def real_time_replay(
    engine: WhisperEngine,
    silero: SileroSession,
    base: TranscribeOptions,
    meeting: npt.NDArray[np.int16],
    mframes: list[AudioFrame],
    turns: list[tuple[str, str, float, float]],
    meeting_ref: str,
) -> None:
    """Section 4: real-time replay with partials and speaker activity; latency figures."""
    model = base.model
    # How long one utterance decode takes right now: latency is about 0.16 s + this.
    probe = load("ls_testclean_61-70968-0000.wav").astype(np.float32) / 32768.0
    walls, cpus = [], []
    for _ in range(3):
        c0, w0 = cpu_seconds(), time.perf_counter()
        await asyncio.to_thread(
            engine.decode, probe, language="en", task=Task.TRANSCRIBE, options=DecodeOptions()
        )
        walls.append(time.perf_counter() - w0)
        cpus.append(cpu_seconds() - c0)
    emit(
        model=model,
        metric="decode_probe_4.9s_clip",
        wall_s_median=pct(walls, 50),
        cpu_s_median=pct(cpus, 50),
    )
    activities: list[AudioFrame | SpeakerActivity] = []
    for speaker, _, lo, hi in turns:
        activities += [
            SpeakerActivity(speaker, True, JOIN + lo + 0.2),
            SpeakerActivity(speaker, False, JOIN + hi + 0.3),
        ]
    items = sorted(
        [*mframes, *activities],
        key=lambda i: i.at if isinstance(i, SpeakerActivity) else i.end_time,
    )
    opts = base
    c0 = cpu_seconds()
    got, transcriber, began = await stream(engine, silero, items, opts, real_time=True)
    cpu = cpu_seconds() - c0
    timed = [(s, at) for s, at in got if s.completed and s.text]
    per_final = [at - (began + s.end) for s, at in timed]
    per_turn = []
    for _, _, _, hi in turns:
        # The final that covers the turn's end is the one a listener waits for.
        covering = [at for s, at in timed if s.start < hi and hi - 1.0 < s.end]
        if covering:
            per_turn.append(max(covering) - (began + hi))

    def turn_speaker(segment: Segment) -> str | None:
        middle = (segment.start + segment.end) / 2
        return next((spk for spk, _, lo, hi in turns if lo - 0.5 <= middle <= hi + 0.5), None)

    right = sum(1 for s, _ in timed if s.speaker == turn_speaker(s))
    errs = word_errors(meeting_ref, text_of(got))
    audio_s = len(meeting) / SAMPLE_RATE
    metrics = transcriber.metrics.snapshot()
    emit(
        model=model,
        metric="latency_turn_end_to_final_s",
        p50=pct(per_turn, 50),
        p95=pct(per_turn, 95),
        max=pct(per_turn, 100),
        n=len(per_turn),
    )
    emit(
        model=model,
        metric="latency_segment_end_to_final_s",
        p50=pct(per_final, 50),
        p95=pct(per_final, 95),
        max=pct(per_final, 100),
        n=len(per_final),
    )
    emit(
        model=model,
        metric="streaming_realtime",
        wer=round(errs[0] / errs[1], 4),
        speaker_correct=f"{right}/{len(timed)}",
        audio_s=round(audio_s, 1),
        cpu_s=round(cpu, 2),
        cpu_s_per_audio_s=round(cpu / audio_s, 3),
        partials=metrics["partials"],
        partial_degradations=metrics["partial_degradations"],
        speculation_hits=metrics["speculation_hits"],
        speculation_misses=metrics["speculation_misses"],
        decodes={k[8:]: v for k, v in metrics.items() if k.startswith("decodes_")},
        mean_decode_s=round(
            metrics["decode_seconds"]
            / max(1, sum(v for k, v in metrics.items() if k.startswith("decodes_"))),
            3,
        ),
        partial_interval_s=round(metrics["partial_interval_s"], 2),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--skip-realtime", action="store_true", help="no real-time replay")
    parser.add_argument("--only-realtime", action="store_true", help="only the real-time replay")
    parser.add_argument(
        "--only-conversation",
        action="store_true",
        help="only the conversation scenarios (section 5)",
    )
    parser.add_argument(
        "--only-language", action="store_true", help="only the languages (section 6)"
    )
    parser.add_argument(
        "--styles", default="polite,conversation", help="conversation styles of section 5"
    )
    parser.add_argument("--layouts", default="per_speaker,mixed", help="track layouts of section 5")
    parser.add_argument(
        "--realtime-window-s",
        default="default",
        help="least encoder window of realtime decodes, seconds, or 'full' for Whisper's 30 s "
        "(the default is TranscribeOptions')",
    )
    args = parser.parse_args(argv)
    window: dict[str, float | None] = {}
    if args.realtime_window_s == "full":
        window["realtime_window_s"] = None
    elif args.realtime_window_s != "default":
        window["realtime_window_s"] = float(args.realtime_window_s)
    layouts: list[Layout] = []
    for layout in args.layouts.split(","):
        if layout not in ("per_speaker", "mixed"):
            parser.error(f"unknown layout {layout!r}")
        layouts.append("mixed" if layout == "mixed" else "per_speaker")
    only = "conversation" if args.only_conversation else "language" if args.only_language else ""
    if not (speech_dir() / "MANIFEST.tsv").is_file():
        print(f"speech corpus not found at {speech_dir()}: set MEETBOT_SPEECH_DIR", file=sys.stderr)
        return 2
    if args.one:
        asyncio.run(
            run_model(
                TranscribeOptions(model=args.one, **window),
                args.skip_realtime,
                args.only_realtime,
                only,
                args.styles.split(","),
                layouts,
            )
        )
        return 0
    emit(metric="machine", cpus=os.cpu_count(), load=[round(x, 2) for x in os.getloadavg()])
    for model in args.models.split(","):
        cmd = [sys.executable, "-m", "bench.transcription", "--one", model]
        cmd += ["--skip-realtime"] if args.skip_realtime else []
        cmd += ["--only-realtime"] if args.only_realtime else []
        cmd += ["--only-conversation"] if args.only_conversation else []
        cmd += ["--only-language"] if args.only_language else []
        cmd += ["--styles", args.styles, "--layouts", args.layouts]
        cmd += ["--realtime-window-s", args.realtime_window_s]
        # One process per model so each peak RSS is that model's own.
        done = subprocess.run(cmd, cwd=REPO, check=False)  # noqa: S603 - our own module
        if done.returncode:
            return done.returncode
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
