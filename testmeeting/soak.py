"""A soak meeting of any length: continuous talk from the corpus, people coming and going.

:func:`soak_scenario` lays out a meeting of ``seconds``: three regulars (Alice, Bob, Carol)
present throughout, and every ``churn_every_s`` seconds a guest who joins, says hello in the
chat, raises and lowers a hand, shares a screen, and leaves one and a half churn periods later
(so guests overlap; the times scale with ``churn_every_s``). Everyone present takes turns
saying the corpus's English clips one after another, ``gap_s`` apart, from ``lead_in_s`` to
the end; every minute one of the regulars writes in the chat. The corpus is reused in order as
often as needed.

It is cheap for hours: the simulator decodes each clip once (``prepare_audio`` shares the
decoded copy between utterances of the same file), so its memory is the corpus's, whatever the
length; each scripted action is one sleeping task.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testmeeting.scenario import Scenario

REGULARS = ("Alice", "Bob", "Carol")
CHAT_EVERY_S = 60.0
END_TAIL_S = 3.0
# When a guest does what, as fractions of ``churn_every_s`` after their arrival (with the
# default 180 s: chat at 5 s, hand 10–25 s, screen share 30–90 s, leaving at 270 s).
CHAT_AFTER = 5 / 180
HAND_FROM, HAND_TO = 10 / 180, 25 / 180
SCREEN_FROM, SCREEN_TO = 30 / 180, 90 / 180
STAY = 1.5


@dataclass(frozen=True, slots=True)
class SoakTurn:
    """One clip said: by ``speaker``, from scenario second ``at``, ``duration`` seconds long."""

    speaker: str
    file: str
    at: float
    duration: float


@dataclass(frozen=True, slots=True)
class _Guest:
    name: str
    join_at: float
    leave_at: float


def corpus_clips(speech_dir: Path) -> list[tuple[str, float]]:
    """``(file, seconds)`` of the corpus's English clips, in ``MANIFEST.tsv`` order.

    Raises:
        OSError: ``MANIFEST.tsv`` cannot be read.
    """
    with (speech_dir / "MANIFEST.tsv").open(encoding="utf-8") as manifest:
        rows = csv.DictReader(manifest, delimiter="\t")
        return [(row["file"], float(row["duration_s"])) for row in rows if row["language"] == "en"]


def _guests(seconds: float, churn_every_s: float) -> list[_Guest]:
    guests: list[_Guest] = []
    join = churn_every_s
    while join < seconds:
        number = len(guests) + 1
        leave = min(join + STAY * churn_every_s, seconds)
        guests.append(_Guest(f"Guest {number}", join, leave))
        join += churn_every_s
    return guests


def soak_scenario(
    clips: Sequence[tuple[str, float]],
    seconds: float,
    *,
    platform: str,
    meeting_id: str,
    passcode: str | None = None,
    churn_every_s: float = 180.0,
    gap_s: float = 0.4,
    lead_in_s: float = 2.0,
) -> tuple[Scenario, list[SoakTurn]]:
    """The soak meeting (see the module docstring) and its turns in start order.

    Args:
        clips: ``(file, seconds)`` to say, reused in order (:func:`corpus_clips`).
        seconds: Length of the talk; the host ends the meeting a few seconds after it.
        platform: The skin.
        meeting_id: The room's native id.
        passcode: The join URL's passcode, if the platform has one.
        churn_every_s: Seconds between two guests' arrivals.
        gap_s: Silence between two turns.
        lead_in_s: Scenario seconds before the first word.

    Raises:
        ValueError: No clips, or a non-positive length.
    """
    if not clips or seconds <= 0:
        raise ValueError("a soak meeting needs clips and a positive length")
    guests = _guests(seconds, churn_every_s)
    turns: list[SoakTurn] = []
    at, n = lead_in_s, 0
    while at < seconds:
        file, duration = clips[n % len(clips)]
        present = [*REGULARS] + [
            g.name for g in guests if g.join_at + 1 <= at and at + duration + 1 < g.leave_at
        ]
        turns.append(SoakTurn(present[n % len(present)], file, round(at, 3), duration))
        at += duration + gap_s
        n += 1
    end = (turns[-1].at + turns[-1].duration) if turns else seconds
    people: dict[str, dict[str, Any]] = {
        name: {"name": name, "utterances": [], "chat": []} for name in REGULARS
    }
    for guest in guests:

        def after(fraction: float, joined: float = guest.join_at) -> float:
            return round(joined + fraction * churn_every_s, 3)

        people[guest.name] = {
            "name": guest.name,
            "join_at": guest.join_at,
            "leave_at": guest.leave_at,
            "utterances": [],
            "chat": [{"at": after(CHAT_AFTER), "text": f"Hello, {guest.name} here"}],
            "hands": [{"at": after(HAND_FROM), "lower_at": after(HAND_TO)}],
            "screens": [{"at": after(SCREEN_FROM), "stop_at": after(SCREEN_TO)}],
        }
    for turn in turns:
        people[turn.speaker]["utterances"].append({"at": turn.at, "file": turn.file})
    minute = 1
    while minute * CHAT_EVERY_S < seconds:
        author = REGULARS[minute % len(REGULARS)]
        people[author]["chat"].append({"at": minute * CHAT_EVERY_S, "text": f"Note {minute}"})
        minute += 1
    scenario = Scenario.model_validate(
        {
            "platform": platform,
            "meeting_id": meeting_id,
            "passcode": passcode,
            "title": "meetbot soak",
            "lobby": False,
            "participants": list(people.values()),
            "end_at": round(max(end, seconds) + END_TAIL_S, 3),
        }
    )
    return scenario, turns
