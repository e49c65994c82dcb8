"""The host API and the page protocol against a running simulator (no browser).

A test WebSocket client speaks the page protocol (``testmeeting.pagelink``) in place of a
skin page, so lobby, admission, removal, chat, hands and media uploads are exercised fast.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import struct
import time
import wave
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from testmeeting import TestMeetingServer
from testmeeting.room import SPEECH_PART_BYTES

pytestmark = pytest.mark.api

UPLOAD = struct.Struct("<Bd")


@pytest.fixture
async def server() -> AsyncIterator[TestMeetingServer]:
    async with TestMeetingServer(port=0) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def create(
    http: aiohttp.ClientSession, server: TestMeetingServer, body: str
) -> dict[str, Any]:
    async with http.post(f"{server.http_url}/api/rooms", data=body) as response:
        assert response.status == 201, await response.text()
        room: dict[str, Any] = await response.json()
        return room


async def page(
    http: aiohttp.ClientSession, server: TestMeetingServer, platform: str, meeting_id: str
) -> aiohttp.ClientWebSocketResponse:
    return await http.ws_connect(
        f"ws://127.0.0.1:{server.http_port}/_tm/ws?platform={platform}&meeting_id={meeting_id}"
    )


async def until(ws: aiohttp.ClientWebSocketResponse, kind: str) -> dict[str, Any]:
    """The next JSON message of ``kind`` (others are skipped)."""
    async with asyncio.timeout(10):
        while True:
            msg = await ws.receive()
            if msg.type is aiohttp.WSMsgType.TEXT:
                data: dict[str, Any] = json.loads(msg.data)
                if data["type"] == kind:
                    return data
            elif msg.type is not aiohttp.WSMsgType.BINARY:
                raise AssertionError(f"socket ended while waiting for {kind}: {msg.type}")


async def speech(ws: aiohttp.ClientWebSocketResponse) -> tuple[dict[str, Any], bytes]:
    async with asyncio.timeout(10):
        while True:
            msg = await ws.receive()
            if msg.type is aiohttp.WSMsgType.BINARY:
                (length,) = struct.unpack_from("<I", msg.data)
                header: dict[str, Any] = json.loads(msg.data[4 : 4 + length])
                return header, msg.data[4 + length :]


async def test_rooms_are_created_listed_and_refused_twice(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    room = await create(http, server, "platform: zoom\nmeeting_id: '81234567890'\n")
    assert room["platform"] == "zoom"
    assert room["lobby"] is True
    async with http.post(
        f"{server.http_url}/api/rooms", data="platform: zoom\nmeeting_id: '81234567890'\n"
    ) as r:
        assert r.status == 409
        assert (await r.json(content_type=None))["code"] == "room_exists"
    async with http.post(
        f"{server.http_url}/api/rooms", data="platform: zoom\nmeeting_id: x\n"
    ) as r:
        assert r.status == 400
        assert (await r.json(content_type=None))["code"] == "invalid_scenario"
    async with http.get(f"{server.http_url}/api/rooms") as r:
        assert [room["meeting_id"] for room in (await r.json())["rooms"]] == ["81234567890"]
    async with http.get(f"{server.http_url}/api/rooms/teams/1234567890") as r:
        assert r.status == 404
        assert (await r.json(content_type=None))["code"] == "room_not_found"


async def test_lobby_admission_speech_chat_hand_and_removal(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    await create(
        http,
        server,
        """
platform: google_meet
meeting_id: abc-defg-hij
admission: {decision: ignore}
participants:
  - name: Alice
    utterances: [{at: 0.2, text: "Good morning everyone."}]
