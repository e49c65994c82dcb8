"""Scenario files: who is in a room, what they say and do, and how the host behaves.

A scenario is YAML or JSON validated by :class:`Scenario`. Times (``at``, ``join_at``, …) are
seconds on the **scenario clock**. By default (``clock: first_admitted``) the clock starts
when the first browser participant (the bot under test) enters the meeting — after the lobby
if there is one — so nothing scripted happens before the bot can hear it. With
``clock: room_created`` it starts when the room is created.

Simulated participants with ``join_at <= 0`` are already in the meeting when the room is
created. Audio paths are resolved against the scenario file's folder, then the real-speech
folder (``MEETBOT_SPEECH_DIR``). An utterance's reference text is its ``text``, else the
``.txt`` file beside its audio file.

Example::

    platform: google_meet
    meeting_id: abc-defg-hij
    lobby: true
    admission: {decision: admit, after_s: 1.0}
    participants:
      - name: Alice
        utterances:
          - {at: 0.5, file: LJ001-0001.wav}
          - {at: 9.0, text: "Thanks everyone."}      # synthesised with espeak-ng
        chat: [{at: 3.0, text: "Hello from Alice"}]
        hands: [{at: 4.0, lower_at: 6.0}]
        screens: [{at: 10.0, stop_at: 15.0}]
      - {name: Bob, join_at: 5.0, leave_at: 20.0}
    removals: [{at: 12.0}]          # no name: the first browser participant (the bot)
    end_at: 30.0
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from testmeeting.errors import ScenarioError
from testmeeting.platforms import Platform, valid_meeting_id


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Utterance(_Model):
    """One thing a simulated participant says.

    Attributes:
        at: Scenario-clock seconds when the speech starts.
        file: WAV or FLAC file to play (any rate and channel count; played as 16 kHz mono).
        text: Reference text; when ``file`` is absent it is synthesised with espeak-ng.
    """

    at: float = Field(ge=0)
    file: str | None = None
    text: str | None = None

    @model_validator(mode="after")
    def _file_or_text(self) -> Self:
        if self.file is None and not self.text:
            raise ValueError("an utterance needs a file or a text")
        return self


class ChatLine(_Model):
    """A chat message a simulated participant sends at ``at`` seconds."""

    at: float = Field(ge=0)
    text: str = Field(min_length=1)


class HandRaise(_Model):
    """A hand raised at ``at`` and lowered at ``lower_at`` (never, if absent)."""

    at: float = Field(ge=0)
    lower_at: float | None = None


class ScreenShare(_Model):
    """A screen share started at ``at`` and stopped at ``stop_at`` (never, if absent)."""

    at: float = Field(ge=0)
    stop_at: float | None = None


class SimulatedParticipant(_Model):
    """A scripted participant.

    Attributes:
        name: Display name shown on tiles, in the people panel and on chat messages.
        join_at: Seconds when they join; ``<= 0`` means present from room creation.
        leave_at: Seconds when they leave, if ever.
        mic_on: Microphone state shown in the people panel.
        camera_on: Camera state shown on the tile.
        utterances: What they say.
        chat: Chat messages they send.
        hands: Hand raises.
        screens: Screen shares (the participant's ``screen_on`` in the people list).
    """

    name: str = Field(min_length=1, max_length=100)
    join_at: float = 0.0
    leave_at: float | None = None
    mic_on: bool = True
    camera_on: bool = False
    utterances: list[Utterance] = Field(default_factory=list)
    chat: list[ChatLine] = Field(default_factory=list)
    hands: list[HandRaise] = Field(default_factory=list)
    screens: list[ScreenShare] = Field(default_factory=list)


class Admission(_Model):
    """How the host answers browser participants waiting in the lobby.

    Attributes:
        decision: ``admit``, ``deny`` or ``ignore`` (never answers; the host API can still
            admit or deny by hand).
        after_s: Wall-clock seconds between entering the lobby and the host's decision.
        no_answer_after_s: With ``ignore``: seconds after which the platform gives up and
            shows its "no one responded" screen; ``None`` waits forever.
    """

    decision: Literal["admit", "deny", "ignore"] = "admit"
    after_s: float = Field(default=1.0, ge=0)
    no_answer_after_s: float | None = Field(default=None, gt=0)


class Removal(_Model):
    """The host removes a participant at ``at``.

    ``name`` absent means the first browser participant (the bot under test).
    """

    at: float = Field(ge=0)
    name: str | None = None


VARIANTS: dict[Platform, frozenset[str]] = {
    Platform.GOOGLE_MEET: frozenset(
        {
            "end_dialog",
            "cant_join",
            "sign_in",
            "post_call_pages",
            "notetaker_consent",
            "frozen_tile",
            "lobby_with_controls",
            "risky_queue",
        }
    ),
    Platform.ZOOM: frozenset(
        {
            "legacy_form",
            "invalid_id_modal",
            "passcode_prompt",
            "bot_wall",
            "speaker_view",
            "post_call_pages",
            "passcode_beside_name",
        }
    ),
    Platform.TEAMS: frozenset(
        {
            "sign_in_redirect",
            "id_passcode_form",
            "captcha",
            "post_call_pages",
            "bot_blocked",
            "frozen_tile",
            "bot_approval",
        }
    ),
}
"""Skin variants per platform (each skin's ``data-tm-variant`` templates say what they show)."""

HELD_IN_LOBBY: frozenset[tuple[Platform, str]] = frozenset({(Platform.TEAMS, "bot_approval")})
"""Variants whose platform holds every browser participant (the bot under test) in the lobby
whatever the scenario's ``lobby`` says: Teams places a participant it detects as an external bot
in the lobby irrespective of the meeting's lobby configuration (meeting policy
``ExternalBotAccessMode`` = ``RequireApprovalWhenDetected``, Microsoft Learn "Manage external
bots and their access to meetings"); the scenario's ``admission`` is then the organizer's
explicit approval."""


class Scenario(_Model):
    """One room and its script. See the module docstring for the clock and an example.

    Attributes:
        platform: Which skin the room wears.
        meeting_id: Native meeting id (``abc-defg-hij``; Zoom 9–11 digits; Teams 10–15 digits,
            or a legacy thread id ``19:meeting_…@thread.v2`` served at ``/l/meetup-join/…``).
        passcode: Passcode carried in the join URL (``pwd`` / ``p``), informational.
        title: Meeting title shown by the skins.
        lobby: Whether browser participants wait in a lobby before the meeting.
        admission: The host's lobby behaviour.
        clock: When scenario time 0 is.
        participants: Simulated participants.
        removals: Host removals.
        end_at: When the host ends the meeting for everyone.
        variant: A skin variant of :data:`VARIANTS` (another join path or end screen).
        frame_interval_ms: How often a browser participant's page grabs a frame of its camera
            and screen (and reports their frame rate), as a platform's self-view or video
            pipeline draws them; 1 s by default.
    """

    platform: Platform
    meeting_id: str
    passcode: str | None = None
    title: str = "Team sync"
    lobby: bool = True
    admission: Admission = Field(default_factory=Admission)
    clock: Literal["first_admitted", "room_created"] = "first_admitted"
    participants: list[SimulatedParticipant] = Field(default_factory=list)
    removals: list[Removal] = Field(default_factory=list)
    end_at: float | None = Field(default=None, ge=0)
    variant: str | None = None
    frame_interval_ms: int = Field(default=1000, ge=100, le=10_000)

    @property
    def waits_in_lobby(self) -> bool:
        """Whether browser participants wait in the lobby (:data:`HELD_IN_LOBBY` or ``lobby``)."""
        return self.lobby or (self.platform, self.variant or "") in HELD_IN_LOBBY

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.variant is not None and self.variant not in VARIANTS[self.platform]:
            raise ValueError(
                f"variant {self.variant!r} is not one of {sorted(VARIANTS[self.platform])}"
            )
        if not valid_meeting_id(self.platform, self.meeting_id):
            raise ValueError(
                f"meeting_id {self.meeting_id!r} has the wrong shape for {self.platform}"
            )
        names = [p.name for p in self.participants]
        if len(set(names)) != len(names):
            raise ValueError("participant names must be unique")
        return self


def parse_scenario(text: str) -> Scenario:
    """Validate a scenario from YAML or JSON text.

    Raises:
        ScenarioError: The text is not YAML/JSON or does not match :class:`Scenario`.
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"scenario is neither YAML nor JSON: {exc}") from exc
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_validation_message(exc)) from exc


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file (blocking; call through ``asyncio.to_thread``).

    Raises:
        ScenarioError: The file is unreadable or invalid.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc.strerror}") from exc
    return parse_scenario(text)


def _validation_message(exc: ValidationError) -> str:
    problems = [
        {"at": ".".join(str(part) for part in error["loc"]), "problem": error["msg"]}
        for error in exc.errors()
    ]
    return "invalid scenario: " + json.dumps(problems)
