"""The screen recording's ffmpeg arguments and the input start times it reads back from its log
(the recording itself runs in ``test_display_e2e.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.contracts.bot_config import RecordingFormat
from agent.recording.screen import ScreenSource, capture_args, finalize_args, input_starts

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