""",
    )
    base = f"{server.http_url}/api/rooms/google_meet/abc-defg-hij"
    ws = await page(http, server, "google_meet", "abc-defg-hij")
    await ws.send_json({"type": "join", "name": "Notetaker", "mic": True, "camera": False})
    joined = await until(ws, "joined")
    bot = joined["participant_id"]
    assert joined["audio_slots"] == ["sim-0"]
    await until(ws, "lobby")
    async with http.get(f"{base}/participants") as r:
        states = {p["name"]: p["state"] for p in (await r.json())["participants"]}
    assert states == {"Alice": "in_meeting", "Notetaker": "lobby"}

    async with http.post(f"{base}/participants/{bot}/admit") as r:
        assert r.status == 200
    await until(ws, "admitted")
    roster = await until(ws, "participants")
    assert [p["name"] for p in roster["participants"]] == ["Alice", "Notetaker"]

    header, pcm = await speech(ws)
    assert header["slot"] == "sim-0"
    assert header["sample_rate"] == 16_000
    assert len(pcm) > 16_000  # espeak-ng says the sentence in well over half a second

    await ws.send_json({"type": "chat", "text": "hello from the bot"})
    async with http.post(f"{base}/chat", json={"name": "Alice", "text": "welcome"}) as r:
        assert r.status == 201
    messages = [m["message"] for m in [await until(ws, "chat"), await until(ws, "chat")]]
    assert [(m["sender"], m["text"]) for m in messages] == [
        ("Notetaker", "hello from the bot"),
        ("Alice", "welcome"),
    ]
    async with http.get(f"{base}/chat") as r:
        assert [m["text"] for m in (await r.json())["messages"]] == [
            "hello from the bot",
            "welcome",
        ]

    await ws.send_json({"type": "hand", "raised": True})
    roster = await until(ws, "participants")
    assert {p["name"]: p["hand_raised"] for p in roster["participants"]}["Notetaker"] is True
    async with http.post(f"{base}/participants/{bot}/hand", json={"raised": False}) as r:
        assert (await r.json())["hand_raised"] is False

    async with http.post(f"{base}/participants/{bot}/remove") as r:
        assert (await r.json())["state"] == "removed"
    await until(ws, "removed")
    async with http.post(f"{base}/participants/{bot}/remove") as r:
        assert r.status == 409

    async with http.get(f"{base}/timeline") as r:
        events = (await r.json())["events"]
    kinds = [e["type"] for e in events]
    for expected in (
        "room_created",
        "joined",
        "lobby_entered",
        "admitted",
        "clock_started",
        "speech",
        "chat",
    ):
        assert expected in kinds
    assert kinds.index("admitted") < kinds.index("clock_started") < kinds.index("speech")
    spoken = next(e for e in events if e["type"] == "speech")
    assert spoken["name"] == "Alice"
    assert spoken["text"] == "Good morning everyone."
    assert spoken["end"] - spoken["t"] == pytest.approx(len(pcm) / 32_000, abs=0.01)
    assert kinds[-1] == "removed"
    await ws.close()


async def test_a_long_utterance_reaches_the_page_in_parts_of_at_most_eight_seconds(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    # Playwright's driver relays every WebSocket frame a bot's page receives to the bot's
    # Python process: a long monologue sent as one frame lifted both for seconds (issue 19).
    await create(http, server, "platform: zoom\nmeeting_id: '81234567899'\nlobby: false\n")
    base = f"{server.http_url}/api/rooms/zoom/81234567899"
    ws = await page(http, server, "zoom", "81234567899")
    await ws.send_json({"type": "join", "name": "Bot"})
    await until(ws, "joined")
    await until(ws, "admitted")
    async with http.post(f"{base}/participants", json={"name": "Dana"}) as r:
        dana = (await r.json())["id"]
    text = (
        "Thanks everyone for joining, I will walk you through the quarterly numbers first, "
        "then the hiring plan for the spring, and after that we can take questions about the "
        "budget, the new office and anything else that came up since our last meeting together."
    )
    async with http.post(f"{base}/participants/{dana}/speak", json={"text": text}) as r:
        said = await r.json()
    assert said["duration"] > SPEECH_PART_BYTES / 32_000  # two parts at least

    parts: list[tuple[dict[str, Any], bytes]] = []
    while not parts or parts[-1][0]["part"] < parts[-1][0]["parts"] - 1:
        header, pcm = await speech(ws)
        parts.append((header, pcm))

    headers = [header for header, _ in parts]
    assert [h["part"] for h in headers] == list(range(len(parts)))
    assert {h["parts"] for h in headers} == {len(parts)}
    assert len(parts) >= 2
    assert len({h["clip"] for h in headers}) == 1
    assert {(h["type"], h["participant_id"], h["slot"]) for h in headers} == {
        ("speech", dana, dana)
    }
    assert all(len(pcm) <= SPEECH_PART_BYTES for _, pcm in parts)
    assert all(len(pcm) == SPEECH_PART_BYTES for _, pcm in parts[:-1])
    assert sum(len(pcm) for _, pcm in parts) / 32_000 == pytest.approx(said["duration"])
    await ws.close()


async def test_participants_join_speak_and_leave_on_demand(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    await create(http, server, "platform: google_meet\nmeeting_id: ddd-eeee-fff\nlobby: false\n")
    base = f"{server.http_url}/api/rooms/google_meet/ddd-eeee-fff"
    ws = await page(http, server, "google_meet", "ddd-eeee-fff")
    await ws.send_json({"type": "join", "name": "Bot"})
    bot = (await until(ws, "joined"))["participant_id"]
    await until(ws, "admitted")
    async with http.post(f"{base}/participants", json={"name": "Carol"}) as r:
        assert r.status == 201
        carol = (await r.json())["id"]
    slots = await until(ws, "audio_slots")
    while slots["audio_slots"] == []:  # the first announcement followed the bot's own entry
        slots = await until(ws, "audio_slots")
    assert slots["audio_slots"] == [carol]
    async with http.post(f"{base}/participants/{carol}/speak", json={"text": "Quick update."}) as r:
        said = await r.json()
    assert said["text"] == "Quick update."
    header, pcm = await speech(ws)
    assert (header["participant_id"], header["slot"]) == (carol, carol)
    assert said["duration"] == pytest.approx(len(pcm) / 32_000)
    async with http.post(f"{base}/participants/{bot}/speak", json={"text": "No."}) as r:
        assert r.status == 409
    async with http.post(f"{base}/participants/{carol}/speak", json={}) as r:
        assert r.status == 400
    async with http.post(f"{base}/participants/{carol}/leave") as r:
        assert (await r.json())["state"] == "left"
    roster = await until(ws, "participants")
    assert [p["name"] for p in roster["participants"]] == ["Bot"]
    async with http.post(f"{base}/participants/p99/leave") as r:
        assert r.status == 404


async def test_host_denies_and_scripted_host_denies(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    await create(
        http, server, "platform: teams\nmeeting_id: '1234567890'\nadmission: {decision: ignore}\n"
    )
    await create(
        http,
        server,
        "platform: teams\nmeeting_id: '1234567891'\nadmission: {decision: deny, after_s: 0}\n",
    )
    ws = await page(http, server, "teams", "1234567890")
    await ws.send_json({"type": "join", "name": "Bot"})
    bot = (await until(ws, "joined"))["participant_id"]
    async with http.post(
        f"{server.http_url}/api/rooms/teams/1234567890/participants/{bot}/deny"
    ) as r:
        assert (await r.json())["state"] == "denied"
    await until(ws, "denied")
    scripted = await page(http, server, "teams", "1234567891")
    await scripted.send_json({"type": "join", "name": "Bot"})
    await until(scripted, "denied")


async def test_no_answer_scripted_removal_and_meeting_end(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    await create(
        http,
        server,
        "platform: zoom\nmeeting_id: '812345678'\n"
        "admission: {decision: ignore, no_answer_after_s: 0.1}\n",
    )
    await create(
        http,
        server,
        "platform: zoom\nmeeting_id: '812345679'\nlobby: false\nremovals: [{at: 0.1}]\n",
    )
    await create(
        http, server, "platform: zoom\nmeeting_id: '812345670'\nlobby: false\nend_at: 0.1\n"
    )
    for meeting_id, outcome in (
        ("812345678", "no_answer"),
        ("812345679", "removed"),
        ("812345670", "ended"),
    ):
        ws = await page(http, server, "zoom", meeting_id)
        await ws.send_json({"type": "join", "name": "Bot"})
        await until(ws, outcome)
    async with http.get(f"{server.http_url}/api/rooms/zoom/812345670") as r:
        assert (await r.json())["ended"] is True


async def test_uploaded_microphone_and_frames_come_back(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    await create(http, server, "platform: google_meet\nmeeting_id: aaa-bbbb-ccc\nlobby: false\n")
    ws = await page(http, server, "google_meet", "aaa-bbbb-ccc")
    await ws.send_json({"type": "join", "name": "Bot"})
    bot = (await until(ws, "joined"))["participant_id"]
    await until(ws, "admitted")
    start = time.time()
    tone = [int(8000 * math.sin(2 * math.pi * 440 * n / 16_000)) for n in range(1600)]
    block = struct.pack("<1600h", *tone)
    await ws.send_bytes(UPLOAD.pack(1, start) + block)
    await ws.send_bytes(UPLOAD.pack(1, start + 0.1) + block)
    await ws.send_bytes(UPLOAD.pack(1, start + 1.0) + block)  # 0.8 s muted in between
    png = b"\x89PNG\r\n\x1a\nnot-really"
    await ws.send_bytes(UPLOAD.pack(2, start) + png)
    base = f"{server.http_url}/api/rooms/google_meet/aaa-bbbb-ccc/participants/{bot}"
    async with asyncio.timeout(5):
        while True:
            async with http.get(f"{base}/frames/camera") as r:
                if r.status == 200 and (await r.json())["frames"]:
                    break
            await asyncio.sleep(0.05)
    async with http.get(f"{base}/audio.wav") as r:
        assert r.status == 200
        assert float(r.headers["X-Testmeeting-Start"]) == pytest.approx(start, abs=0.001)
        with wave.open(io.BytesIO(await r.read())) as wav:
            assert (wav.getframerate(), wav.getnchannels()) == (16_000, 1)
            frames = wav.readframes(wav.getnframes())
    assert len(frames) == 2 * 16_000 * 11 // 10  # 1.1 s: two blocks, the gap, one block
    assert frames[:3200] == block
    assert frames[3200 * 2 : 3200 * 2 + 100] == bytes(100)
    async with http.get(f"{base}/frames/camera/latest") as r:
        assert r.headers["Content-Type"] == "image/png"
        assert await r.read() == png
    async with http.get(f"{base}/frames/screen/latest") as r:
        assert r.status == 404
    # The page's frame-rate reports come back beside the frames (bench/screen.py reads them).
    await ws.send_json({"type": "video_rate", "device": "screen", "frames": 29, "seconds": 1.0})
    async with asyncio.timeout(5):
        while True:
            async with http.get(f"{base}/frames/screen") as r:
                rates = (await r.json())["rates"]
            if rates:
                break
            await asyncio.sleep(0.05)
    assert [rate["fps"] for rate in rates] == [29.0]


async def test_a_browser_microphone_reaches_the_other_pages(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    await create(http, server, "platform: zoom\nmeeting_id: '812345671'\nlobby: false\n")
    first = await page(http, server, "zoom", "812345671")
    await first.send_json({"type": "join", "name": "Bot one"})
    one = (await until(first, "joined"))["participant_id"]
    await until(first, "admitted")
    second = await page(http, server, "zoom", "812345671")
    await second.send_json({"type": "join", "name": "Bot two"})
    joined = await until(second, "joined")
    assert joined["audio_slots"] == [one]  # a track for the other browser, none for itself
    await until(second, "admitted")
    block = struct.pack("<1600h", *([1000, -1000] * 800))
    await first.send_bytes(UPLOAD.pack(1, time.time()) + block)
    header, pcm = await speech(second)
    assert (header["type"], header["participant_id"], header["slot"]) == ("stream", one, one)
    assert pcm == block
    await first.send_json({"type": "device", "device": "mic", "on": False})
    await until(second, "participants")
    await first.send_bytes(UPLOAD.pack(1, time.time()) + block)  # muted: kept, not relayed
    await first.send_json({"type": "chat", "text": "done"})
    async with asyncio.timeout(5):
        while True:
            msg = await second.receive()
            assert msg.type is aiohttp.WSMsgType.TEXT, "a muted microphone was relayed"
            if json.loads(msg.data)["type"] == "chat":
                break


async def test_pages_answer_on_the_platform_hosts(
    server: TestMeetingServer, http: aiohttp.ClientSession
) -> None:
    await create(http, server, "platform: google_meet\nmeeting_id: abc-defg-hij\n")
    https = f"https://127.0.0.1:{server.https_port}"
    async with http.get(
        f"{https}/abc-defg-hij", headers={"Host": "meet.google.com"}, ssl=False
    ) as r:
        html = await r.text()
    assert 'aria-label="Your name"' in html
    assert '"exists": true' in html
    async with http.get(
        f"{https}/xyz-abcd-efg", headers={"Host": "meet.google.com"}, ssl=False
    ) as r:
        assert '"exists": false' in await r.text()
    async with http.get(
        f"{https}/j/81234567890?pwd=abc",
        headers={"Host": "us02web.zoom.us"},
        ssl=False,
        allow_redirects=False,
    ) as r:
        assert r.status == 302
        assert r.headers["Location"] == "https://app.zoom.us/wc/81234567890/join?pwd=abc"
    async with http.get(f"{server.http_url}/p/zoom.us/j/81234567890", allow_redirects=False) as r:
        assert r.headers["Location"] == "/p/app.zoom.us/wc/81234567890/join"
    await create(http, server, "platform: teams\nmeeting_id: '19:meeting_NzQ4@thread.v2'\n")
    legacy = f"{https}/l/meetup-join/19%3ameeting_NzQ4%40thread.v2/0?context=%7b%7d"
    async with http.get(legacy, headers={"Host": "teams.microsoft.com"}, ssl=False) as r:
        assert '"exists": true' in await r.text()
    async with http.get(f"{server.local_url('teams', '9312345678901', 'pc')}") as r:
        assert 'data-tid="prejoin-display-name-input"' in await r.text()
    async with http.get(f"{server.http_url}/_tm/static/meeting.js") as r:
        assert r.headers["Content-Type"].startswith("text/javascript")
    ws = await page(http, server, "google_meet", "zzz-zzzz-zzz")
    await ws.send_json({"type": "join", "name": "Bot"})
    await until(ws, "not_found")
