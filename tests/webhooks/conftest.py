"""Settings of the webhook tests: the API fixtures (``tests.plugins.api_app``) with webhooks on.

The app, database and tenant fixtures are the API tests' own (every API test runs on SQLite and
on PostgreSQL); ``settings`` here turns on loopback delivery (``webhook_allow_http``,
``webhook_allow_private``) and shortens the retry schedule and polling.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:  # overrides the API one
    """App settings: memory launcher, loopback receivers allowed, short retries, fast polling."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        webhook_allow_http=True,
        webhook_allow_private=True,
        webhook_retry_schedule=[0.0, 0.2, 0.2],
        webhook_poll_interval_seconds=0.05,
    )
