"""The demo's meeting: three people taking turns, on real recorded speech when it is here.

Speech comes from one of four places, in this order of preference:

1. ``--audio`` files given by the user (speakers rotate Alice → Bob → Carol; a ``.txt``
   beside a file is its reference text);
2. the real-speech corpus (``MEETBOT_SPEECH_DIR``, default ``../shared/data/speech`` next to
   the checkout): LibriSpeech, LJ Speech and JFK clips with gold transcripts (MANIFEST.tsv);
3. the same clips as packaged with meetbot (:mod:`testmeeting.packaged_speech`: public-domain
   and CC-licensed recordings as Opus, with their references), decoded into the demo's data
   folder when the corpus is not there (:func:`find_speech`) — what a fresh checkout plays;
4. sentences synthesised with Debian's espeak-ng, only when the packaged set is missing too.

Utterance times are derived from the clips' real durations: the audio is prepared once with
the simulator's own loader (:func:`testmeeting.room.prepare_audio`) to measure it, then each
turn starts ``TURN_GAP_S`` after the previous one ends and the host ends the meeting
``END_TAIL_S`` after the last word, so the bot leaves on its own (``meeting_ended``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import numpy as np

from testmeeting import Scenario, packaged_speech
from testmeeting.conversation import build_conversation
from testmeeting.room import prepare_audio
from testmeeting.soak import corpus_clips, soak_scenario

SPEAKERS = ("Alice", "Bob", "Carol")
"""Display names of the three simulated participants, in speaking order."""

MEETING_IDS = {
    "google_meet": "abc-defg-hij",
    "zoom": "81234567890",
    "teams": "9312345678901",
}
"""Native meeting ids of the demo room per platform (shapes of docs/api.md 2.3)."""

PASSCODES = {"zoom": "demo", "teams": "demo"}
"""Passcodes carried in the join URLs (``pwd`` / ``p``) where the platform uses them."""

FIRST_TURN_AT_S = 2.0
"""Scenario seconds (clock starts when the bot is admitted) before the first word."""

TURN_GAP_S = 1.2
"""Silence between turns: long enough for voice activity detection to close an utterance."""

END_TAIL_S = 5.0
"""Seconds after the last word before the host ends the meeting (the last final segment
arrives about a second after speech ends; the rest is margin for a loaded CPU)."""

# Real clips with gold references (MANIFEST.tsv), ordered so that any prefix of three turns or
# more has all three speakers and the first three are short (a quick run's scenario).
CORPUS_TURNS: tuple[str, ...] = (
    "ls_testclean_61-70968-0000.wav",  # 4.9 s, LibriSpeech test-clean
    "fw_stereo_diarization_ch1.wav",  # 5.0 s, LibriSpeech via faster-whisper's tests
    "LJ001-0009.wav",  # 7.6 s, LJ Speech
    "jfk.wav",  # 11.0 s, JFK inaugural address
    "ls_testclean_1995-1837-0001.wav",  # 8.7 s, LibriSpeech test-clean
)

SYNTHETIC_TURNS: tuple[str, ...] = (
    "Good morning everyone, thanks for joining the weekly planning meeting.",
    "Morning. The release candidate passed all of its tests last night.",
    "Great news. I will write the announcement and send it this afternoon.",
    "Before we ship, please check the documentation for the new settings.",
    "I can do that today and tell you when it is finished.",
)


class SpeechSource(StrEnum):
    """Where the demo's speech comes from."""

    FILES = "files"
    CORPUS = "corpus"
    PACKAGED = "packaged"
    ESPEAK = "espeak"


@dataclass(frozen=True, slots=True)
class DemoScenario:
    """The scenario the simulator plays and what the summary compares against.

    Attributes:
        scenario: The room's script (no lobby; three participants; the host ends it).
        source: Which speech was used.
        speech_seconds: Total length of all utterances, seconds.
        references: Reference text per turn in speaking order (``None`` where unknown).
        voiced_ends: Per turn, seconds from the clip's start to its last voiced 20 ms frame
            (clips carry trailing silence; latency counts from the end of the voice).
        voiced_starts: Per turn, seconds from the clip's start to its first voiced frame
            (empty: from the clip's start); word-level speaker accuracy uses both.
    """

    scenario: Scenario
    source: SpeechSource
    speech_seconds: float
    references: tuple[str | None, ...]
    voiced_ends: tuple[float, ...]
    voiced_starts: tuple[float, ...] = ()


VOICE_FRAME_S = 0.02
VOICE_FLOOR_DB = 40.0
"""A 20 ms frame is voiced when its RMS is within this many dB of the clip's loudest frame."""


