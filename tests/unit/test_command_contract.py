"""The typed commands of the agent link (agent/contracts/link.py): the union round-trips every
command, argument rules hold on both ends, and a frame the agent cannot parse gets a typed
error answer naming the bad argument."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from agent.contracts.bot_config import CaptureMode, RecordingFormat
from agent.contracts.link import (
    ActionType,
    AgentCommand,
    AnnounceActionCommand,
    AvatarCommand,
    ChatCommand,
    Command,
    CommandErrorCode,
    CommandName,
    HandCommand,
    ScreenShareCommand,
    ScreenshotCommand,
    SettingsChange,
    SpeakCommand,
    StopCommand,
    StopScreenShareCommand,
    StopSpeakingCommand,
    UpdateSettingsCommand,
    UploadSlot,
    parse_control_plane_frame,
    reject_command,
)
from agent.contracts.status import StatusReason

pytestmark = pytest.mark.unit

SLOT = UploadSlot(
    storage_key="bots/x/screenshots/a.png",
    url="http://127.0.0.1/u",
    expires_at=datetime(2030, 1, 1, tzinfo=UTC),
)
EVERY: list[AgentCommand] = [
    StopCommand(reason=StatusReason.SIGTERM),
    ScreenshotCommand(artifact_id="a1", upload=SLOT),
    SpeakCommand(text="hello", voice="alloy"),
    SpeakCommand(audio_url="https://example.org/a.mp3"),
    StopSpeakingCommand(),
    ChatCommand(text="hi"),
    ScreenShareCommand(video_url="https://example.org/v.mp4"),
    StopScreenShareCommand(),
    AvatarCommand(image_url=None),
    HandCommand(raised=False),
    UpdateSettingsCommand(
        changes=SettingsChange(
            capture_modes=(CaptureMode.AUDIO, CaptureMode.VIDEO),
            recording_format=RecordingFormat.WEBM,
        )
    ),
    AnnounceActionCommand(
        id="a5d2",
        action_type=ActionType.ACTION_ITEM,
        text="Send the budget",
        owner="Bob",
        segment_ids=["s1"],
        timestamp=datetime(2030, 1, 1, tzinfo=UTC),
    ),
]


def test_every_command_round_trips_through_the_union_under_its_name() -> None:
    assert {c.name for c in EVERY} == set(CommandName)
    for body in EVERY:
        frame = Command(command=body)
        parsed = parse_control_plane_frame(frame.model_dump_json())
        assert isinstance(parsed, Command)
        assert parsed.command == body
        assert parsed.name is body.name
        assert frame.model_dump(mode="json")["command"]["name"] == body.name.value


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: SpeakCommand(), "neither text nor audio_url"),
        (lambda: SpeakCommand(text="a", audio_url="https://x/a.mp3"), "both"),
        (lambda: ScreenShareCommand(), "no source"),
        (lambda: ScreenShareCommand(url="https://x", image_url="https://x/a.png"), "two"),
        (lambda: ChatCommand(text=""), "empty chat"),
        (lambda: ChatCommand(text="x" * 4097), "chat over 4096"),
        (lambda: AvatarCommand(image_url="ftp://x/a.png"), "not http(s) or data:image/"),
        (lambda: SettingsChange(), "no field"),
        (lambda: StopCommand.model_validate({"reason": "whatever"}), "unknown reason"),
    ],
)
def test_argument_rules(make: object, why: str) -> None:
    with pytest.raises(ValidationError):
        make()  # type: ignore[operator]


def test_settings_change_lists_only_given_fields() -> None:
    change = SettingsChange(language="en", recording_enabled=False)
    assert change.given() == {"language": "en", "recording_enabled": False}


def _raw(command: str) -> str:
    return f'{{"type": "command", "id": "c1", "ts": "2026-01-01T00:00:00Z", "command": {command}}}'


def test_an_unparsable_command_gets_a_typed_error_answer() -> None:
    unknown = reject_command(_raw('{"name": "teleport"}'))
    assert unknown is not None
    assert (unknown.ref_id, unknown.ok, unknown.error) == (
        "c1",
        False,
        CommandErrorCode.UNKNOWN_COMMAND,
    )
    invalid = reject_command(_raw('{"name": "hand", "raised": "maybe"}'))
    assert invalid is not None
    assert (invalid.error, invalid.field) == (CommandErrorCode.INVALID_ARGUMENTS, "raised")
    nested = reject_command(_raw('{"name": "update_settings", "changes": {"language": "x"}}'))
    assert nested is not None
    assert (nested.error, nested.field) == (CommandErrorCode.INVALID_ARGUMENTS, "changes.language")
    # Not a command envelope at all: nobody to answer.
    assert reject_command('{"type": "ack", "id": "a", "ts": "2026-01-01T00:00:00Z"}') is None
    assert reject_command("not json") is None
    # A valid command is not rejected.
    assert reject_command(_raw('{"name": "chat", "text": "hi"}')) is None
