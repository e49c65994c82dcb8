"""An audio-only recording encoded in the agent's process (agent/recording/audio_encode.py).

Real speech of the corpus, written as the recorder's tracks are (16 kHz mono WAVs starting at
their first sound), goes through the in-process encoder; ffprobe and ffmpeg, as a player
would, read back what it wrote. The mix is checked sample by sample against the numpy sum of
the same WAVs at the same offsets — overlapping speakers included, and a track that began
just before the piece.
"""

from __future__ import annotations

import subprocess
import wave
from contextlib import ExitStack
from itertools import pairwise
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agent.capture.audio import SAMPLE_RATE
from agent.contracts.bot_config import RecordingFormat
from agent.recording.audio_encode import encode_audio_only, mix_block, open_sources
from agent.recording.encode import encode
from agent.recording.job import EncodeError, EncodeJob
from agent.transcribe.audio_io import TrackAudio
from tests.recording.helpers import codecs, probe

pytestmark = pytest.mark.model

START = 1_000.0
CLIPS = ("LJ001-0002", "ls_testclean_1089-134686-0001", "LJ001-0008")


def _pcm(path: Path) -> npt.NDArray[np.int16]:
    with wave.open(str(path), "rb") as wav:
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.int16)


def _decoded(path: Path) -> npt.NDArray[np.float32]:
    """The file's sound as ffmpeg decodes it: 16 kHz mono float."""
    done = subprocess.run(  # noqa: S603 - fixed argv, the file is the test's own
        ["ffmpeg", "-v", "error", "-i", str(path), "-f", "f32le", "-ac", "1", "-ar", "16000", "-"],  # noqa: S607 - from PATH
        capture_output=True,
        check=True,
    )
    return np.frombuffer(done.stdout, dtype="<f4")


def _tracks(speech: Path) -> tuple[TrackAudio, ...]:
    # Bob starts 1.5 s into Alice's clip (they talk over each other); Carol's track began
    # 0.25 s before the piece (its first sound was cut at the previous piece's end).
    return (
        TrackAudio("alice", START + 0.5, speech / f"{CLIPS[0]}.wav", "Alice"),
        TrackAudio("bob", START + 2.0, speech / f"{CLIPS[1]}.wav", "Bob"),
        TrackAudio("carol", START - 0.25, speech / f"{CLIPS[2]}.wav", "Carol"),
    )


def _expected_mix(tracks: tuple[TrackAudio, ...], total: int) -> npt.NDArray[np.float32]:
    mix = np.zeros(total, dtype=np.float64)
    for track in tracks:
        offset = max(0, round((track.start_time - START) * SAMPLE_RATE))
        pcm = _pcm(track.path)[: max(0, total - offset)]
        mix[offset : offset + len(pcm)] += pcm / 32768.0
    return np.clip(mix, -1.0, 1.0).astype(np.float32)


def test_the_mix_is_every_track_at_its_offset_summed_and_clipped(speech: Path) -> None:
    tracks = _tracks(speech)
    total = 9 * SAMPLE_RATE
    expected = _expected_mix(tracks, total)
    job = EncodeJob(tracks, (), START, 9.0, RecordingFormat.MP3, Path("unused.mp3"))
    with ExitStack() as stack:
        sources = open_sources(job, stack)
        # Blocks of odd lengths, out of order: each block reads its tracks where it lies.
        edges = [0, 7_001, 40_000, 40_001, 100_000, total]
        pieces = {a: mix_block(sources, a, b - a) for a, b in reversed(list(pairwise(edges)))}
    mixed = np.concatenate([pieces[a] for a in edges[:-1]])
    assert mixed.shape == (total,)
    np.testing.assert_allclose(mixed, expected, atol=1e-6)
    assert np.abs(expected).max() > 0.1  # there is speech in it, and the overlap is in it
    both = slice(int(2.0 * SAMPLE_RATE), int(3.0 * SAMPLE_RATE))
    alice_alone = _expected_mix(tracks[:1], total)[both]
    assert not np.allclose(mixed[both], alice_alone)


