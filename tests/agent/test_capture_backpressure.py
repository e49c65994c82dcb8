"""The page's audio follows the agent's pace: a stalled agent gets a few large calls, not one
per block, and no audio is lost.

A plain page (no simulator code) sends four tones to itself over a loopback WebRTC
connection, so the injected capture sees four remote tracks, as in a meeting of four. The
agent's event loop is then blocked for :data:`STALL_S` seconds (an agent busy decoding on a
loaded machine). Before issue 19's fix the page made one binding call per 100 ms block per
track whatever Python's pace, so the stall left a call per block queued in Playwright's driver,
each held until Python answered it. Measured with this page before the fix: 264 calls after a
6 s stall, 1216 after a 30 s one, with the node driver 25 MB larger (about 0.8 MB per second
of lag with four tracks; the 20-minute soak at load 12–21, with answers minutes late, saw it
grow 93 → 445 MB). After it: 35 calls in all for the same 30 s stall and 3 s before it, the
driver +0.4 MB. Now at most two calls wait at a time and the blocks made meanwhile go in the
next one; the bound of 12 calls leaves room for the ten calls a second of normal pace while
the test polls.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agent.browser.session import BrowserSession
from agent.capture.pcm import AudioCapture
from agent.process.settings import AgentSettings

pytestmark = pytest.mark.browser

STALL_S = 6.0
TRACKS = 4
PAGE = "https://loopback.meetbot.test/"  # a secure context: AudioWorklet needs one
LOOPBACK = (
    """<!doctype html><title>loopback</title><body><script>
(async () => {
  const ctx = new AudioContext(); ctx.resume();
  const a = new RTCPeerConnection(), b = new RTCPeerConnection();
  a.onicecandidate = (e) => e.candidate && b.addIceCandidate(e.candidate);
  b.onicecandidate = (e) => e.candidate && a.addIceCandidate(e.candidate);
  b.ontrack = (e) => {  // remote audio plays through an element, as on a meeting page
    const el = document.createElement('audio'); el.autoplay = true;
    el.srcObject = e.streams[0] || new MediaStream([e.track]);
    document.body.appendChild(el); el.play().catch(() => {});
  };
  for (let i = 0; i < TRACKS; i++) {
    const osc = ctx.createOscillator(); osc.frequency.value = 220 * (i + 1);
    const out = ctx.createMediaStreamDestination(); osc.connect(out); osc.start();
    a.addTrack(out.stream.getAudioTracks()[0], out.stream);
  }
  const offer = await a.createOffer(); await a.setLocalDescription(offer);
  await b.setRemoteDescription(offer);
  const answer = await b.createAnswer(); await b.setLocalDescription(answer);
  await a.setRemoteDescription(answer);
})();
</script></body>"""
).replace("TRACKS", str(TRACKS))


async def _until(check: object, within: float) -> None:
    deadline = time.monotonic() + within
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the capture never reached the expected state"
        await asyncio.sleep(0.2)


async def test_a_stalled_agent_gets_its_audio_in_a_few_calls_and_loses_none(
    tmp_path: Path,
) -> None:
    capture = AudioCapture()
    session = BrowserSession(
        AgentSettings(
            data_dir=tmp_path, extra_browser_args=["--autoplay-policy=no-user-gesture-required"]
        ),
        "Notetaker",
        capture,
    )
    page = await session.start()
    try:
        await page.route(PAGE, lambda route: route.fulfill(body=LOOPBACK, content_type="text/html"))
        await page.goto(PAGE)
        await _until(
            lambda: (
                len(capture.stats.tracks) == TRACKS
                and min(t.seconds for t in capture.stats.tracks.values()) > 1.0
            ),
            within=60,
        )
        seconds_before = sum(t.seconds for t in capture.stats.tracks.values())
        batches_before = capture.stats.batches
        time.sleep(STALL_S)  # noqa: ASYNC251 - the point: the agent's loop does not run
        # Catch up until the audio of the stall has arrived (the newest block is past it).
        await _until(
            lambda: (
                sum(t.seconds for t in capture.stats.tracks.values()) - seconds_before
                >= TRACKS * STALL_S
            ),
            within=60,
        )
        calls = capture.stats.batches - batches_before
        state = await page.evaluate("() => window.__meetbot.captureState()")
    finally:
        await session.close()
    # 4 tracks x 10 blocks/s x 6 s = 240 blocks: a handful of calls carried them all.
    assert calls <= 12, calls
    assert state["droppedBlocks"] == 0 and capture.stats.rejected == 0
    assert state["inFlight"] <= 2
