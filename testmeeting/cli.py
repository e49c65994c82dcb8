"""``meetbot test-meeting [--scenario FILE] [--port N] [--http-port N]``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from testmeeting.errors import ScenarioError
from testmeeting.platforms import Platform
from testmeeting.scenario import Admission, Scenario, load_scenario
from testmeeting.server import TestMeetingServer
from testmeeting.settings import TestMeetingSettings


def demo_scenarios() -> list[Scenario]:
    """One room per platform: a lobby, Alice who greets the room, and Bob who stays silent.

    The host answers the lobby after 2 s; Alice greets the room (espeak-ng), writes in the chat and
    raises her hand; Bob stays silent.
    """
    alice = {
        "name": "Alice Example",
        "utterances": [{"at": 1.0, "text": "Hello and welcome. Let us start with the agenda."}],
        "chat": [{"at": 2.0, "text": "Agenda: status, risks, next steps."}],
        "hands": [{"at": 4.0, "lower_at": 8.0}],
    }
    ids = {
        Platform.GOOGLE_MEET: "abc-defg-hij",
        Platform.ZOOM: "81234567890",
        Platform.TEAMS: "9312345678901",
    }
    return [
        Scenario.model_validate(
            {
                "platform": platform,
                "meeting_id": meeting_id,
                "admission": Admission(decision="admit", after_s=2.0).model_dump(),
                "participants": [alice, {"name": "Bob Example"}],
            }
        )
        for platform, meeting_id in ids.items()
    ]


async def _serve(
    scenarios: list[Scenario], scenario_dir: Path | None, settings: TestMeetingSettings
) -> None:
    server = TestMeetingServer(
        scenarios,
        port=settings.https_port,
        http_port=settings.http_port,
        host=settings.host,
        speech_dir=settings.speech_dir,
        scenario_dir=scenario_dir,
    )
    async with server:
        print(f"testmeeting: host API {server.http_url}/api/rooms")
        for room in server.rooms.all():
            platform, meeting_id = room.key
            print(f"  {platform.value:<12} {server.meeting_url(platform, meeting_id)}")
            print(f"  {'':<12} {server.local_url(platform, meeting_id)}")
        print("Chromium flags:")
        for arg in server.browser_args():
            print(f"  {arg}")
        sys.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, stop.set)
        await stop.wait()


def main(argv: Sequence[str]) -> int:
    """Run the simulator until interrupted; returns the exit code (2 on a bad scenario)."""
    parser = argparse.ArgumentParser(
        prog="meetbot test-meeting", description="Run the local meeting simulator."
    )
    parser.add_argument(
        "--scenario",
        type=Path,
        help="scenario file (YAML or JSON); default: a demo room per platform",
    )
    parser.add_argument("--port", type=int, help="HTTPS port of the platform hosts (default 8443)")
    parser.add_argument(
        "--http-port", type=int, help="plain HTTP port of the host API (default 8088)"
    )
    args = parser.parse_args(list(argv))
    overrides: dict[str, int] = {}
    if args.port is not None:
        overrides["https_port"] = args.port
    if args.http_port is not None:
        overrides["http_port"] = args.http_port
    settings = TestMeetingSettings(**overrides)  # type: ignore[arg-type]  # pydantic-settings fields by name
    try:
        scenarios = [load_scenario(args.scenario)] if args.scenario else demo_scenarios()
        asyncio.run(_serve(scenarios, args.scenario.parent if args.scenario else None, settings))
    except ScenarioError as exc:
        print(f"meetbot test-meeting: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0
