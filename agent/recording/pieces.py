"""A long meeting's recording in pieces: each piece is encoded and uploaded when it ends.

:class:`~agent.recording.page.PageRecording` cuts the recording every
``MEETBOT_AGENT_RECORDING_PIECE_SECONDS`` of the meeting (issue 19): the audio tracks and view
frames of one span go to their own folder (a :class:`Piece`), and when the span ends the
:class:`PieceShipper` encodes it into a complete file of the bot's ``recording_format`` and
uploads it as a ``recording`` artifact, in order, one at a time, while the meeting goes on. A
crash of the agent, the browser or the VM late in a meeting therefore keeps every piece that
ended before it; only the current one is lost. A meeting shorter than one piece is one file, as
before. A piece that fails to encode or upload is logged and missing; the next ones still go.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from agent.link.artifacts import ArtifactUploader
from agent.link.events import BotEvents
from agent.process.errors import CommandError
from agent.recording.job import EncodeError, ViewFrame
from agent.recording.publish import Destination
from agent.transcribe.audio_io import TrackRecorder
from meetbot_common.tasks import cancel_and_wait

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Shipping:
    """Where pieces go during the meeting (the same place the last one goes at the end).

    Attributes:
        uploader: The bot's artifact uploader.
        events: The bot's current events (the ``artifact`` event, so ``recording_ready``).
        control_plane_url: Where upload slots come from; None keeps pieces in the uploader's
            local folder.
        bot_id: The bot's id (for upload slots).
    """

    uploader: ArtifactUploader
    events: Callable[[], BotEvents]
    control_plane_url: str | None
    bot_id: str

    def destination(self) -> Destination:
        """Where a piece that ends now goes (with the bot's events of now)."""
        return Destination(self.uploader, self.events(), self.control_plane_url, self.bot_id)


@dataclass(slots=True)
class Piece:
    """One span of the recording on disk: from ``started_at`` (epoch seconds) to its end.

    Attributes:
        index: 1 for the first piece.
        dir: Its scratch folder (tracks, frames, the encoded file); removed once shipped.
        started_at: Epoch seconds where it begins.
        tracks: Its per-track WAVs.
        frames: Its view frames in capture order.
    """

    index: int
    dir: Path
    started_at: float
    tracks: TrackRecorder = field(init=False)
    frames: list[ViewFrame] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tracks = TrackRecorder(self.dir / "tracks")

    @property
    def frames_dir(self) -> Path:
        """Where its view frames are written (made on first use by the writer)."""
        return self.dir / "frames"

    def carry_last_frame(self, into: Piece, at: float) -> ViewFrame:
        """Copy this piece's last view frame into ``into`` as shown from ``at``.

        Blocking, but one JPEG of the view (tens of kB); done on the event loop so the piece
        cannot be shipped (and its folder removed) halfway through the copy.
        """
        into.frames_dir.mkdir(parents=True, exist_ok=True)
        target = into.frames_dir / "000000.jpg"
        shutil.copyfile(self.frames[-1].path, target)
        return ViewFrame(target, at)


class _Numbered(Protocol):
    @property
    def index(self) -> int: ...


P = TypeVar("P", bound=_Numbered)
"""What a piece is: a :class:`Piece` of page audio and views, or a screen capture's piece."""


class PieceShipper(Generic[P]):
    """Ships ended pieces one at a time, in order, in a task it owns.

    Args:
        ship: Encodes and uploads one piece that ended at the given epoch seconds
            (``PageRecording._ship_piece`` or ``ScreenRecording._ship_piece``).
    """

    def __init__(self, ship: Callable[[P, float], Awaitable[None]]) -> None:
        self._ship = ship
        self._queue: asyncio.Queue[tuple[P, float]] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="recording-pieces")
        self.shipped = 0
        self.failed = 0

    def put(self, piece: P, end: float) -> None:
        """Queue a piece that ended at ``end`` (epoch seconds)."""
        self._queue.put_nowait((piece, end))

    async def _run(self) -> None:
        while True:
            piece, end = await self._queue.get()
            try:
                await self._ship(piece, end)
                self.shipped += 1
            except (EncodeError, CommandError, OSError) as exc:
                self.failed += 1
                log.warning(
                    "recording piece failed",
                    extra={
                        "piece": piece.index,
                        "error": type(exc).__name__,
                        "detail": str(exc),
                    },
                )
            finally:
                self._queue.task_done()

    async def close(self) -> None:
        """Ship what is queued, then stop the task (also when the caller gives up waiting)."""
        try:
            if not self._task.done():
                await self._queue.join()
        finally:
            await cancel_and_wait(self._task)
