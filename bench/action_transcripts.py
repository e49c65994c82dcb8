"""Transcript windows for the action benchmark, taken from meetbot's own realtime transcriber.

Two sources, both run through :class:`agent.transcribe.realtime.RealtimeTranscriber` with the
default model and options, one audio track per participant (the Meet layout), frames fed as
fast as taken (the endpointing runs on frame timestamps):

* the speech corpus's conversation (:func:`testmeeting.conversation.build_conversation`,
  ``conversation`` style, clips from ``MEETBOT_SPEECH_DIR``);
* the meeting scripts of ``bench/data/action_scripts.yaml``, each participant spoken by its
  own espeak-ng voice, turns 0.25–0.7 s apart and blocks (topics) 5 s apart.

The finals are cut into windows as the intelligence worker cuts stored segments: a window
closes at a gap of ``--pause`` seconds between two finals or once it holds ``--max-speech``
seconds of speech. Prints the windows as YAML in the layout of
``bench/data/action_windows.yaml`` (``labels: []``, to be labelled by hand), each meeting
with its ``origin``.

Usage: ``MEETBOT_SPEECH_DIR=... nice -n 10 python -m bench.action_transcripts > windows.yaml``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from agent.capture.audio import SAMPLE_RATE, AudioFrame, SpeakerActivity
from agent.contracts.link import Segment
from agent.contracts.whisper_models import DEFAULT_MODEL
from agent.transcribe.engine import WhisperEngine
from agent.transcribe.models import resolve_model
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.vad import SileroSession
from bench.conversation import stream_items
from bench.transcription import JOIN, stream
from testmeeting.conversation import build_conversation
from testmeeting.media import read_pcm

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).parent / "data" / "action_scripts.yaml"
FRAME = SAMPLE_RATE // 10
BLOCK_GAP_S = 5.0
ESPEAK_SPEED = 165


@dataclass(frozen=True, slots=True)
class Final:
    """A final segment: who, what, when (seconds from the meeting's start)."""

    speaker: str | None
    text: str
    start: float
    end: float


def speak(text: str, voice: str, folder: Path) -> npt.NDArray[np.int16]:
    """``text`` in espeak-ng's ``voice`` as 16 kHz mono int16 samples."""
    wav = folder / "say.wav"
    subprocess.run(  # noqa: S603 - fixed argv, the text is our own script's
        ["espeak-ng", "-v", voice, "-s", str(ESPEAK_SPEED), "-w", str(wav), text],  # noqa: S607
        check=True,
        capture_output=True,
    )
    return np.frombuffer(read_pcm(wav), dtype=np.int16)


def lay_out(meeting: dict[str, Any], folder: Path, seed: int) -> dict[str, npt.NDArray[np.int16]]:
    """One track per participant: the meeting's turns spoken in order, silence elsewhere."""
    rng = np.random.default_rng(seed)
    placed: list[tuple[str, int, npt.NDArray[np.int16]]] = []
    cursor = 0.5
    for block in meeting["blocks"]:
        for speaker, words in block:
            pcm = speak(words, meeting["voices"][speaker], folder)
            placed.append((speaker, int(cursor * SAMPLE_RATE), pcm))
            cursor += len(pcm) / SAMPLE_RATE + float(rng.uniform(0.25, 0.7))
        cursor += BLOCK_GAP_S
    total = int((cursor + 1.0) * SAMPLE_RATE)
    tracks = {name: np.zeros(total, dtype=np.int16) for name in meeting["voices"]}
    for speaker, at, pcm in placed:
        tracks[speaker][at : at + len(pcm)] = pcm
    return tracks


def frames_of(tracks: dict[str, npt.NDArray[np.int16]]) -> list[AudioFrame | SpeakerActivity]:
    """100 ms frames of every track, in the order they become available."""
    frames = [
        AudioFrame(f"track-{name}", JOIN + i / SAMPLE_RATE, pcm[i : i + FRAME], name)
        for name, pcm in tracks.items()
        for i in range(0, len(pcm), FRAME)
    ]
    frames.sort(key=lambda frame: frame.start_time + frame.duration)
    return list(frames)


async def transcribe(
    engine: WhisperEngine, items: Sequence[AudioFrame | SpeakerActivity]
) -> list[Final]:
    """The realtime tier's finals over ``items``, in time order."""
    got, _, _ = await stream(engine, SileroSession(), items, TranscribeOptions(), real_time=False)
    segments: list[Segment] = [s for s, _ in got if s.completed and s.text.strip()]
    segments.sort(key=lambda s: s.start)
    return [Final(s.speaker, s.text.strip(), s.start, s.end) for s in segments]


def windows_of(finals: Sequence[Final], pause: float, max_speech: float) -> list[list[Final]]:
    """Finals cut where the worker cuts: a pause between two finals, or enough speech."""
    windows: list[list[Final]] = []
    current: list[Final] = []
    speech = 0.0
    for final in finals:
        if current and (final.start - current[-1].end >= pause or speech >= max_speech):
            windows.append(current)
            current, speech = [], 0.0
        current.append(final)
        speech += final.end - final.start
    if current:
        windows.append(current)
    return windows


def as_yaml_meeting(
    meeting_id: str, origin: str, windows: Sequence[Sequence[Final]]
) -> dict[str, Any]:
    """A meeting in the layout of ``bench/data/action_windows.yaml`` (labels left empty)."""
    return {
        "id": meeting_id,
        "origin": origin,
        "windows": [
            {"lines": [[f.speaker or "Unknown", f.text] for f in window], "labels": []}
            for window in windows
        ],
    }


async def amain(args: argparse.Namespace) -> None:
    """Transcribe every source, print the windows."""
    engine = await asyncio.to_thread(
        WhisperEngine.load, resolve_model(DEFAULT_MODEL, REPO / "data" / "models")
    )
    out: list[dict[str, Any]] = []
    speech_dir = Path(os.environ.get("MEETBOT_SPEECH_DIR", REPO.parent / "shared/data/speech"))
    if not args.only:
        conversation = build_conversation(speech_dir, "conversation")
        finals = await transcribe(engine, stream_items(conversation, "per_speaker", JOIN))
        out.append(
            as_yaml_meeting(
                "tx-corpus-conversation",
                f"our realtime transcript ({DEFAULT_MODEL}) of the speech corpus's conversation "
                "(testmeeting.conversation, conversation style, per-speaker tracks)",
                windows_of(finals, args.pause, args.max_speech),
            )
        )
    scripts = yaml.safe_load(SCRIPTS.read_text())["meetings"]
    with tempfile.TemporaryDirectory() as tmp:
        for n, meeting in enumerate(scripts):
            if args.only and meeting["id"] not in args.only.split(","):
                continue
            tracks = lay_out(meeting, Path(tmp), seed=n)
            finals = await transcribe(engine, frames_of(tracks))
            out.append(
                as_yaml_meeting(
                    meeting["id"],
                    f"our realtime transcript ({DEFAULT_MODEL}) of bench/data/action_scripts.yaml "
                    f"{meeting['id']} ({meeting['kind']}) spoken by espeak-ng",
                    windows_of(finals, args.pause, args.max_speech),
                )
            )
            print(f"# {meeting['id']}: {len(finals)} finals", flush=True)
    print(yaml.safe_dump({"meetings": out}, sort_keys=False, width=200))


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pause", type=float, default=4.0)
    parser.add_argument("--max-speech", type=float, default=30.0)
    parser.add_argument("--only", default="", help="comma-separated script ids only")
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
