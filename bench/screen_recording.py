"""Screen recording benchmark: what ffmpeg x11grab costs on the bot's display runtime.

Starts the runtime the bot VM runs (images/runtime/ through
:class:`agent.process.runtime.BotRuntime`), opens headful Chromium on it showing either a quiet
meeting-like page (``static``: tiles and a clock that changes once a second) or a page that repaints
the whole screen at 30 fps (``motion``: a moving gradient and a ticker, the worst case of a shared
screen), plays real speech into the ``meeting`` sink, and records it with
:class:`agent.recording.screen.ScreenCapture` for ``--seconds`` per format and frame rate. The CPU
is ffmpeg's own (user + system time from ``/proc`` over the recording), as a percentage of one core;
Chromium's is not included.

One JSON line per run: ``{"bench": "screen_recording", "content", "format", "fps", "seconds",
"ffmpeg_cpu_pct", "finalize_s", "frames", "measured_fps", "size_bytes", "bytes_per_s", "load1",
"cores"}`` (``finalize_s``: the rewrap, or for webm the VP8 encode, after the meeting;
``frames`` below ``fps`` × ``seconds`` means the capture fell behind).

Usage: ``.venv/bin/python -m bench.screen_recording [--seconds 30] [--fps 15 25]
[--formats mp4 webm] [--content static motion]`` (``MEETBOT_SPEECH_DIR``, else the
speech packaged with testmeeting, for the speech).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
from playwright.async_api import async_playwright

from agent.contracts.bot_config import RecordingFormat
from agent.process.runtime import BotRuntime, Runtime, scripts_dir
from agent.recording.screen import ScreenCapture, ScreenSource, finalize_args
from testmeeting.packaged_speech import corpus_or_packaged

STATIC = """<body style="margin:0;background:#202124;color:#e8eaed;font:20px sans-serif">
<div style="display:flex;gap:12px;padding:12px">
<div style="width:400px;height:225px;background:#3c4043">Alice</div>
<div style="width:400px;height:225px;background:#3c4043">Notetaker</div></div>
<p id=c style="position:fixed;bottom:20px;left:20px"></p>
<script>setInterval(() => c.textContent = new Date().toISOString(), 1000)</script></body>"""

MOTION = """<body style="margin:0;overflow:hidden"><canvas id=v width=1280 height=720></canvas>
<script>const g = v.getContext('2d'); let t = 0;
function draw() { t += 1; const grd = g.createLinearGradient(0, 0, 1280, 720);
grd.addColorStop(0, `hsl(${t % 360},70%,40%)`);
grd.addColorStop(1, `hsl(${(t + 180) % 360},70%,40%)`);
g.fillStyle = grd; g.fillRect(0, 0, 1280, 720); g.fillStyle = '#fff'; g.font = '48px sans-serif';
for (let i = 0; i < 8; i++)
  g.fillText('meetbot ' + (t + i * 37), (t * 7 + i * 160) % 1400 - 100, 80 + i * 80);
requestAnimationFrame(draw); } draw();</script></body>"""


def _cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system + times.children_user + times.children_system)


def _play_speech(runtime: Runtime) -> subprocess.Popen[bytes] | None:
    corpus = Path(os.environ.get("MEETBOT_SPEECH_DIR", "../shared/data/speech"))
    speech = corpus_or_packaged(corpus) / "LJ001-0001.wav"  # packaged clips if no corpus
    loop = f'while paplay --device=meeting "{speech}"; do :; done'
    return subprocess.Popen(  # noqa: S603 - fixed argv, the benchmark's own loop
        ["/bin/sh", "-c", loop],
        env={**os.environ, "PULSE_SERVER": runtime.pulse_server},
        start_new_session=True,
    )


async def _record(
    runtime: Runtime, fmt: RecordingFormat, fps: int, seconds: float, work: Path
) -> dict[str, object]:
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg is not None
    capture = ScreenCapture(
        ScreenSource(runtime.display, runtime.pulse_server, 1280, 720, fps), fmt, work / "s.mkv"
    )
    await capture.start(ffmpeg)
    assert capture.pid is not None
    await asyncio.sleep(1.0)  # past the inputs' opening
    began, cpu0 = time.monotonic(), _cpu_seconds(capture.pid)
    await asyncio.sleep(seconds)
    cpu1, ended = _cpu_seconds(capture.pid), time.monotonic()
    await capture.stop()
    out = work / f"out.{fmt.value}"
    finalize_began = time.monotonic()
    finalize = await asyncio.create_subprocess_exec(
        ffmpeg, *finalize_args(capture.path, fmt, out, capture.audio_delay_s)
    )
    assert await finalize.wait() == 0
    finalize_s = time.monotonic() - finalize_began
    counted = await asyncio.create_subprocess_exec(
        "ffprobe",
        *("-v", "error", "-select_streams", "v:0", "-count_frames"),
        *("-show_entries", "stream=nb_read_frames:format=duration", "-of", "json", str(out)),
        stdout=asyncio.subprocess.PIPE,
    )
    probed = json.loads((await counted.communicate())[0] or b"{}")
    streams = probed.get("streams") or [{}]
    frames = int(streams[0].get("nb_read_frames", 0))
    duration = float(probed.get("format", {}).get("duration", 0.0))
    size = out.stat().st_size
    length = duration or seconds
    return {
        "format": fmt.value,
        "fps": fps,
        "seconds": round(ended - began, 1),
        "ffmpeg_cpu_pct": round(100 * (cpu1 - cpu0) / (ended - began), 1),
        "finalize_s": round(finalize_s, 1),
        "frames": frames,
        "measured_fps": round(frames / duration, 2) if duration else None,
        "size_bytes": size,
        "bytes_per_s": round(size / length),
        "load1": round(os.getloadavg()[0], 2),
        "cores": os.cpu_count(),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--fps", type=int, nargs="+", default=[15])
    parser.add_argument("--formats", nargs="+", default=["mp4", "webm"])
    parser.add_argument("--content", nargs="+", default=["static", "motion"])
    args = parser.parse_args()
    async with BotRuntime(scripts_dir()) as runtime, async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=False,
            args=["--no-sandbox", "--window-position=0,0", "--window-size=1280,720"],
            env={**os.environ, "DISPLAY": runtime.display, "PULSE_SERVER": runtime.pulse_server},
        )
        page = await browser.new_page(viewport={"width": 1280, "height": 720})
        player = await asyncio.to_thread(_play_speech, runtime)  # may decode the clips
        try:
            for content in args.content:
                await page.set_content(STATIC if content == "static" else MOTION)
                for fmt in args.formats:
                    for fps in args.fps:
                        with tempfile.TemporaryDirectory() as tmp:
                            row = await _record(
                                runtime, RecordingFormat(fmt), fps, args.seconds, Path(tmp)
                            )
                        print(json.dumps({"bench": "screen_recording", "content": content, **row}))
        finally:
            if player is not None:
                os.killpg(player.pid, 15)
                player.wait()
            await browser.close()


if __name__ == "__main__":
    asyncio.run(main())
