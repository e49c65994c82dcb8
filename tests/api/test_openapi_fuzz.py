"""schemathesis against the live app's own OpenAPI document: zero 5xx, zero responses that
violate the document (status codes, content types, headers, bodies).

The app runs for real on loopback (its own event loop in a thread, a real database on each of
SQLite and PostgreSQL) with a real owner key; schemathesis loads ``/api/v1/openapi.json`` from
it and sends generated requests to every operation. Bounded: a few examples per operation.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from aiohttp import web
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from control_plane.api.server import ApiRunner
from control_plane.app import create_app
from control_plane.db.engine import DB
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller, Tenants

from .fake_zoom import FakeZoom

pytestmark = pytest.mark.api

EXAMPLES_PER_OPERATION = 6
# docs/api.md Part 1: "Always 501" — a 5xx by contract, still checked against the document.
ALWAYS_501 = {("POST", "/api/v1/bots/{bot_id}/subscribe/refresh")}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@dataclass(frozen=True)
class LiveApp:
    """A running app: its base URL, an owner key, and a spare key of that owner to delete."""

    base_url: str
    owner: Caller
    spare_key_id: int


@pytest.fixture
def live_app(database_url: str, tmp_path: Path) -> Iterator[LiveApp]:
    """Serve the real app on an ephemeral loopback port from a thread with its own loop."""
    settings_ = Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",
        key_prefix=KEY_PREFIX,
        rate_limit_per_second=10_000,
        rate_limit_burst=10_000,
        subscribe_wait_seconds=0,
    )
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def serve() -> None:
        stop = asyncio.Event()
        state["loop"], state["stop"] = asyncio.get_running_loop(), stop
        # Zoom configured (against the local fake): an unconfigured Zoom would answer 503.
        zoom = FakeZoom()
        await zoom.start()
        launcher = MemoryLauncher()
        app = create_app(
            settings_.model_copy(
                update={
                    "zoom_oauth_url": zoom.oauth_url,
                    "zoom_api_base_url": zoom.api_base_url,
                    "zoom_client_id": zoom.client_id,
                    "zoom_client_secret": zoom.client_secret,
                }
            ),
            launcher=launcher,
        )
        runner = ApiRunner(app)  # served as `meetbot serve` serves it
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            tenants = Tenants(app[DB])
            owner = await tenants.workspace("Fuzz")
            spare = await tenants.key(owner)
            port = runner.addresses[0][1]
            state["live"] = LiveApp(f"http://127.0.0.1:{port}", owner, spare.key_id)
            ready.set()
            await stop.wait()
        finally:
            await runner.cleanup()
            await launcher.aclose()
            await zoom.close()

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as exc:  # reported to the test thread below
            state["error"] = exc
            ready.set()

    thread = threading.Thread(target=run, name="live-app", daemon=True)
    thread.start()
    ready.wait(timeout=60)
    if "live" not in state:
        raise RuntimeError("the app did not start") from state.get("error")
    yield state["live"]
    state["loop"].call_soon_threadsafe(state["stop"].set)
    thread.join(timeout=30)


def _fuzz(
    strategy: Any,
    *,
    base_url: str,
    session: requests.Session,
    headers: dict[str, str],
    contractual_501: bool,
) -> None:
    """Send ``EXAMPLES_PER_OPERATION`` generated cases of one operation and validate each."""
    checks = [c for c in CHECKS if not (contractual_501 and c is not_a_server_error)]

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def exercise(case: schemathesis.Case[Any]) -> None:
        response = case.call_and_validate(
            base_url=base_url, session=session, headers=headers, checks=checks
        )
        if contractual_501:
            assert response.status_code == 501

    exercise()


def test_every_operation_conforms_to_the_document(live_app: LiveApp) -> None:
    schema = schemathesis.openapi.from_url(f"{live_app.base_url}/api/v1/openapi.json")
    session = requests.Session()
    headers = live_app.owner.headers
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            failures.append(f"unusable operation in the document: {result.err()}")
            continue
        operation = result.ok()
        operations += 1
        fixed: dict[str, Any] = {}
        if operation.path == "/api/v1/api-keys/{key_id}":
            # Random small ids would delete the fuzzing key itself; aim at a spare one.
            fixed = {"key_id": live_app.spare_key_id}
        try:
            _fuzz(
                operation.as_strategy(headers=headers, path_parameters=fixed or None),
                base_url=live_app.base_url,
                session=session,
                headers=headers,
                contractual_501=(operation.method.upper(), operation.path) in ALWAYS_501,
            )
        except Exception as exc:  # collect every operation's failure, then report them all
            failures.append(f"{operation.label}: {exc}")
    session.close()
    assert operations >= 30
    assert not failures, "\n\n".join(failures)
