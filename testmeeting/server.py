"""Run the simulator in-process: ``async with TestMeetingServer(...) as server``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from meetbot_common.local_server import LocalServer
from testmeeting.app import create_app
from testmeeting.app_keys import ROOMS
from testmeeting.certs import generate_pem, server_ssl_context
from testmeeting.platforms import Platform, browser_args, meeting_path
from testmeeting.room import Room, Rooms, TimelineEvent
from testmeeting.scenario import Scenario
from testmeeting.settings import TestMeetingSettings


class TestMeetingServer(LocalServer):
    """The simulator on two loopback ports, for tests, benchmarks and the demo.

    An async context manager (:class:`~meetbot_common.local_server.LocalServer`): the ports
    are open, and the scenario rooms exist, inside the block; :meth:`stop` closes every room
    (the application's cleanup) and both ports.

    Args:
        scenario: A scenario (or several) whose rooms exist from the start.
        port: HTTPS port for the platform hosts; 0 picks a free one.
        http_port: Plain HTTP port for the host API and ``/p/<host>/…``; 0 picks one.
        host: Listen address.
        speech_dir: Folder searched for scenario audio (e.g. ``MEETBOT_SPEECH_DIR``).
        scenario_dir: Folder searched first (e.g. the scenario file's folder).

    Example::

        async with TestMeetingServer(scenario=scenario, port=0) as server:
            browser = await pw.chromium.launch(args=server.browser_args(), ...)
            await page.goto(server.meeting_url("google_meet", "abc-defg-hij"))
            events = server.room("google_meet", "abc-defg-hij").timeline()
    """

    __test__ = False  # not a pytest test class despite the name

    def __init__(
        self,
        scenario: Scenario | list[Scenario] | None = None,
        port: int = 0,
        http_port: int = 0,
        host: str = "127.0.0.1",
        speech_dir: Path | None = None,
        scenario_dir: Path | None = None,
    ) -> None:
        if scenario is None:
            self._scenarios = []
        elif isinstance(scenario, Scenario):
            self._scenarios = [scenario]
        else:
            self._scenarios = list(scenario)
        self._settings = TestMeetingSettings(
            host=host, https_port=port, http_port=http_port, speech_dir=speech_dir
        )
        super().__init__()
        self._scenario_dir = scenario_dir
        self._app = create_app(self._settings, [scenario_dir] if scenario_dir else None)
        self.https_port = 0
        self.http_port = 0
        self.cert_pem = b""
        """PEM of this run's self-signed certificate (for ``curl --cacert`` and the like)."""

    @property
    def host(self) -> str:
        """Listen address."""
        return self._settings.host

    @property
    def http_url(self) -> str:
        """Base URL of the host API, e.g. ``http://127.0.0.1:40123`` (no trailing slash)."""
        return f"http://{self.host}:{self.http_port}"

    @property
    def rooms(self) -> Rooms:
        """Every room of this server."""
        return self._app[ROOMS]

    async def start(self) -> None:
        """Listen on both ports and create the scenario rooms."""
        cert_pem, key_pem = await asyncio.to_thread(generate_pem)
        tls = await asyncio.to_thread(server_ssl_context, cert_pem, key_pem)
        self.cert_pem = cert_pem
        await self._serve(self._app)
        self.https_port = await self._listen(self.host, self._settings.https_port, tls)
        self.http_port = await self._listen(self.host, self._settings.http_port)
        for scenario in self._scenarios:
            await self.rooms.create(scenario, self._scenario_dir)

    def browser_args(self) -> list[str]:
        """Chromium flags that send the platforms' hosts here (see :func:`browser_args`)."""
        return browser_args(self.https_port, self.host)

    def meeting_url(
        self, platform: Platform | str, meeting_id: str, passcode: str | None = None
    ) -> str:
        """The real-shaped join URL of a room, e.g. ``https://meet.google.com/abc-defg-hij``."""
        host, path = meeting_path(Platform(platform), meeting_id, passcode)
        return f"https://{host}{path}"

    def local_url(
        self, platform: Platform | str, meeting_id: str, passcode: str | None = None
    ) -> str:
        """The same page on the plain HTTP port (no browser flags needed)."""
        host, path = meeting_path(Platform(platform), meeting_id, passcode)
        return f"{self.http_url}/p/{host}{path}"

    def room(self, platform: Platform | str, meeting_id: str) -> Room:
        """A room by key.

        Raises:
            RoomNotFound: There is none.
        """
        return self.rooms.get(Platform(platform), meeting_id)

    async def create_room(self, scenario: Scenario) -> Room:
        """Open another room.

        Raises:
            RoomExists: The key is taken.
            ScenarioError: Its audio cannot be prepared.
        """
        return await self.rooms.create(scenario, self._scenario_dir)

    def timeline(self, platform: Platform | str, meeting_id: str) -> list[TimelineEvent]:
        """The ground-truth timeline of a room (UNIX epoch seconds)."""
        return self.room(platform, meeting_id).timeline()
