"""Conversation scenarios built from real recorded speech, with their ground truth.

Real people do not leave polite pauses: the gap between turns is typically −300…+300 ms
(negative: they overlap), listeners say short things over the speaker, and a speaker pausing
300–400 ms mid-sentence is still holding the floor. :func:`build_conversation` lays corpus
clips out that way (``style="conversation"``) or the way the older scenarios do, 1.2 s between
turns and no overlap (``style="polite"``), and records who said what when. Gaps are measured
between *voiced* edges (the clips' own leading and trailing silence is ignored), so "−0.2 s"
really means two voices at once for 200 ms.

The same :class:`Conversation` gives per-speaker tracks (how Meet delivers audio), one mixed
track (Zoom, Teams), the active-speaker indicator changes a platform would show, and a
testmeeting scenario (:meth:`Conversation.scenario_participants`) that plays the same clips at
the same times. Nothing here copies the corpus: clips are read from ``speech_dir``.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 16_000

# (speaker, clips said back to back as one turn, backchannel) in speaking order. Linda's
# first turn is a ~21 s monologue with 300–400 ms pauses between its sentences, right after
# Sam: the case where a monologue following another speaker used to vanish.
Script = tuple[tuple[str, tuple[str, ...], bool], ...]
SCRIPT: Script = (
    ("Sam", ("ls_testclean_1089-134686-0001.wav",), False),
    ("Linda", ("LJ001-0001.wav", "LJ001-0002.wav", "LJ001-0003.wav"), False),
    ("Chris", ("common_voice_en_22058267.wav",), True),
    ("John", ("jfk.wav",), False),
    ("Mary", ("ls_testclean_1995-1837-0001.wav",), False),
    ("Fay", ("fw_stereo_diarization_ch1.wav",), False),
    ("Chris", ("common_voice_en_22058266.wav",), True),
    ("Linda", ("LJ001-0004.wav",), False),
    ("Dan", ("ls_testclean_61-70968-0000.wav",), False),
    ("Gus", ("fw_stereo_diarization_ch0.wav",), False),
)
POLITE_GAP_S = 1.2
LEAD_IN_S = 0.5
TAIL_S = 1.5


@dataclass(frozen=True, slots=True)
class Piece:
    """One clip as played: ``start``/``end`` are the clip's edges, ``voiced_*`` its speech.

    All times are seconds from the conversation's start.
    """

    speaker: str
    file: str
    text: str
    start: float
    end: float
    voiced_start: float
    voiced_end: float
    backchannel: bool


@dataclass(frozen=True, slots=True)
class Turn:
    """Consecutive pieces of one speaker: the unit whose end waits for a final."""

    speaker: str
    pieces: tuple[Piece, ...]
    backchannel: bool

    @property
    def voiced_start(self) -> float:
        """Seconds from the start at which the turn's speech begins."""
        return self.pieces[0].voiced_start

    @property
    def voiced_end(self) -> float:
        """Seconds from the start at which the turn's speech ends (end of turn)."""
        return self.pieces[-1].voiced_end

    @property
    def text(self) -> str:
        """Reference text of the turn."""
        return " ".join(piece.text for piece in self.pieces)


@dataclass(frozen=True, slots=True)
class Conversation:
    """A laid-out conversation and its ground truth.

    Attributes:
        style: ``conversation`` (natural turn-taking) or ``polite`` (1.2 s gaps).
        turns: Turns in order of their start.
        duration: Seconds of audio, lead-in and tail included.
        clips: File name → 16 kHz mono int16 samples of every clip used.
    """

    style: str
    turns: tuple[Turn, ...]
    duration: float
    clips: dict[str, npt.NDArray[np.int16]]

    @property
    def pieces(self) -> list[Piece]:
        """Every clip as played, in start order."""
        return sorted((p for t in self.turns for p in t.pieces), key=lambda p: p.start)

    @property
    def speakers(self) -> list[str]:
        """Speaker names in order of first speech."""
        return list(dict.fromkeys(t.speaker for t in self.turns))

    def track(self, speaker: str) -> npt.NDArray[np.int16]:
        """The whole conversation as heard on ``speaker``'s own track (silence elsewhere)."""
        out = np.zeros(round(self.duration * SAMPLE_RATE), dtype=np.int32)
        for piece in self.pieces:
            if piece.speaker == speaker:
                pcm = self.clips[piece.file]
                at = round(piece.start * SAMPLE_RATE)
                out[at : at + len(pcm)] += pcm
        return np.clip(out, -32768, 32767).astype(np.int16)

    def mixed(self) -> npt.NDArray[np.int16]:
        """Every speaker mixed into one track (overlaps add up, clipped to int16)."""
        out = np.zeros(round(self.duration * SAMPLE_RATE), dtype=np.int32)
        for speaker in self.speakers:
            out += self.track(speaker)
        return np.clip(out, -32768, 32767).astype(np.int16)

    def reference(self) -> str:
        """Reference text of the whole conversation, pieces in start order."""
        return " ".join(piece.text for piece in self.pieces)

    def indicator_changes(
        self, lag_on_s: float = 0.2, lag_off_s: float = 0.3
    ) -> list[tuple[float, str, bool]]:
        """Active-speaker indicator changes ``(seconds, name, speaking)``, sorted by time.

        A platform lights the indicator a little after a voice starts and turns it off a
        little after it stops; each turn is one on/off pair.
        """
        changes: list[tuple[float, str, bool]] = []
        for turn in self.turns:
            changes.append((turn.voiced_start + lag_on_s, turn.speaker, True))
            changes.append((turn.voiced_end + lag_off_s, turn.speaker, False))
        return sorted(changes, key=lambda change: change[0])

    def speakers_at(self, seconds: float, margin_s: float = 0.15) -> set[str]:
        """Who was voicing speech at ``seconds`` (± ``margin_s``); the nearest if nobody."""
        now = {
            p.speaker
            for p in self.pieces
            if p.voiced_start - margin_s <= seconds <= p.voiced_end + margin_s
        }
        if now:
            return now
        nearest = min(
            self.pieces,
            key=lambda p: min(abs(seconds - p.voiced_start), abs(seconds - p.voiced_end)),
        )
        return {nearest.speaker}

    def scenario_participants(self) -> list[dict[str, object]]:
        """The conversation as testmeeting participants (``utterances`` with ``at``/``file``).

        Times are scenario-clock seconds; clips are found in the scenario's speech folder.
        """
        by_name: dict[str, list[dict[str, object]]] = {}
        for piece in self.pieces:
            by_name.setdefault(piece.speaker, []).append(
                {"at": round(piece.start, 3), "file": piece.file, "text": piece.text}
            )
        return [{"name": name, "utterances": said} for name, said in by_name.items()]