def voiced_end(pcm: bytes, sample_rate: int = 16_000) -> float:
    """Seconds from the start of 16-bit mono ``pcm`` to the end of its last voiced frame.

    Returns the clip's full length when it is silent throughout.
    """
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
    size = int(sample_rate * VOICE_FRAME_S)
    count = len(samples) // size
    if count == 0:
        return len(samples) / sample_rate
    rms = np.sqrt(np.mean(samples[: count * size].reshape(count, size) ** 2, axis=1)) + 1e-9
    level = 20 * np.log10(rms)
    voiced = np.flatnonzero(level >= level.max() - VOICE_FLOOR_DB)
    if rms.max() < 1.0 or voiced.size == 0:
        return len(samples) / sample_rate
    return float((voiced[-1] + 1) * size / sample_rate)


def default_speech_dir(repo: Path) -> Path:
    """``../shared/data/speech`` relative to the checkout ``repo``."""
    return repo.parent / "shared" / "data" / "speech"


def _holds_turns(speech_dir: Path | None) -> bool:
    return speech_dir is not None and all((speech_dir / name).is_file() for name in CORPUS_TURNS)


def _folder_source(speech_dir: Path) -> SpeechSource:
    if packaged_speech.is_materialised(speech_dir):
        return SpeechSource.PACKAGED
    return SpeechSource.CORPUS


def find_speech(corpus: Path | None, scratch: Path) -> Path | None:
    """The real-speech folder the demo plays (blocking: may decode; use a thread).

    Args:
        corpus: The real-speech corpus folder, if one is configured.
        scratch: Folder to decode the packaged set into when the corpus is not there
            (created; about 4.5 MB of WAV).

    Returns:
        ``corpus`` when it holds the demo's clips, else ``scratch`` with the packaged clips
        decoded under the corpus's names, else ``None`` (the packaged set is not installed:
        the demo falls back to espeak-ng).

    Raises:
        testmeeting.errors.ScenarioError: ffmpeg is missing or cannot decode a packaged clip.
    """
    if _holds_turns(corpus):
        return corpus
    if not packaged_speech.available():
        return None
    return packaged_speech.materialise(scratch)


def pick_source(audio: list[Path], speech_dir: Path | None) -> SpeechSource:
    """Choose the speech: given files, else real clips when they are there, else espeak.

    Real clips are the corpus's, or the packaged set's when ``speech_dir`` is where
    :func:`find_speech` decoded it.
    """
    if audio:
        return SpeechSource.FILES
    if speech_dir is not None and _holds_turns(speech_dir):
        return _folder_source(speech_dir)
    return SpeechSource.ESPEAK


def _turns(source: SpeechSource, audio: list[Path]) -> list[dict[str, str]]:
    if source is SpeechSource.FILES:
        return [{"file": str(path.resolve())} for path in audio]
    if source in (SpeechSource.CORPUS, SpeechSource.PACKAGED):
        return [{"file": name} for name in CORPUS_TURNS]
    return [{"text": text} for text in SYNTHETIC_TURNS]


def _scenario(platform: str, timed: list[tuple[float, dict[str, str]]], end_at: float) -> Scenario:
    participants: list[dict[str, object]] = [{"name": name, "utterances": []} for name in SPEAKERS]
    for index, (at, turn) in enumerate(timed):
        utterances = participants[index % len(SPEAKERS)]["utterances"]
        assert isinstance(utterances, list)  # noqa: S101 -- built just above; narrows the type
        utterances.append({"at": round(at, 3), **turn})
    return Scenario.model_validate(
        {
            "platform": platform,
            "meeting_id": MEETING_IDS[platform],
            "passcode": PASSCODES.get(platform),
            "title": "meetbot demo",
            "lobby": False,
            "participants": participants,
            "end_at": round(end_at, 3),
        }
    )


