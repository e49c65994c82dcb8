"""Transcript renderings: plain text, SubRip (SRT) and WebVTT from stored segments.

Times are the segments' ``start``/``end`` (seconds from when the bot joined). Each cue is
``Speaker: text`` (SRT, text) or ``<v Speaker>text`` (WebVTT voice span) when the speaker is known.
"""

from __future__ import annotations

from collections.abc import Sequence

from control_plane.meetings.schemas import SegmentOut


def _clock(seconds: float, separator: str) -> str:
    millis = max(0, round(seconds * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def _one_line(text: str) -> str:
    # A blank line ends a cue in SRT and WebVTT; keep each cue's text on one line.
    return " ".join(text.split())


def to_txt(segments: Sequence[SegmentOut]) -> str:
    """``[HH:MM:SS] Speaker: text`` per segment."""
    lines = []
    for seg in segments:
        stamp = _clock(seg.start, ".")[:8]
        who = f"{seg.speaker}: " if seg.speaker else ""
        lines.append(f"[{stamp}] {who}{_one_line(seg.text)}")
    return "\n".join(lines) + ("\n" if lines else "")


def to_srt(segments: Sequence[SegmentOut]) -> str:
    """SubRip: numbered cues ``HH:MM:SS,mmm --> HH:MM:SS,mmm``."""
    cues = []
    for number, seg in enumerate(segments, start=1):
        who = f"{seg.speaker}: " if seg.speaker else ""
        cues.append(
            f"{number}\n{_clock(seg.start, ',')} --> {_clock(seg.end, ',')}\n"
            f"{who}{_one_line(seg.text)}\n"
        )
    return "\n".join(cues)


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_vtt(segments: Sequence[SegmentOut]) -> str:
    """WebVTT with cue ids = segment ids and ``<v Speaker>`` voice spans."""
    cues = ["WEBVTT\n"]
    for seg in segments:
        text = _vtt_escape(_one_line(seg.text))
        if seg.speaker:
            text = f"<v {_vtt_escape(seg.speaker)}>{text}"
        cues.append(f"{seg.id}\n{_clock(seg.start, '.')} --> {_clock(seg.end, '.')}\n{text}\n")
    return "\n".join(cues)