def read_clip(path: Path) -> npt.NDArray[np.int16]:
    """Samples of a 16 kHz mono 16-bit WAV.

    Raises:
        ValueError: The file is not 16 kHz mono 16-bit PCM.
    """
    with wave.open(str(path), "rb") as wav:
        if (wav.getnchannels(), wav.getframerate(), wav.getsampwidth()) != (1, SAMPLE_RATE, 2):
            raise ValueError(f"{path} is not 16 kHz mono 16-bit PCM")
        return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.int16)


def voiced_span(pcm: npt.NDArray[np.int16]) -> tuple[float, float]:
    """Seconds from the clip start to its first and last 20 ms block within 30 dB of its peak.

    Returns:
        ``(first, last)`` voiced seconds; ``(0, duration)`` for a silent clip.
    """
    block = SAMPLE_RATE // 50
    usable = len(pcm) - len(pcm) % block
    x = pcm[:usable].astype(np.float32).reshape(-1, block)
    rms = np.sqrt(np.mean(x * x, axis=1))
    peak = float(rms.max()) if len(rms) else 0.0
    loud = np.nonzero(rms > 0.0316 * peak)[0] if peak > 0 else np.zeros(0, dtype=np.int64)
    if not len(loud):
        return 0.0, len(pcm) / SAMPLE_RATE
    return float(loud[0] * block / SAMPLE_RATE), float((loud[-1] + 1) * block / SAMPLE_RATE)


def build_conversation(
    speech_dir: Path,
    style: Literal["conversation", "polite"] = "conversation",
    seed: int = 12,
    script: Script = SCRIPT,
) -> Conversation:
    """Lay the script's clips out as a conversation (about 75 s of audio).

    ``conversation``: the gap between one turn's last voice and the next turn's first voice is
    drawn uniformly from −0.3…+0.3 s; sentences of one turn follow each other after
    0.30–0.40 s; a backchannel starts 40–60 % of the way through the turn before it, over that
    speaker, who carries on. ``polite``: 1.2 s between turns, no backchannel overlap.

    Args:
        speech_dir: Folder of the real-speech corpus (WAV + ``.txt`` reference per clip).
        style: ``conversation`` or ``polite``.
        seed: Seed of the gap draws (same seed, same layout).
        script: ``(speaker, clips said back to back, backchannel)`` in speaking order;
            :data:`SCRIPT` by default.

    Raises:
        FileNotFoundError: A clip of the script is missing from ``speech_dir``.
    """
    rng = np.random.default_rng(seed)
    clips: dict[str, npt.NDArray[np.int16]] = {}
    turns: list[Turn] = []
    cursor = LEAD_IN_S  # where the next turn's voice starts
    floor_end = LEAD_IN_S  # voiced end of the last non-backchannel turn
    previous: Turn | None = None
    for speaker, files, backchannel in script:
        pieces: list[Piece] = []
        if backchannel and style == "conversation" and previous is not None:
            lo, hi = previous.voiced_start, previous.voiced_end
            voice_at = lo + float(rng.uniform(0.4, 0.6)) * (hi - lo)
        elif style == "polite":
            voice_at = floor_end + (POLITE_GAP_S if turns else 0.0)
        else:
            voice_at = floor_end + (float(rng.uniform(-0.3, 0.3)) if turns else 0.0)
        for i, name in enumerate(files):
            pcm = clips.setdefault(name, read_clip(speech_dir / name))
            first, last = voiced_span(pcm)
            if i:
                pause = POLITE_GAP_S if style == "polite" else float(rng.uniform(0.30, 0.40))
                voice_at = pieces[-1].voiced_end + pause
            start = max(0.0, voice_at - first)
            text = (speech_dir / name).with_suffix(".txt").read_text(encoding="utf-8").strip()
            pieces.append(
                Piece(
                    speaker=speaker,
                    file=name,
                    text=text,
                    start=start,
                    end=start + len(pcm) / SAMPLE_RATE,
                    voiced_start=start + first,
                    voiced_end=start + last,
                    backchannel=backchannel,
                )
            )
        turn = Turn(speaker, tuple(pieces), backchannel)
        turns.append(turn)
        if not (backchannel and style == "conversation"):
            floor_end = max(floor_end, turn.voiced_end)
            previous = turn
        cursor = max(cursor, turn.pieces[-1].end)
    ordered = tuple(sorted(turns, key=lambda t: t.voiced_start))
    return Conversation(style=style, turns=ordered, duration=cursor + TAIL_S, clips=clips)
