"""Side-by-side row: the conversation scenarios through a running WhisperLive server.

Streams the same audio as ``bench.transcription`` section 5 (``testmeeting.conversation``, the
polite and the natural conversation, per-speaker and mixed layouts) at 1x, in 100 ms frames, to
a WhisperLive server over its websocket protocol, takes its completed segments as finals and
scores them with the same code as ours (:func:`bench.transcription.conversation_row`). One
stream per connection, as WhisperLive takes them: per-speaker layout = one connection per
speaker's track (its finals carry that speaker's name), mixed = one connection (finals carry no
name: WhisperLive has no speaker signal, so its word-level speaker accuracy there is 0).

Protocol (WhisperLive 0.10.0, ``whisper_live/client.py`` ``Client.on_open``/``on_message``/
``process_segments`` and ``server.py`` ``get_audio_from_websocket``): a JSON text message of
options (``uid``, ``language``, ``task``, ``model``, ``use_vad``, ``audio_format`` ...), then the
server's ``{"uid", "message": "SERVER_READY", "backend"}``; binary messages of mono 16 kHz PCM
(``audio_format: "int16"``); the server sends ``{"uid", "segments": [...]}`` with the last few
segments (``start``/``end`` as strings of seconds from the stream's start, ``text``,
``completed``); a completed segment is new when it starts at or after the previous one's end
(the client's own rule); ``END_OF_AUDIO`` (bytes) ends the stream, the server transcribes what
it holds and closes.

The server runs in its own venv (never a meetbot dependency) on the bundled CTranslate2 tiny.en,
no download at run time; see bench/README or the report for the exact commands. CPU per audio
second is the server process's (``--pid``).

Usage: ``python -m bench.whisperlive --url ws://127.0.0.1:9090 --pid PID
[--styles polite,conversation] [--layouts per_speaker,mixed] [--tail-s 15]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Sequence

import aiohttp
import numpy as np
import psutil

from agent.audio import SAMPLE_RATE, AudioFrame
from bench.conversation import FRAME, Final, Layout, stream_items
from bench.transcription import JOIN, conversation_row, emit, speech_dir
from testmeeting.conversation import build_conversation

_END_OF_AUDIO = b"END_OF_AUDIO"


async def _connect(
    session: aiohttp.ClientSession, url: str, model: str
) -> aiohttp.ClientWebSocketResponse:
    """Open one stream and wait for the server's SERVER_READY (model loaded)."""
    ws = await session.ws_connect(url, max_msg_size=0)
    # The options WhisperLive's own client sends by default (client.py Client.__init__).
    await ws.send_str(
        json.dumps(
            {
                "uid": str(uuid.uuid4()),
                "language": "en",
                "task": "transcribe",
                "model": model,
                "use_vad": True,
                "send_last_n_segments": 10,
                "no_speech_thresh": 0.45,
                "clip_audio": False,
                "same_output_threshold": 10,
                "audio_format": "int16",
            }
        )
    )
    while True:
        message = await ws.receive(timeout=300)
        if message.type != aiohttp.WSMsgType.TEXT:
            raise RuntimeError(f"WhisperLive closed before SERVER_READY: {message!r}")
        body = json.loads(message.data)
        if body.get("message") == "SERVER_READY":
            return ws
        if body.get("status") in ("WAIT", "ERROR"):
            raise RuntimeError(f"WhisperLive refused the stream: {body}")


async def _receive(
    ws: aiohttp.ClientWebSocketResponse,
    speaker: str | None,
    began: list[float],
    finals: list[Final],
) -> None:
    """Collect completed segments until the server closes; arrival from ``began[0]``."""
    last_end: float | None = None
    async for message in ws:
        if message.type != aiohttp.WSMsgType.TEXT:
            continue
        body = json.loads(message.data)
        for segment in body.get("segments", []):
            if not segment.get("completed"):
                continue
            start, end = float(segment["start"]), float(segment["end"])
            if last_end is not None and start < last_end:
                continue
            last_end = end
            text = str(segment["text"]).strip()
            if text:
                finals.append(Final(text, speaker, start, end, time.monotonic() - began[0]))