def build_scenario(
    platform: str,
    *,
    audio: list[Path],
    speech_dir: Path | None,
    max_speech_seconds: float | None = None,
) -> DemoScenario:
    """Build the demo scenario (blocking: decodes or synthesises audio; use a thread).

    Args:
        platform: ``google_meet``, ``zoom`` or ``teams``.
        audio: Files given with ``--audio`` (any format ffmpeg reads), possibly empty.
        speech_dir: The real-speech folder (the corpus or the decoded packaged set), if any.
        max_speech_seconds: Keep only as many turns as fit in this much speech (at least
            three, so every speaker talks); ``None`` keeps them all.

    Returns:
        The scenario, its speech source, total speech length and per-turn references.

    Raises:
        testmeeting.errors.ScenarioError: A file cannot be read or synthesis failed.
    """
    source = pick_source(audio, speech_dir)
    turns = _turns(source, audio)
    search = [speech_dir] if speech_dir is not None else []
    # Measure every clip with the simulator's own loader (same decoding, same durations).
    draft = _scenario(platform, [(0.0, turn) for turn in turns], 0.0)
    prepared = prepare_audio(draft, search)
    durations: list[float] = []
    references: list[str | None] = []
    ends: list[float] = []
    for index in range(len(turns)):
        clip = prepared[(index % len(SPEAKERS), index // len(SPEAKERS))]
        durations.append(clip.duration)
        references.append(clip.text)
        ends.append(voiced_end(clip.pcm))
    keep = len(turns)
    if max_speech_seconds is not None:
        keep = min(len(turns), len(SPEAKERS))
        while keep < len(turns) and sum(durations[: keep + 1]) <= max_speech_seconds:
            keep += 1
    timed: list[tuple[float, dict[str, str]]] = []
    at = FIRST_TURN_AT_S
    for turn, duration in zip(turns[:keep], durations[:keep], strict=True):
        timed.append((at, turn))
        at += duration + TURN_GAP_S
    end_at = at - TURN_GAP_S + END_TAIL_S
    return DemoScenario(
        scenario=_scenario(platform, timed, end_at),
        source=source,
        speech_seconds=sum(durations[:keep]),
        references=tuple(references[:keep]),
        voiced_ends=tuple(ends[:keep]),
    )


def build_conversation_scenario(platform: str, speech_dir: Path, style: str) -> DemoScenario:
    """The issue-12 conversation (``testmeeting.conversation``) as the demo's meeting.

    ``style="conversation"``: −300…+300 ms between turns, backchannels over the speaker, a
    21 s monologue; ``"polite"``: the same clips 1.2 s apart. Every clip is one ``speech``
    event of the simulator's timeline (a monologue's sentences too), in start order, and its
    latency counts from the end of its voice.

    ``speech_dir`` is the corpus or the decoded packaged set (:func:`find_speech`).

    Raises:
        FileNotFoundError: A clip of the conversation is missing from ``speech_dir``.
    """
    talk = build_conversation(speech_dir, "polite" if style == "polite" else "conversation")
    participants = talk.scenario_participants()
    for participant in participants:
        said = participant["utterances"]
        assert isinstance(said, list)  # noqa: S101 -- built by scenario_participants
        for utterance in said:
            utterance["at"] = round(float(utterance["at"]) + FIRST_TURN_AT_S, 3)
    pieces = talk.pieces
    scenario = Scenario.model_validate(
        {
            "platform": platform,
            "meeting_id": MEETING_IDS[platform],
            "passcode": PASSCODES.get(platform),
            "title": f"meetbot demo ({style})",
            "lobby": False,
            "participants": participants,
            "end_at": round(FIRST_TURN_AT_S + talk.duration + END_TAIL_S, 3),
        }
    )
    return DemoScenario(
        scenario=scenario,
        source=_folder_source(speech_dir),
        speech_seconds=sum(p.end - p.start for p in pieces),
        references=tuple(p.text for p in pieces),
        voiced_ends=tuple(p.voiced_end - p.start for p in pieces),
        voiced_starts=tuple(p.voiced_start - p.start for p in pieces),
    )


def build_soak_scenario(platform: str, speech_dir: Path, seconds: float) -> DemoScenario:
    """The soak meeting of ``seconds`` (:mod:`testmeeting.soak`) as the demo's meeting.

    Continuous turns of the corpus's English clips, a guest joining every three minutes (chat,
    hand, screen share, leaving later), a chat line a minute. Each clip is one turn of the
    summary, in start order (blocking: decodes each clip once; use a thread).

    Raises:
        OSError: The corpus's ``MANIFEST.tsv`` cannot be read.
        testmeeting.errors.ScenarioError: A clip cannot be decoded.
    """
    scenario, turns = soak_scenario(
        corpus_clips(speech_dir),
        seconds,
        platform=platform,
        meeting_id=MEETING_IDS[platform],
        passcode=PASSCODES.get(platform),
        lead_in_s=FIRST_TURN_AT_S,
    )
    prepared = prepare_audio(scenario, [speech_dir])
    index = {p.name: i for i, p in enumerate(scenario.participants)}
    said: dict[str, int] = {}
    references: list[str | None] = []
    ends: list[float] = []
    durations: list[float] = []
    for turn in turns:
        slot = (index[turn.speaker], said.get(turn.speaker, 0))
        said[turn.speaker] = slot[1] + 1
        clip = prepared[slot]
        references.append(clip.text)
        ends.append(voiced_end(clip.pcm))
        durations.append(clip.duration)
    return DemoScenario(
        scenario=scenario,
        source=_folder_source(speech_dir),
        speech_seconds=sum(durations),
        references=tuple(references),
        voiced_ends=tuple(ends),
    )
