"""What the demo shows while the meeting runs: a live status line and the transcript.

The bottom line (a ``rich`` live region) shows the bot's state, the time since launch and the
partial hypothesis of whoever is speaking; status changes and final segments are printed above
it as they arrive, so the scrollback reads like a meeting log. Without a terminal (CI, pipes)
the live line is not drawn and the printed lines are plain text.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any, Self

from rich.console import Console, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.text import Text

_STATUS_STYLE = {
    "requested": "cyan",
    "joining": "cyan",
    "awaiting_admission": "yellow",
    "active": "bold green",
    "stopping": "yellow",
    "completed": "bold green",
    "failed": "bold red",
    "cancelled": "red",
}
_SPEAKER_STYLES = ("magenta", "blue", "dark_orange", "green", "cyan")


def clock(seconds: float) -> str:
    """``mm:ss`` of a duration in seconds."""
    minutes, rest = divmod(max(0, int(seconds)), 60)
    return f"{minutes:02d}:{rest:02d}"


class LiveView:
    """The demo's terminal output while the bot is in the meeting.

    Args:
        console: Where to print.
        started: ``time.monotonic()`` of the launch request (elapsed times count from it).
        platform: Shown on the status line.
    """

    def __init__(self, console: Console, started: float, platform: str) -> None:
        self.console = console
        self._started = started
        self._platform = platform
        self._status = "requested"
        self._reason: str | None = None
        self._partial: tuple[str, str] | None = None
        self._segments = 0
        self._speaker_style: dict[str, str] = {}
        self._live = Live(self, console=console, refresh_per_second=4, transient=True)

    def __rich__(self) -> RenderableType:
        style = _STATUS_STYLE.get(self._status, "white")
        line = Text.assemble(
            ("● ", style),
            (self._status, style),
            (f" ({self._reason})" if self._reason else "", "dim"),
            f"  {clock(time.monotonic() - self._started)}",
            (f"  {self._platform}  {self._segments} segments", "dim"),
        )
        if self._partial is not None:
            speaker, text = self._partial
            line.append(f"\n  {speaker}: ", style=self._style_of(speaker))
            line.append(text + " …", style="italic dim")
        return line

    def __enter__(self) -> Self:
        self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._live.stop()

    def _style_of(self, speaker: str) -> str:
        if speaker not in self._speaker_style:
            index = len(self._speaker_style) % len(_SPEAKER_STYLES)
            self._speaker_style[speaker] = _SPEAKER_STYLES[index]
        return self._speaker_style[speaker]

    def _elapsed(self, at: float) -> str:
        return clock(at - self._started)

    def status(self, status: str, reason: str | None, at: float) -> None:
        """The bot's status changed (``at`` is ``time.monotonic()``)."""
        self._status, self._reason = status, reason
        style = _STATUS_STYLE.get(status, "white")
        suffix = f" [dim]({escape(reason)})[/dim]" if reason else ""
        self.console.print(f"[dim]{self._elapsed(at)}[/dim] bot [{style}]{status}[/]{suffix}")
        self._live.refresh()

    def segment(self, payload: dict[str, Any], at: float) -> None:
        """A transcript segment arrived: finals are printed, partials update the live line."""
        text = str(payload.get("text", "")).strip()
        if not payload.get("completed", True):
            # Partials may come before the speaker is known; the final names them.
            self._partial = (str(payload.get("speaker") or "someone"), text)
            return
        speaker = str(payload.get("speaker") or "unknown speaker")
        self._partial = None
        self._segments += 1
        self.console.print(
            f"[dim]{self._elapsed(at)}[/dim] [{self._style_of(speaker)}]{escape(speaker)}[/]: "
            f"{escape(text)}"
        )
        self._live.refresh()

    def participants(self, payload: dict[str, Any], at: float) -> None:
        """The participant list changed."""
        joined = ", ".join(str(name) for name in payload.get("joined", []))
        left = ", ".join(str(name) for name in payload.get("left", []))
        parts = [f"joined: {joined}" if joined else "", f"left: {left}" if left else ""]
        described = escape("; ".join(part for part in parts if part))
        if described:
            self.console.print(f"[dim]{self._elapsed(at)} participants {described}[/dim]")

    def note(self, message: str) -> None:
        """A line about the demo itself (what it starts, where things are)."""
        self.console.print(f"[dim]{escape(message)}[/dim]")
