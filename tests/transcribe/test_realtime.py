"""Realtime tier on real speech with the bundled tiny.en model.

Frames are fed as fast as the transcriber takes them; endpointing runs on the frames'
timestamps, so the cuts are the ones live audio would get.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from pathlib import Path

import numpy as np
import pytest

from agent.capture.audio import AudioFrame, SpeakerActivity
from agent.contracts.bot_config import Task
from agent.contracts.link import Segment
from agent.contracts.whisper_models import UnsupportedTranscriptionOptions
from agent.transcribe.engine import DecodeOptions, WhisperEngine
from agent.transcribe.normalize import word_error_rate
from agent.transcribe.options import TranscribeOptions
from agent.transcribe.realtime import RealtimeTranscriber
from agent.transcribe.vad import SileroSession
from tests.transcribe.helpers import (
    finals,
    frames,
    interleave,
    load_wav,
    reference,
    replay,
    silence,
)

pytestmark = [pytest.mark.model, pytest.mark.slow]

JOIN = 1_700_000_000.0
CLIPS = ["jfk.wav", "ls_testclean_1995-1837-0001.wav", "LJ001-0003.wav"]
NO_PARTIALS = TranscribeOptions(partials=False)


def _transcriber(
    engine: WhisperEngine, silero: SileroSession, options: TranscribeOptions = NO_PARTIALS
) -> RealtimeTranscriber:
    return RealtimeTranscriber(engine, join_time=JOIN, options=options, vad_session=silero)


async def test_offline_file_transcription_is_close_to_the_reference(
    speech: Path, tiny_engine: WhisperEngine
) -> None:
    for clip in CLIPS:
        audio = load_wav(speech, clip).astype(np.float32) / 32768.0
        result = await asyncio.to_thread(
            tiny_engine.decode,
            audio,
            language=None,
            task=Task.TRANSCRIBE,
            options=DecodeOptions(beam_size=5, without_timestamps=False),
        )
        assert result.language == "en"
        assert word_error_rate(reference(speech, clip), result.text) <= 0.12, clip


async def test_streaming_gives_the_offline_words(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    pcm = np.concatenate([np.concatenate([load_wav(speech, c), silence(1.0)]) for c in CLIPS])
    ref = " ".join(reference(speech, c) for c in CLIPS)
    offline = await asyncio.to_thread(
        tiny_engine.decode,
        pcm.astype(np.float32) / 32768.0,
        language="en",
        task=Task.TRANSCRIBE,
        options=DecodeOptions(beam_size=1, without_timestamps=False),
    )
    segments = await replay(_transcriber(tiny_engine, silero), frames(pcm, "t1", JOIN + 5.0))
    got = finals(segments)
    streamed = " ".join(s.text for s in got)
    offline_wer = word_error_rate(ref, offline.text)
    streaming_wer = word_error_rate(ref, streamed)
    assert streaming_wer <= offline_wer * 1.10 + 0.02, (streaming_wer, offline_wer)
    assert word_error_rate(offline.text, streamed) <= 0.08
    # Times count from the join, in order, inside the audio.
    assert got[0].start >= 5.0
    assert got[-1].end <= 5.0 + len(pcm) / 16_000 + 0.01
    assert all(a.end <= b.start for a, b in itertools.pairwise(got))
    assert all(s.tier == "realtime" and s.language == "en" for s in got)
    assert len({s.id for s in got}) == len(got)


async def test_partials_come_while_speaking_and_the_final_replaces_them(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    pcm = np.concatenate([load_wav(speech, "LJ001-0001.wav"), silence(1.0)])
    options = TranscribeOptions(partial_interval_s=1.0, partial_window_s=8.0)
    transcriber = _transcriber(tiny_engine, silero, options)
    stream = frames(pcm, "t1", JOIN)
    seen: list[Segment] = []
    first_seen = asyncio.Event()
    async with transcriber:

        async def collect() -> None:
            async for segment in transcriber.segments():
                seen.append(segment)
                first_seen.set()

        collector = asyncio.create_task(collect())
        for frame in stream[:35]:  # 3.5 s into the first phrase (a 0.48 s pause at 4.1 s)
            await transcriber.feed(frame)
        async with asyncio.timeout(60):
            await first_seen.wait()
        for frame in stream[35:]:
            await transcriber.feed(frame)
    await collector
    partial = seen[0]
    assert not partial.completed and partial.text
    final = [s for s in seen if s.completed]
    assert final[0].id == partial.id
    text = " ".join(s.text for s in final)
    assert word_error_rate(reference(speech, "LJ001-0001.wav"), text) <= 0.15
    assert transcriber.metrics.partials >= 1
    # Partial hypotheses may encode a shorter window floor; finals keep the longer one.
    metrics = transcriber.metrics
    assert options.partial_window_s is not None and options.realtime_window_s is not None
    assert metrics.encoded_s["partial"] / metrics.decodes["partial"] < options.realtime_window_s
    finals = metrics.decodes["speculative"] + metrics.decodes["final"]
    spent = metrics.encoded_s.get("speculative", 0.0) + metrics.encoded_s.get("final", 0.0)
    assert spent >= options.realtime_window_s * finals


async def test_mixed_track_segments_are_named_by_active_speaker(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    turns = [
        ("Ada", "ls_testclean_61-70968-0000.wav"),
        ("Bob", "jfk.wav"),
        ("Cy", "ls_testclean_1089-134686-0001.wav"),
    ]
    parts: list[np.ndarray] = []
    stream_extra: list[AudioFrame | SpeakerActivity] = []
    spans: list[tuple[str, float, float]] = []
    cursor = 0.5
    parts.append(silence(0.5))
    for name, clip in turns:
        pcm = load_wav(speech, clip)
        start, end = cursor, cursor + len(pcm) / 16_000
        spans.append((name, start, end))
        # The UI indicator lags the audio a little on both edges.
        stream_extra += [
            SpeakerActivity(name, True, JOIN + start + 0.2),
            SpeakerActivity(name, False, JOIN + end + 0.3),
        ]
        parts += [pcm, silence(0.8)]
        cursor = end + 0.8
    mixed = frames(np.concatenate(parts), "mix", JOIN)

    def when(item: AudioFrame | SpeakerActivity) -> float:
        return item.start_time if isinstance(item, AudioFrame) else item.at

    stream = sorted([*mixed, *stream_extra], key=when)
    got = finals(await replay(_transcriber(tiny_engine, silero), stream))
    assert got
    for segment in got:
        middle = (segment.start + segment.end) / 2
        expected = next(name for name, lo, hi in spans if lo - 0.5 <= middle <= hi + 0.5)
        assert segment.speaker == expected, (segment.text, segment.speaker, expected)
    assert {s.speaker for s in got} == {"Ada", "Bob", "Cy"}


async def test_overlapping_tracks_are_not_glued(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    ada = np.concatenate([load_wav(speech, "jfk.wav"), silence(1.0)])
    bob = np.concatenate(
        [silence(3.0), load_wav(speech, "fw_stereo_diarization_ch1.wav"), silence(1.0)]
    )
    stream = interleave(frames(ada, "track-a", JOIN, "Ada"), frames(bob, "track-b", JOIN, "Bob"))
    got = finals(await replay(_transcriber(tiny_engine, silero), stream))
    by_speaker = {
        name: " ".join(s.text for s in got if s.speaker == name) for name in ("Ada", "Bob")
    }
    assert {s.speaker for s in got} == {"Ada", "Bob"}
    assert word_error_rate(reference(speech, "jfk.wav"), by_speaker["Ada"]) <= 0.15
    assert (
        word_error_rate(reference(speech, "fw_stereo_diarization_ch1.wav"), by_speaker["Bob"])
        <= 0.25
    )


async def test_silence_and_noise_yield_no_segments(
    tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    rng = np.random.default_rng(7)
    seconds = np.arange(4 * 16_000) / 16_000
    white = rng.normal(0, 0.03 * 32768, 4 * 16_000)
    brown = np.cumsum(rng.normal(0, 1, 4 * 16_000))
    brown = brown / np.abs(brown).max() * 0.1 * 32768
    hum = 0.05 * 32768 * np.sin(2 * np.pi * 50 * seconds)
    pcm = np.concatenate([silence(4.0), white, brown, hum, silence(1.0)]).astype(np.int16)
    options = TranscribeOptions(partial_interval_s=1.0)
    segments = await replay(_transcriber(tiny_engine, silero, options), frames(pcm, "t", JOIN))
    assert [s for s in segments if s.text] == []


def test_english_only_model_refuses_translate(
    tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    with pytest.raises(UnsupportedTranscriptionOptions):
        RealtimeTranscriber(tiny_engine, join_time=JOIN, task=Task.TRANSLATE, vad_session=silero)


@pytest.mark.parametrize(
    ("clip", "seconds", "source"),
    [("es_mls_13697_11991_000000.wav", 15.0, "es"), ("de_aeneas_librivox.wav", 9.0, "de")],
)
async def test_translate_gives_english(
    speech: Path,
    base_engine: WhisperEngine,
    silero: SileroSession,
    clip: str,
    seconds: float,
    source: str,
) -> None:
    pcm = np.concatenate([load_wav(speech, clip)[: int(seconds * 16_000)], silence(1.0)])
    transcriber = RealtimeTranscriber(
        base_engine,
        join_time=JOIN,
        task=Task.TRANSLATE,
        options=NO_PARTIALS,
        vad_session=silero,
    )
    got = finals(await replay(transcriber, frames(pcm, "t", JOIN)))
    words = " ".join(s.text for s in got).lower().split()
    english = {
        "the",
        "and",
        "of",
        "to",
        "a",
        "in",
        "that",
        "was",
        "his",
        "he",
        "with",
        "which",
        "by",
        "it",
        "her",
        "she",
        "is",
        "from",
        "new",
    }
    assert len(words) >= 5
    assert sum(w.strip(".,;:!?") in english for w in words) / len(words) >= 0.15, words
    assert all(s.language == source for s in got)


async def test_a_gap_in_frames_ends_the_utterance_and_keeps_the_clock(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    jfk = load_wav(speech, "jfk.wav")
    head, tail = jfk[: int(2.4 * 16_000)], jfk[int(3.0 * 16_000) :]
    # The track sends nothing for 5 s (muted), then speaks again.
    stream = [
        *frames(head, "t", JOIN),
        *frames(np.concatenate([tail, silence(1.0)]), "t", JOIN + 7.4),
    ]
    got = finals(await replay(_transcriber(tiny_engine, silero), stream))
    assert len(got) >= 2
    first, rest = got[0], got[1:]
    assert "fellow americans" in first.text.lower()
    assert first.end <= 2.5
    assert all(s.start >= 7.3 for s in rest)
    assert "country" in " ".join(s.text for s in rest).lower()


async def test_segment_times_follow_the_stamps_of_a_capture_whose_clock_drifts(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    # A page whose audio clock runs slower than the wall clock: each 100 ms frame is stamped
    # 0.5 ms later than the one before it ended, never a gap the ingest would fill. Two
    # minutes in, the samples count 0.6 s less than the stamps; the segment must sit where
    # the stamps put its speech, not where the sample count does.
    rate = 0.005
    pcm = np.concatenate([silence(120.0), load_wav(speech, "jfk.wav"), silence(1.0)])
    steady = frames(pcm, "t", JOIN)
    drifting = [
        dataclasses.replace(f, start_time=JOIN + (f.start_time - JOIN) * (1 + rate)) for f in steady
    ]
    expected = finals(await replay(_transcriber(tiny_engine, silero), steady))
    transcriber = _transcriber(tiny_engine, silero)
    got = finals(await replay(transcriber, drifting))
    assert [s.text for s in got] == [s.text for s in expected]
    for was, now in zip(expected, got, strict=True):
        # Within the re-anchoring tolerance (0.1 s) of where the stamps put it; the mapping
        # by sample count alone was 0.6 s early here. A segment's end is its start plus its
        # samples, so it adds the drift over the segment itself (36 ms over a 7 s one).
        assert abs(now.start - was.start * (1 + rate)) <= 0.12, (now, was)
        within = rate * (was.end - was.start)
        assert abs(now.end - was.end * (1 + rate)) <= 0.12 + within, (now, was)
    assert transcriber.metrics.clock_reanchors >= 5


async def _live_collect(
    transcriber: RealtimeTranscriber, got: list[Segment], final_seen: asyncio.Event
) -> None:
    async for segment in transcriber.segments():
        got.append(segment)
        if segment.completed and segment.text:
            final_seen.set()


async def test_a_live_track_that_stops_sending_still_gets_its_final(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    head = load_wav(speech, "jfk.wav")[: int(2.3 * 16_000)]  # "And so my fellow Americans"
    transcriber = _transcriber(tiny_engine, silero)
    got: list[Segment] = []
    final_seen = asyncio.Event()
    async with transcriber:
        collector = asyncio.create_task(_live_collect(transcriber, got, final_seen))
        # Stamped as live capture: the speech ends now, then the track goes silent.
        for frame in frames(head, "t", time.time() - len(head) / 16_000):
            await transcriber.feed(frame)
        # Without synthesised silence the utterance would stay open until close().
        async with asyncio.timeout(20):
            await final_seen.wait()
    await collector
    assert "fellow americans" in finals(got)[0].text.lower()


async def test_a_late_capture_delivering_in_bursts_does_not_cut_the_utterance(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    # A starved capture (the page or the agent short of CPU, a VM under emulation) hands
    # over a second of audio at a time, a second late, every track together. The audio
    # itself has no pause: it must stay one utterance, not end at each stall.
    clip = "LJ001-0003.wav"
    pcm = np.concatenate([load_wav(speech, clip), silence(1.0)])
    transcriber = _transcriber(tiny_engine, silero)
    got: list[Segment] = []
    final_seen = asyncio.Event()
    async with transcriber:
        collector = asyncio.create_task(_live_collect(transcriber, got, final_seen))
        stream = frames(pcm, "t", time.time() - 1.0)
        for first in range(0, len(stream), 10):
            for frame in stream[first : first + 10]:
                await transcriber.feed(frame)
            await asyncio.sleep(1.0)  # nothing arrives: longer than any endpoint
    await collector
    texts = [s.text for s in finals(got)]
    assert len(texts) == 1, texts
    assert word_error_rate(reference(speech, clip), texts[0]) <= 0.2, texts


async def test_a_track_that_ends_mid_sentence_while_others_send_gets_its_final_at_once(
    speech: Path, tiny_engine: WhisperEngine, silero: SileroSession
) -> None:
    # One participant drops out mid-sentence (their track ends); another track keeps
    # sending in real time. The leaver's words must not wait for the meeting's end.
    head = load_wav(speech, "jfk.wav")[: int(2.3 * 16_000)]  # "And so my fellow Americans"
    transcriber = _transcriber(tiny_engine, silero)
    got: list[Segment] = []
    final_seen = asyncio.Event()
    async with transcriber:
        collector = asyncio.create_task(_live_collect(transcriber, got, final_seen))
        now = time.time()
        for frame in frames(head, "leaver", now - len(head) / 16_000):
            await transcriber.feed(frame)
        stayer = frames(silence(30.0), "stayer", now)
        for frame in stayer:
            if final_seen.is_set():
                break
            await transcriber.feed(frame)
            await asyncio.sleep(max(0.0, frame.end_time - time.time()))
        heard_while_others_sent = final_seen.is_set()
    await collector
    assert heard_while_others_sent, "the leaver's final waited for the end of the meeting"
    assert "fellow americans" in finals(got)[0].text.lower()