@pytest.mark.parametrize(
    ("fmt", "wanted"),
    [
        (RecordingFormat.MP4, {"audio": "aac", "video": "h264"}),
        (RecordingFormat.MP3, {"audio": "mp3"}),
        (RecordingFormat.WEBM, {"audio": "opus"}),
    ],
)
async def test_each_format_is_as_long_as_the_piece_and_sounds_like_the_mix(
    fmt: RecordingFormat, wanted: dict[str, str], speech: Path, tmp_path: Path
) -> None:
    tracks = _tracks(speech)
    seconds = 8.37
    out = tmp_path / f"piece.{fmt.value}"
    duration = await encode(EncodeJob(tracks, (), START, seconds, fmt, out))

    probed = probe(out)
    assert codecs(probed) == wanted
    assert duration == pytest.approx(seconds, abs=0.03)  # opus: its 6.5 ms of padding
    heard = _decoded(out)
    assert len(heard) / SAMPLE_RATE == pytest.approx(seconds, abs=0.03)
    if fmt is RecordingFormat.MP4:
        for stream in probed["streams"]:
            # The still is cut to the sound's end: no second of black after the meeting.
            assert float(stream["duration"]) == pytest.approx(seconds, abs=0.03)
        video = next(s for s in probed["streams"] if s["codec_type"] == "video")
        assert (video["width"], video["height"], video["pix_fmt"]) == (160, 90, "yuv420p")
        head = out.read_bytes()
        assert head.index(b"moov") < head.index(b"mdat")  # fast-start

    expected = _expected_mix(tracks, round(seconds * SAMPLE_RATE))
    lag = _lag(expected, heard)
    assert abs(lag) <= 0.01 * SAMPLE_RATE, f"the sound is {lag} samples off"
    n = min(len(expected), len(heard) - max(lag, 0))
    aligned = heard[max(lag, 0) : max(lag, 0) + n]
    error = np.sqrt(np.mean((aligned - expected[:n]) ** 2))
    signal = np.sqrt(np.mean(expected[:n] ** 2))
    # The codecs' loss is up to 0.11 of the signal (mp3 at 64 kb/s); one track placed 10 ms
    # off makes it 0.36.
    assert error < 0.2 * signal, f"lossy but not this lossy: {error / signal:.3f} of the signal"


def _lag(reference: npt.NDArray[np.float32], heard: npt.NDArray[np.float32]) -> int:
    """Samples by which ``heard`` trails ``reference`` (an encoder's priming), within 50 ms."""
    window = reference[: 4 * SAMPLE_RATE]
    scores = {
        lag: float(np.dot(window, heard[lag : lag + len(window)]))
        for lag in range(0, 800)
        if lag + len(window) <= len(heard)
    }
    return max(scores, key=lambda lag: scores[lag])


async def test_a_track_that_is_not_the_recorders_wav_fails_and_leaves_no_file(
    tmp_path: Path, speech: Path
) -> None:
    stereo = tmp_path / "stereo.wav"
    with wave.open(str(stereo), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(bytes(4 * SAMPLE_RATE))
    tracks = (
        TrackAudio("alice", START, speech / f"{CLIPS[0]}.wav"),
        TrackAudio("bob", START + 1, stereo),
    )
    out = tmp_path / "piece.mp4"
    with pytest.raises(EncodeError, match=r"stereo.wav is \(2, 2, 16000\)"):
        encode_audio_only(EncodeJob(tracks, (), START, 5.0, RecordingFormat.MP4, out))
    assert not out.exists()

    truncated = tmp_path / "truncated.wav"
    truncated.write_bytes((speech / f"{CLIPS[0]}.wav").read_bytes()[:20])
    with pytest.raises(EncodeError, match=r"truncated\.wav unreadable"):
        encode_audio_only(
            EncodeJob(
                (TrackAudio("a", START, truncated),), (), START, 5.0, RecordingFormat.MP3, out
            )
        )
    assert not out.exists()


async def test_a_piece_nobody_spoke_in_is_silence_as_long_as_the_piece(tmp_path: Path) -> None:
    out = tmp_path / "quiet.mp4"
    duration = await encode(EncodeJob((), (), START, 3.0, RecordingFormat.MP4, out))
    assert duration == pytest.approx(3.0, abs=0.03)
    assert np.abs(_decoded(out)).max() == 0.0
