"""Which ``capture_modes`` / ``recording_format`` / ``recording_enabled`` combinations make sense.

The agent records the meeting's sound whenever ``recording_enabled`` is true and adds the
picture when ``video`` is in ``capture_modes`` (``agent.recording``); ``mp3`` holds sound only.
Three requests could not be served as asked, and the API refuses them with 422 (docs/api.md 2.3,
"Capture modes and formats") instead of accepting and ignoring them:

- ``capture_modes`` without ``audio`` (``capture_needs_audio``): every recording holds the sound,
  which is also what is transcribed; a picture without sound is not offered.
- ``video`` in ``capture_modes`` while ``recording_enabled`` is false (``video_needs_recording``):
  the picture goes only into the recording.
- ``video`` with ``recording_format`` ``mp3`` (``format_has_no_video``).

A rule is applied only when the request names one of its fields (``given``): a stored bot whose
``recording_enabled`` is turned off by a later PATCH keeps its ``capture_modes`` (turning the
recording off stops it, docs/api.md 2.3), and a PATCH of other fields is not refused for what
was stored before these rules.
"""

from __future__ import annotations

from collections.abc import Collection

from agent.contracts.bot_config import BotSettings, CaptureMode, RecordingFormat


class CaptureOptionsRefused(ValueError):
    """A combination the bot cannot serve as asked.

    Attributes:
        code: ``capture_needs_audio``, ``video_needs_recording`` or ``format_has_no_video``.
        field: The request field to change (``capture_modes`` or ``recording_format``).
    """

    def __init__(self, code: str, field: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


def check_capture_options(settings: BotSettings, given: Collection[str]) -> None:
    """Refuse ``settings`` whose capture options the request (fields ``given``) got wrong.

    Args:
        settings: Every option in effect after the request (defaults filled in).
        given: Names of the fields the request itself sets.

    Raises:
        CaptureOptionsRefused: See the module docstring.
    """
    modes = set(settings.capture_modes)
    video = CaptureMode.VIDEO in modes
    if "capture_modes" in given and CaptureMode.AUDIO not in modes:
        raise CaptureOptionsRefused(
            "capture_needs_audio",
            "capture_modes",
            "capture_modes must include audio: a recording always holds the meeting's sound "
            "(also what is transcribed); add video for the picture: ['audio', 'video']",
        )
    if "capture_modes" in given and video and not settings.recording_enabled:
        raise CaptureOptionsRefused(
            "video_needs_recording",
            "capture_modes",
            "video is captured only into the recording: set recording_enabled true, or leave "
            "capture_modes at ['audio']",
        )
    touched = [name for name in ("recording_format", "capture_modes") if name in given]
    if touched and video and settings.recording_format is RecordingFormat.MP3:
        raise CaptureOptionsRefused(
            "format_has_no_video",
            touched[0],
            "recording_format mp3 holds sound only: record video as mp4 or webm, or leave "
            "capture_modes at ['audio'] for an mp3",
        )
