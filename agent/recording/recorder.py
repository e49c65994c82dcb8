"""One meeting's recording: audio (and the bot's view) to disk while active, then files.

:class:`MeetingRecorder` is started when the bot becomes ``active`` and stopped when it turns
``stopping`` (before it leaves, so the bot's own goodbye screens are not recorded). It is one
of two recordings:

- the page's (:class:`~agent.recording.page.PageRecording`): every remote track's audio to a
  WAV per track and, with ``video`` in ``capture_modes``, the page's view as timestamped
  JPEGs, ``recording_video_fps`` a second, mixed and encoded with ffmpeg at the end
  (``agent.recording.encode``);
- on the bot's own display runtime (a :class:`~agent.recording.screen.ScreenSource`) with
  ``video`` captured, the screen's (:class:`~agent.recording.screen_recording.ScreenRecording`):
  ffmpeg x11grab with the meeting's 48 kHz sound, only rewrapped at the end.

With ``piece_seconds`` and a :class:`~agent.recording.pieces.Shipping`, either is cut into
pieces of that many seconds of the meeting, each encoded and uploaded as soon as it ends
(:mod:`agent.recording.pieces`), so a crash late in a long meeting keeps all but the current
piece.

:meth:`MeetingRecorder.finish` encodes the last (or only) file, uploads it (an upload slot
from the control plane, three attempts with a doubling pause, or the agent's data folder
without one) and reports an ``artifact`` event of kind ``recording``
(:mod:`agent.recording.publish`), which the SSE stream announces as ``recording_ready`` and the
control plane as the ``recording.ready`` webhook; with pieces, this is the last piece (the
others went during the meeting, each with its own ``artifact`` event).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from pathlib import Path

from agent.browser.session import BrowserSession
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotSettings, CaptureMode
from agent.contracts.link import ArtifactEvent
from agent.link.artifacts import ArtifactUploader
from agent.link.events import BotEvents
from agent.process.errors import CommandError
from agent.recording.job import EncodeError
from agent.recording.page import PageRecording
from agent.recording.pieces import Shipping
from agent.recording.publish import Destination
from agent.recording.screen import ScreenSource
from agent.recording.screen_recording import ScreenRecording

log = logging.getLogger(__name__)


class MeetingRecorder:
    """Records one meeting (see the module docstring).

    Args:
        capture: The bot's audio capture (tapped while recording).
        browser: The bot's browser (view frames).
        settings: The bot's settings (``capture_modes``, ``recording_format``).
        work_dir: Scratch folder for tracks, frames and the encoded file (removed at the end).
        video_fps: View frames per second with video capture.
        jpeg_quality: JPEG quality of the view frames (10-100).
        screen: The bot's display and sound server; with ``video`` captured, the recording is
            that screen (see the module docstring). None: the page's audio and view frames.
        piece_seconds: Length of each piece in seconds of the meeting; 0 (or no
            ``shipping``): one file at the end.
        shipping: Where pieces go during the meeting.
    """

    def __init__(
        self,
        capture: AudioCapture,
        browser: BrowserSession,
        settings: BotSettings,
        work_dir: Path,
        video_fps: float = 1.0,
        jpeg_quality: int = 70,
        screen: ScreenSource | None = None,
        piece_seconds: float = 0.0,
        shipping: Shipping | None = None,
    ) -> None:
        video = CaptureMode.VIDEO in settings.capture_modes
        piece_s = piece_seconds if shipping is not None else 0.0
        self._dir = work_dir
        self._page: PageRecording | None = None
        self._screen: ScreenRecording | None = None
        if screen is not None and video:
            self._screen = ScreenRecording(
                screen,
                settings.recording_format,
                work_dir,
                piece_seconds=piece_s,
                shipping=shipping,
            )
        else:
            self._page = PageRecording(
                capture,
                browser,
                settings.recording_format,
                work_dir,
                video=video,
                video_fps=video_fps,
                jpeg_quality=jpeg_quality,
                piece_seconds=piece_s,
                shipping=shipping,
            )
        self.started_at: float | None = None
        self.stopped_at: float | None = None

    @property
    def running(self) -> bool:
        """Whether capture is on (between :meth:`start` and :meth:`stop_capture`)."""
        return self.started_at is not None and self.stopped_at is None

    @property
    def dropped(self) -> int:
        """Audio frames the page's disk writer could not take (0 for the screen's)."""
        return 0 if self._page is None else self._page.dropped

    def start(self, at: float | None = None) -> None:
        """Start recording (the bot just became ``active``); a second call does nothing.

        Args:
            at: Epoch seconds where the recording's timeline begins (the bot's join time);
                now when None. Audio is placed on this timeline by its capture time.
        """
        if self.started_at is not None:
            return
        self.started_at = time.time() if at is None else at
        if self._screen is not None:
            self._screen.start()
        elif self._page is not None:
            self._page.start(self.started_at)

    async def stop_capture(self) -> None:
        """Stop taking audio and view frames; write what is queued to disk."""
        if not self.running:
            return
        self.stopped_at = time.time()
        if self._screen is not None:
            await self._screen.stop()
        elif self._page is not None:
            await self._page.stop(self.stopped_at)

    async def finish(
        self,
        uploader: ArtifactUploader,
        events: BotEvents,
        control_plane_url: str | None,
        bot_id: str,
    ) -> ArtifactEvent | None:
        """Encode, upload and report the recording; None when nothing was recorded or it failed.

        Failures (ffmpeg, the upload) are logged, not raised: a bot without its recording still
        completes its meeting. The scratch folder is removed in every case.

        Args:
            uploader: Where the file goes.
            events: Where the ``artifact`` event (and so ``recording_ready``) goes.
            control_plane_url: Asked for an upload slot; None keeps the file in the uploader's
                local folder.
            bot_id: The bot's id (for the upload slot).
        """
        await self.stop_capture()
        if self.started_at is None or self.stopped_at is None:
            return None
        to = Destination(uploader, events, control_plane_url, bot_id)
        try:
            if self._screen is not None:
                return await self._screen.finish(self.stopped_at, to)
            assert self._page is not None  # noqa: S101 - one of the two is set
            return await self._page.finish(self.stopped_at, to)
        except (EncodeError, CommandError, OSError) as exc:
            log.warning("recording failed", extra={"error": type(exc).__name__, "detail": str(exc)})
            return None
        finally:
            if self._screen is not None:
                await self._screen.close()  # also when the capture failed
            await asyncio.to_thread(shutil.rmtree, self._dir, True)
