"""testmeeting benchmark: join time, speech delivery delay and CPU cost of a simulated meeting.

Prints one JSON line per figure (docs/architecture.md §9); nothing is asserted. For each skin one
Chromium page joins a room without lobby in which two simulated participants say one
LibriSpeech clip each, and an init script timestamps every block of remote audio the page
receives (as a bot's in-page capture would). Figures:

- ``join_seconds``: ``page.goto`` of the real-shaped URL → the leave button is visible
  (launcher/permission, name, join included).
- ``speech_onset_delay_seconds``: the timeline's ``speech.t`` (server sends the clip) → the
  first loud sample heard in the page, minus the clip's own leading silence, per utterance;
  the simulator's own offset to subtract from end-to-end latencies measured against its
  timeline. It includes the measuring ScriptProcessor's block (64 ms, half counted).
- ``chromium_cpu_percent`` / ``simulator_cpu_percent``: CPU of Chromium's processes and of
  this process (simulator + Playwright client) over the meeting, in percent of one core.

Usage: ``python -m bench.testmeeting_media [--platforms google_meet,zoom,teams]``.
Plays the speech corpus (``MEETBOT_SPEECH_DIR`` or ``../shared/data/speech``), else the
speech packaged with testmeeting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from playwright.async_api import Page, async_playwright, expect

from testmeeting import Scenario, TestMeetingServer
from testmeeting.media import read_pcm
from testmeeting.packaged_speech import corpus_or_packaged

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
QUIET_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--autoplay-policy=no-user-gesture-required",
]
UTTERANCES = [
    ("Alice", 0.5, "ls_testclean_1089-134686-0001.wav"),  # 3.3 s
    ("Bob", 4.5, "ls_testclean_61-70968-0000.wav"),  # 4.9 s
]
MEETING_SECONDS = 10.5
IDS = {"google_meet": "ben-chma-rkk", "zoom": "81234500001", "teams": "9312345000001"}
JOIN_STEPS: dict[str, list[tuple[str, str]]] = {
    "google_meet": [
        ("fill", 'input[type="text"][aria-label="Your name"]'),
        ("click", 'button:has-text("Join now")'),
    ],
    "zoom": [
        ("click", 'button:has-text("Continue without microphone and camera")'),
        ("fill", "#input-for-name"),
        ("click", "button.preview-join-button"),
    ],
    "teams": [
        ("click", 'button:has-text("Continue on this browser")'),
        ("fill", '[data-tid="prejoin-display-name-input"]'),
        ("click", '[data-tid="prejoin-join-button"]'),
    ],
}
LEAVE = {
    "google_meet": 'button[aria-label="Leave call"]',
    "zoom": 'button[aria-label="Leave"]',
    "teams": "#hangup-button",
}

# Records every remote audio track at 16 kHz in 1024-sample blocks stamped with Date.now()
# at arrival (the block's last sample is roughly that old).
CAPTURE_JS = """
(() => {
  const Original = window.RTCPeerConnection;
  const tracks = [];
  let ctx = null;
  async function record(track) {
    if (!ctx) ctx = new AudioContext({ sampleRate: 16000 });
    await ctx.resume();
    const entry = { blocks: [] };
    tracks.push(entry);
    const node = ctx.createScriptProcessor(1024, 1, 1);
    node.onaudioprocess = (event) => {
      const data = event.inputBuffer.getChannelData(0);
      let peak = 0;
      for (let i = 0; i < data.length; i++) peak = Math.max(peak, Math.abs(data[i]));
      entry.blocks.push([Date.now() / 1000, peak]);
    };
    ctx.createMediaStreamSource(new MediaStream([track])).connect(node);
    node.connect(ctx.destination);
  }
  window.RTCPeerConnection = function (...args) {
    const pc = new Original(...args);
    pc.addEventListener("track", (event) => {
      if (event.track.kind === "audio") record(event.track);
    });
    return pc;
  };
  window.RTCPeerConnection.prototype = Original.prototype;
  window.__benchBlocks = () => tracks.map((t) => t.blocks);
})();
"""
LOUD = 0.02  # peak amplitude that counts as speech (clips peak around 0.3-0.6)
BLOCK_SECONDS = 1024 / 16_000


def emit(**fields: Any) -> None:
    """Print one JSON line with the load average attached."""
    fields.setdefault("load1", round(os.getloadavg()[0], 2))
    print(json.dumps({"bench": "testmeeting", **fields}), flush=True)


def speech_dir() -> Path:
    configured = os.environ.get("MEETBOT_SPEECH_DIR")
    corpus = Path(configured) if configured else REPO.parent / "shared" / "data" / "speech"
    return corpus_or_packaged(corpus)  # the clips packaged with testmeeting when no corpus


def chromium_processes() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "chrom" in p.name().lower()]


def cpu_seconds(processes: Sequence[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


async def join(page: Page, platform: str) -> None:
    for action, selector in JOIN_STEPS[platform]:
        if action == "fill":
            await page.fill(selector, "Bench bot")
        else:
            await page.click(selector)
    await expect(page.locator(LEAVE[platform])).to_be_visible(timeout=30_000)


async def run_platform(platform: str, speech: Path) -> None:
    scenario = Scenario.model_validate(
        {
            "platform": platform,
            "meeting_id": IDS[platform],
            "lobby": False,
            "participants": [
                {"name": name, "utterances": [{"at": at, "file": clip}]}
                for name, at, clip in UTTERANCES
            ],
        }
    )
    async with (
        TestMeetingServer(scenario=scenario, speech_dir=speech) as server,
        async_playwright() as pw,
    ):
        browser = await pw.chromium.launch(
            executable_path=CHROMIUM, args=QUIET_ARGS + server.browser_args()
        )
        try:
            page = await browser.new_page()
            await page.add_init_script(CAPTURE_JS)
            chromium = chromium_processes()
            started = time.perf_counter()
            await page.goto(server.meeting_url(platform, IDS[platform]))
            await join(page, platform)
            emit(
                platform=platform,
                figure="join_seconds",
                value=round(time.perf_counter() - started, 3),
            )
            me = psutil.Process()
            cpu_browser, cpu_self = cpu_seconds(chromium), cpu_seconds([me])
            wall = time.perf_counter()
            await asyncio.sleep(MEETING_SECONDS)
            wall = time.perf_counter() - wall
            emit(
                platform=platform,
                figure="chromium_cpu_percent",
                value=round(100 * (cpu_seconds(chromium) - cpu_browser) / wall, 1),
            )
            emit(
                platform=platform,
                figure="simulator_cpu_percent",
                value=round(100 * (cpu_seconds([me]) - cpu_self) / wall, 1),
            )
            tracks: list[list[list[float]]] = await page.evaluate("window.__benchBlocks()")
        finally:
            await browser.close()
        blocks = sorted((t, peak) for track in tracks for t, peak in track)
        room = server.room(platform, IDS[platform])
        for event in (e for e in room.timeline() if e.type == "speech"):
            assert event.file is not None
            # The clip's own leading silence is not delivery delay.
            source = np.abs(np.frombuffer(read_pcm(Path(event.file)), dtype=np.int16))
            lead = int(np.argmax(source > LOUD * 32_767)) / 16_000
            onset = next(
                (t - BLOCK_SECONDS / 2 for t, peak in blocks if t >= event.t and peak > LOUD), None
            )
            if onset is not None:
                onset -= lead
            emit(
                platform=platform,
                figure="speech_onset_delay_seconds",
                speaker=event.name,
                value=None if onset is None else round(onset - event.t, 3),
                tracks=len(tracks),
            )


async def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--platforms", default="google_meet,zoom,teams")
    args = parser.parse_args(argv)
    speech = await asyncio.to_thread(speech_dir)
    if not (speech / "MANIFEST.tsv").is_file():
        print(f"speech corpus not found at {speech}: set MEETBOT_SPEECH_DIR", file=sys.stderr)
        return 2
    for platform in args.platforms.split(","):
        await run_platform(platform, speech)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