async def stream_conversation(
    url: str, style: str, layout: Layout, tail_s: float, model: str = "tiny.en"
) -> tuple[list[Final], float]:
    """Stream one scenario at 1x, then ``tail_s`` of silence; returns (finals, audio seconds)."""
    talk = build_conversation(speech_dir(), "polite" if style == "polite" else "conversation")
    frames = [item for item in stream_items(talk, layout, JOIN) if isinstance(item, AudioFrame)]
    tracks = sorted({frame.track_id for frame in frames})
    finals: list[Final] = []
    began = [0.0]
    async with aiohttp.ClientSession() as session:
        sockets = {track: await _connect(session, url, model) for track in tracks}
        speakers = {frame.track_id: frame.speaker for frame in frames}
        began[0] = time.monotonic()
        async with asyncio.TaskGroup() as group:
            for track, ws in sockets.items():
                group.create_task(_receive(ws, speakers[track], began, finals))
            for frame in frames:
                # A frame is available once its last sample has been "spoken".
                delay = began[0] + (frame.end_time - JOIN) - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                pcm = np.asarray(frame.pcm, dtype="<i2")
                await sockets[frame.track_id].send_bytes(pcm.tobytes())
            # WhisperLive drops what it has not decoded yet on END_OF_AUDIO (server.py
            # recv_audio: cleanup right after the loop), so a lagging server would lose the
            # last turns to the benchmark's end, not to its design: keep the streams open
            # with silence at 1x for ``tail_s`` first, as a meeting goes on after a turn.
            silence = np.zeros(FRAME, dtype="<i2").tobytes()
            end = frames[-1].end_time - JOIN if frames else 0.0
            for n in range(1, int(tail_s * SAMPLE_RATE / FRAME) + 1):
                delay = began[0] + end + n * FRAME / SAMPLE_RATE - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                for ws in sockets.values():
                    await ws.send_bytes(silence)
            for ws in sockets.values():
                await ws.send_bytes(_END_OF_AUDIO)
    return finals, talk.duration


async def run(
    url: str, pid: int | None, styles: Sequence[str], layouts: Sequence[Layout], tail_s: float
) -> None:
    """Emit one ``conversation`` row per style and layout, as bench.transcription does."""
    server = psutil.Process(pid) if pid else None
    for style in styles:
        talk = build_conversation(speech_dir(), "polite" if style == "polite" else "conversation")
        for layout in layouts:
            c0 = sum(server.cpu_times()[:2]) if server else 0.0
            finals, _ = await stream_conversation(url, style, layout, tail_s)
            cpu = sum(server.cpu_times()[:2]) - c0 if server else float("nan")
            emit(
                **conversation_row("whisperlive:tiny.en", style, layout, talk, finals, cpu),
                cpu_of="whisperlive server process" if server else "not measured (no --pid)",
                silence_tail_s=tail_s,
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run; 2 when the speech corpus is missing."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="ws://127.0.0.1:9090", help="WhisperLive websocket")
    parser.add_argument("--pid", type=int, help="WhisperLive server pid (for its CPU seconds)")
    parser.add_argument("--styles", default="polite,conversation")
    parser.add_argument("--layouts", default="per_speaker,mixed")
    parser.add_argument(
        "--tail-s",
        type=float,
        default=15.0,
        help="silence streamed after the audio before END_OF_AUDIO (WhisperLive drops its backlog)",
    )
    args = parser.parse_args(argv)
    layouts: list[Layout] = []
    for layout in args.layouts.split(","):
        if layout not in ("per_speaker", "mixed"):
            parser.error(f"unknown layout {layout!r}")
        layouts.append("mixed" if layout == "mixed" else "per_speaker")
    if not (speech_dir() / "MANIFEST.tsv").is_file():
        print(f"speech corpus not found at {speech_dir()}: set MEETBOT_SPEECH_DIR", file=sys.stderr)
        return 2
    asyncio.run(run(args.url, args.pid, args.styles.split(","), layouts, args.tail_s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
