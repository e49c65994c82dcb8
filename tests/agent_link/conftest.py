"""Settings of the agent-link tests: the API app with link timeouts short enough for tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:  # narrows the API's
    """Settings with link timeouts short enough for tests (memory launcher).

    The command timeout leaves room for a test that makes other requests while a command is
    out (a loaded CI machine on PostgreSQL took over 0.5 s for one such GET); the tests of
    the 504 itself wait it out. The subscribe wait likewise leaves a loaded machine time to
    register an agent that a test connects 0.1 s after subscribing (0.4 s got a 404 at load
    15 on PostgreSQL).
    """
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:1",
        subscribe_wait_seconds=2.0,
        agent_command_timeout_seconds=3.0,
        heartbeat_timeout_seconds=30.0,
        agent_connect_timeout_seconds=60.0,
        scheduler_interval_seconds=0.05,
    )
