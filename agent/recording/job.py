"""What a recording encode is given and how it fails: shared by both encoders.

:mod:`agent.recording.encode` runs ffmpeg (view frames, the dispatcher), and
:mod:`agent.recording.audio_encode` encodes an audio-only piece in the agent's process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.contracts.bot_config import RecordingFormat
from agent.transcribe.audio_io import TrackAudio


class EncodeError(RuntimeError):
    """An encoder failed, a track is unreadable, or ffmpeg is missing.

    The message says which, with the tail of ffmpeg's stderr when it ran.
    """


@dataclass(frozen=True, slots=True)
class ViewFrame:
    """One JPEG of the bot's view.

    Attributes:
        path: The JPEG file.
        at: Epoch seconds when it was captured.
    """

    path: Path
    at: float


@dataclass(frozen=True, slots=True)
class EncodeJob:
    """What to encode.

    Attributes:
        tracks: Per-track WAVs with their start times (epoch seconds).
        frames: View frames in capture order (empty: audio-only capture).
        started_at: Epoch seconds where the recording begins.
        duration_s: Length of the recording in seconds.
        fmt: Output format.
        output: Path of the file to write.
        fps: Output frame rate with view frames (a view repeats until the next one); the
            capture rate rounded up is enough, more only costs encoding time.
    """

    tracks: tuple[TrackAudio, ...]
    frames: tuple[ViewFrame, ...]
    started_at: float
    duration_s: float
    fmt: RecordingFormat
    output: Path
    fps: int = 1


def content_type(fmt: RecordingFormat, with_video: bool) -> str:
    """MIME type of a recording in ``fmt`` (mp4 always has a video track)."""
    if fmt is RecordingFormat.MP3:
        return "audio/mpeg"
    if fmt is RecordingFormat.WEBM:
        return "video/webm" if with_video else "audio/webm"
    return "video/mp4"
