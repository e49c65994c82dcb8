"""The demo's parts on their own: scenario timing, voice ends, turn matching, the webhook
receiver's signature checks and the SSE reader, each against the real thing (espeak-ng,
standardwebhooks signing, an aiohttp-sse server on loopback)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
from aiohttp import web
from aiohttp_sse import sse_response
from standardwebhooks.webhooks import Webhook

from meetbot.demo.client import read_stream
from meetbot.demo.report import build_turns, group_turns, percentile, speaker_words
from meetbot.demo.scenario import (
    END_TAIL_S,
    FIRST_TURN_AT_S,
    SPEAKERS,
    TURN_GAP_S,
    SpeechSource,
    build_scenario,
    build_soak_scenario,
    pick_source,
    voiced_end,
)
from meetbot.demo.webhooks import WebhookReceiver
from testmeeting import TimelineEvent, packaged_speech

pytestmark = pytest.mark.unit

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # base64 of 24 bytes


def _pcm(*parts: tuple[float, float]) -> bytes:
    """16 kHz int16 PCM: (seconds, amplitude) pieces of a 440 Hz tone (0 = silence)."""
    chunks = []
    for seconds, amplitude in parts:
        t = np.arange(int(seconds * 16_000)) / 16_000
        chunks.append((amplitude * np.sin(2 * np.pi * 440 * t)).astype("<i2"))
    return np.concatenate(chunks).tobytes()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def test_voiced_end_ignores_trailing_silence() -> None:
    assert voiced_end(_pcm((1.0, 8000), (1.5, 0))) == pytest.approx(1.0, abs=0.021)
    assert voiced_end(_pcm((0.5, 0), (0.5, 3000), (0.2, 20))) == pytest.approx(1.0, abs=0.021)
    assert voiced_end(_pcm((0.8, 0))) == pytest.approx(0.8)


def test_speech_source_prefers_files_then_corpus_then_espeak(tmp_path: Path) -> None:
    assert pick_source([tmp_path / "a.wav"], None) is SpeechSource.FILES
    assert pick_source([], tmp_path) is SpeechSource.ESPEAK  # folder without the clips
    assert pick_source([], None) is SpeechSource.ESPEAK


def test_synthesised_scenario_takes_turns_and_ends_after_the_last_word() -> None:
    demo = build_scenario("teams", audio=[], speech_dir=None, max_speech_seconds=1.0)
    assert demo.source is SpeechSource.ESPEAK
    scenario = demo.scenario
    assert [p.name for p in scenario.participants] == list(SPEAKERS)
    assert not scenario.lobby
    # At least one turn per speaker even when the limit is smaller.
    starts = [p.utterances[0].at for p in scenario.participants]
    assert starts[0] == FIRST_TURN_AT_S
    assert starts == sorted(starts) and len(demo.references) == 3
    assert all(demo.references)
    assert scenario.end_at == pytest.approx(
        FIRST_TURN_AT_S + demo.speech_seconds + 2 * TURN_GAP_S + END_TAIL_S, abs=0.01
    )


def test_corpus_scenario_uses_real_clips_with_references(speech: Path) -> None:
    demo = build_scenario("google_meet", audio=[], speech_dir=speech)
    packaged = packaged_speech.is_materialised(speech)  # no corpus on this machine
    assert demo.source is (SpeechSource.PACKAGED if packaged else SpeechSource.CORPUS)
    assert 30 <= demo.speech_seconds <= 40
    assert all(demo.references)
    assert all(0 < end <= 11.01 for end in demo.voiced_ends)


def test_the_soak_scenario_reports_each_clip_said_as_a_turn_in_start_order(speech: Path) -> None:
    demo = build_soak_scenario("google_meet", speech, 600)
    said = sorted((u.at, p.name) for p in demo.scenario.participants for u in p.utterances)
    assert len(demo.references) == len(demo.voiced_ends) == len(said) > 20
    assert all(demo.references) and all(end > 0 for end in demo.voiced_ends)
    assert said[0][0] == FIRST_TURN_AT_S
    assert {name for _, name in said} > set(SPEAKERS)  # the guest speaks too
    assert demo.speech_seconds > 500


def test_given_files_rotate_speakers_and_bring_their_reference_text(speech: Path) -> None:
    files = [speech / "LJ001-0002.wav", speech / "jfk.wav"]
    demo = build_scenario("zoom", audio=files, speech_dir=None)
    assert demo.source is SpeechSource.FILES
    spoken = {p.name: [u.file for u in p.utterances] for p in demo.scenario.participants}
    assert spoken == {"Alice": [str(files[0])], "Bob": [str(files[1])], "Carol": []}
    assert demo.references == (
        (speech / "LJ001-0002.txt").read_text().strip(),
        (speech / "jfk.txt").read_text().strip(),
    )


def test_turns_match_segments_and_count_latency_from_the_end_of_voice() -> None:
    speech = [
        TimelineEvent(type="speech", t=100.0, end=105.0, name="Alice", text="hello there all"),
        TimelineEvent(type="speech", t=106.0, end=110.0, name="Bob", text="good morning"),
    ]
    finals = [
        (
            {
                "id": "a",
                "text": "Hello there",
                "speaker": "Alice",
                "absolute_start_time": _iso(100.3),
                "absolute_end_time": _iso(104.1),
            },
            104.9,
        ),
        (
            {
                "id": "b",
                "text": "good morning",
                "speaker": "Bob",
                "absolute_start_time": _iso(106.4),
                "absolute_end_time": _iso(107.5),
            },
            108.5,
        ),
    ]
    turns, wer, words = build_turns(finals, speech, voiced_ends=(4.0, 1.5))
    assert [t.hypothesis for t in turns] == ["Hello there", "good morning"]
    assert [t.speakers_heard for t in turns] == [["Alice"], ["Bob"]]
    assert turns[0].latency_s == pytest.approx(0.9)  # 104.9 - (100 + 4.0)
    assert turns[1].latency_s == pytest.approx(1.0)  # 108.5 - (106 + 1.5)
    assert words == 5 and wer == pytest.approx(1 / 5)  # "all" missing
    assert percentile([0.9, 1.0], 50) == pytest.approx(0.95)
    assert percentile([], 95) is None


def test_a_turn_nobody_transcribed_has_no_latency() -> None:
    speech = [TimelineEvent(type="speech", t=10.0, end=12.0, name="Carol", text="one two")]
    turns, wer, words = build_turns([], speech)
    assert turns[0].hypothesis == "" and turns[0].latency_s is None
    assert wer == 1.0 and words == 2


def _final(speaker: str, text: str, start: float, end: float) -> dict[str, Any]:
    return {
        "id": f"{speaker}-{start}",
        "text": text,
        "speaker": speaker,
        "absolute_start_time": _iso(start),
        "absolute_end_time": _iso(end),
    }


def test_a_backchannel_is_its_own_turn_and_its_final_goes_to_it_by_name() -> None:
    """Linda's two sentences (a 0.4 s pause) are one turn; Chris's "yeah" over her is another.

    His final lies wholly inside her turn: matched by time alone it went to her turn and his
    counted as lost (issue 12).
    """
    speech = [
        TimelineEvent(type="speech", t=100.0, end=106.0, name="Linda", text="one two three"),
        TimelineEvent(type="speech", t=103.0, end=104.0, name="Chris", text="yeah"),
        TimelineEvent(type="speech", t=106.4, end=109.0, name="Linda", text="four five"),
        TimelineEvent(type="speech", t=109.2, end=111.0, name="Mary", text="six"),
    ]
    turns, ends = group_turns(speech, (5.9, 0.8, 2.5, 1.7), (0.0, 0.2, 0.0, 0.0))
    assert [(t.name, t.text) for t in turns] == [
        ("Linda", "one two three four five"),
        ("Chris", "yeah"),
        ("Mary", "six"),
    ]
    assert ends == pytest.approx((8.9, 0.8, 1.7))
    finals = [
        (_final("Linda", "one two three four five", 100.0, 108.9), 109.5),
        (_final("Chris", "yeah", 103.2, 103.8), 104.5),
        (_final("Mary", "six", 109.2, 110.9), 111.5),
    ]
    out, wer, _ = build_turns(finals, turns, ends)
    assert [t.speakers_heard for t in out] == [["Linda"], ["Chris"], ["Mary"]]
    # Linda's two clips are one turn, started by the first (the soak's windows use it).
    assert [t.started_at for t in out] == [100.0, 103.0, 109.2]
    assert out[1].latency_s == pytest.approx(0.7)  # 104.5 - (103 + 0.8)
    assert wer == 0.0
    voiced = ((0.0, 5.9), (0.2, 0.8), (0.0, 2.5), (0.0, 1.7))
    assert speaker_words([f for f, _ in finals], speech, voiced) == (7, 7)
    misnamed = [_final("Linda", "yeah", 103.2, 103.8)]
    assert speaker_words(misnamed, speech, voiced) == (1, 1)  # Linda was talking too
    assert speaker_words([_final("Chris", "four five", 106.5, 108.8)], speech, voiced) == (0, 2)


def test_a_one_word_turn_right_after_another_goes_to_its_own_speaker() -> None:
    """Bob's "Fire fox", then Carol's "six" 2.75 s later: the 2-hour soak's timings.

    Carol's segment ended 0.11 s before her clip's start on the simulator's timeline (a short
    utterance's timestamps); it overlapped only Bob's turn widened after its end, went there,
    and her turn was reported without a final though her word was stored under her name.
    """
    speech = [
        TimelineEvent(type="speech", t=100.0, end=101.2, name="Alice", text="no"),
        TimelineEvent(type="speech", t=104.5, end=106.0, name="Bob", text="Fire fox"),
        TimelineEvent(type="speech", t=107.25, end=108.4, name="Carol", text="six"),
        TimelineEvent(type="speech", t=109.5, end=116.0, name="Guest 2", text="this is it"),
    ]
    finals = [
        (_final("Alice", "No.", 100.39, 100.74), 104.2),
        (_final("Bob", "Firefox", 104.10, 104.74), 108.4),
        (_final("Carol", "6.", 106.75, 107.14), 110.8),
        (_final("Guest 2", "This is it.", 111.3, 115.0), 115.6),
    ]
    out, _, _ = build_turns(finals, speech, (0.5, 0.8, 0.4, 5.0))
    assert [t.speakers_heard for t in out] == [["Alice"], ["Bob"], ["Carol"], ["Guest 2"]]
    assert [t.hypothesis for t in out] == ["No.", "Firefox", "6.", "This is it."]
    assert out[1].latency_s == pytest.approx(3.1)  # 108.4 - (104.5 + 0.8), Carol's not in it
    assert out[2].latency_s == pytest.approx(3.15)  # 110.8 - (107.25 + 0.4)


OTHER_SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"


def _signed(
    payload: Mapping[str, object], msg_id: str, secret: str = SECRET
) -> tuple[str, dict[str, str]]:
    body = json.dumps(payload)
    now = datetime.now(UTC)
    signature = Webhook(secret).sign(msg_id, now, body)
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }
    return body, headers


async def test_receiver_verifies_signatures_and_counts_each_delivery_once() -> None:
    status: dict[str, Any] = {
        "type": "bot.status_changed",
        "timestamp": "2026-11-21T10:00:00Z",
        "data": {"bot_id": "b1", "status": "joining"},
    }
    async with WebhookReceiver() as receiver, aiohttp.ClientSession() as session:
        # Arrives before the demo knows the secret: kept, checked once it is set.
        body, headers = _signed(status, "msg_1")
        async with session.post(receiver.url, data=body, headers=headers) as response:
            assert response.status == 204
        receiver.set_secret(SECRET)
        assert receiver.status_changes("b1") == [status["data"]]
        # A retry repeats the id: still one delivery.
        async with session.post(receiver.url, data=body, headers=headers) as response:
            assert response.status == 204
        body, headers = _signed(status, "msg_2", secret=OTHER_SECRET)
        async with session.post(receiver.url, data=body, headers=headers) as response:
            assert response.status == 401
    assert len(receiver.verified()) == 1
    assert receiver.rejected == 1
    assert receiver.counts_by_type() == {"bot.status_changed": 1}


async def _stream_app(request: web.Request) -> web.StreamResponse:
    assert request.headers["Authorization"] == "Bearer t0ken"
    after = int(request.headers.get("Last-Event-ID", "0"))
    async with sse_response(request) as response:
        for n, (name, payload) in enumerate(
            [("bot_status", {"status": "active"}), ("transcript_segment", {"text": "hi\nthere"})],
            start=1,
        ):
            if n > after:
                await response.send(json.dumps(payload), id=str(n), event=name)
    return response


@pytest.fixture
async def stream_url() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/stream", _stream_app)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/stream"
    await runner.cleanup()


async def test_stream_reader_parses_events_and_resumes_after_an_id(stream_url: str) -> None:
    async with aiohttp.ClientSession() as session:
        events = [e async for e in read_stream(session, stream_url, "t0ken", 0)]
        resumed = [e async for e in read_stream(session, stream_url, "t0ken", 1)]
    assert [(e.id, e.event) for e in events] == [(1, "bot_status"), (2, "transcript_segment")]
    assert events[1].data == {"text": "hi\nthere"}
    assert [e.id for e in resumed] == [2]
