"""The screen recording's ffmpeg arguments and the input start times it reads back from its log
(the recording itself runs in ``test_display_e2e.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.contracts.bot_config import RecordingFormat
from agent.recording.screen import (
    ScreenCapture,
    ScreenPiece,
    ScreenSource,
    capture_args,
    finalize_args,
    input_starts,
)

pytestmark = pytest.mark.unit

SOURCE = ScreenSource(":101", "unix:/tmp/rt/pulse/native", 1280, 720, 15)

# What ffmpeg 5.1 logs at info level when it opens the two inputs.
LOG = """Input #0, x11grab, from ':100.0+0,0':
  Duration: N/A, start: 1795484496.689485, bitrate: 442368 kb/s
  Stream #0:0: Video: rawvideo (BGR[0] / 0x524742), bgr0, 1280x720, 15 fps
Guessed Channel Layout for Input Stream #1.0 : stereo
Input #1, pulse, from 'meeting.monitor':
  Duration: N/A, start: 1795484498.053719, bitrate: 1536 kb/s
Output #0, matroska, to 'screen.mkv':
  Duration: N/A, start: 0.000000, bitrate: N/A
"""


def _after(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


@pytest.mark.parametrize(
    ("fmt", "video", "audio"),
    [
        (RecordingFormat.MP4, "libx264", "aac"),
        (RecordingFormat.WEBM, "libx264", "libopus"),
        (RecordingFormat.MP3, None, "libmp3lame"),
    ],
)
def test_capture_grabs_the_display_and_the_meeting_monitor_in_the_formats_codecs(
    fmt: RecordingFormat, video: str | None, audio: str
) -> None:
    args = capture_args(SOURCE, fmt, Path("/w/screen.mkv"))
    assert args[-1] == "/w/screen.mkv" and _after(args, "-f") in ("x11grab", "pulse")
    assert _after(args, "-c:a") == audio and _after(args, "-ar") == "48000"
    assert _after(args, "-server") == SOURCE.pulse_server
    assert "meeting.monitor" in args and args[-2] == "matroska"
    if video is None:
        assert "x11grab" not in args and "-c:v" not in args
    else:
        assert _after(args, "-i") == ":101.0+0,0"
        assert _after(args, "-video_size") == "1280x720" and _after(args, "-draw_mouse") == "0"
        assert _after(args, "-framerate") == "15" and _after(args, "-r") == "15"
        assert _after(args, "-fps_mode") == "cfr" and _after(args, "-c:v") == video
        assert _after(args, "-preset") == "ultrafast" and _after(args, "-tune") == "zerolatency"


def test_input_starts_are_read_per_input_and_outputs_are_ignored() -> None:
    assert input_starts(LOG) == {0: 1795484496.689485, 1: 1795484498.053719}
    assert input_starts("") == {}


def test_finalize_delays_the_later_stream_and_copies() -> None:
    capture, out = Path("/w/screen.mkv"), Path("/w/out.mp4")
    late_sound = finalize_args(capture, RecordingFormat.MP4, out, 1.364)
    assert late_sound[-1] == str(out) and _after(late_sound, "-c") == "copy"
    assert _after(late_sound, "-f") == "mp4"
    assert [late_sound[i + 1] for i, a in enumerate(late_sound) if a == "-itsoffset"] == [
        "0.000",
        "1.364",
    ]
    assert "+faststart" in late_sound and ["-map", "0:v", "-map", "1:a"] == [
        late_sound[i] for i in range(late_sound.index("-map"), late_sound.index("-map") + 4)
    ]
    early_sound = finalize_args(capture, RecordingFormat.WEBM, out, -0.5)
    assert [early_sound[i + 1] for i, a in enumerate(early_sound) if a == "-itsoffset"] == [
        "0.500",
        "0.000",
    ]
    assert _after(early_sound, "-c:v") == "libvpx" and _after(early_sound, "-c:a") == "copy"
    mp3 = finalize_args(capture, RecordingFormat.MP3, out, 1.0)
    assert "-itsoffset" not in mp3 and _after(mp3, "-f") == "mp3"


@pytest.mark.parametrize("fmt", [RecordingFormat.MP4, RecordingFormat.MP3])
def test_a_capture_in_pieces_is_cut_by_ffmpegs_segment_muxer_at_forced_key_frames(
    fmt: RecordingFormat,
) -> None:
    args = capture_args(SOURCE, fmt, Path("/w/screen.mkv"), piece_seconds=600)
    assert args[-1] == "/w/screen-%04d.mkv" and "/w/screen.mkv" not in args
    assert _after(args, "-segment_time") == "600" and _after(args, "-reset_timestamps") == "1"
    assert _after(args, "-segment_format") == "matroska"
    assert _after(args, "-segment_list") == "/w/screen-pieces.csv"
    assert _after(args, "-segment_list_type") == "csv"
    if fmt is RecordingFormat.MP3:
        assert "-force_key_frames" not in args
    else:
        assert _after(args, "-force_key_frames") == "expr:gte(t,n_forced*600)"
    assert capture_args(SOURCE, fmt, Path("/w/screen.mkv"), piece_seconds=0)[-1] == "/w/screen.mkv"


def test_closed_pieces_are_the_complete_rows_of_ffmpegs_list(tmp_path: Path) -> None:
    capture = ScreenCapture(SOURCE, RecordingFormat.MP4, tmp_path / "screen.mkv", 600)
    assert capture.closed_pieces() == []  # no list yet
    listing = tmp_path / "screen-pieces.csv"
    # As ffmpeg writes it: one row per closed piece; the last row is still being written.
    listing.write_text("screen-0000.mkv,0.000000,600.000000\nscreen-0001.mkv,600.000000,1200")
    assert capture.closed_pieces() == [ScreenPiece(0, tmp_path / "screen-0000.mkv", 0.0, 600.0)]
    listing.write_text(
        "screen-0000.mkv,0.000000,600.000000\nscreen-0001.mkv,600.000000,1200.066667\n"
    )
    assert [(p.index, p.path.name, p.end_s) for p in capture.closed_pieces()] == [
        (0, "screen-0000.mkv", 600.0),
        (1, "screen-0001.mkv", 1200.066667),
    ]
    for name in ("screen-0001.mkv", "screen-0000.mkv", "screen-0002.mkv", "screen.log"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in capture.written_pieces()] == [
        "screen-0000.mkv",
        "screen-0001.mkv",
        "screen-0002.mkv",
    ]
