"""schemathesis with every check against the live app's own OpenAPI document: zero 5xx, zero
responses that violate the document (status codes, content types, headers, bodies, ``Allow``),
no schema-invalid request accepted, no schema-valid one refused, auth enforced.

The app runs for real on loopback (its own event loop in a thread, a real database on each of
SQLite and PostgreSQL) with a real owner key; schemathesis loads ``/api/v1/openapi.json`` from
it and sends generated requests, schema-valid and schema-invalid, to every operation with
every check schemathesis registers. Bounded: a few derandomized examples per operation and
mode.

One allowance: a schema-valid request may be refused for a reason no JSON Schema can state —
relative to the clock (``expires_at_in_past``, ``scheduled_start_in_past``), to stored state
(``zoom_token_required``: no usable Zoom connection; ``prompt_version_not_found``: no such
action prompt version in the workspace; ``idempotency_key_reused``: an earlier request sent the
same ``Idempotency-Key`` with another body), to a third party
(``zoom_authorization_failed``: Zoom refused the code), to what a host name resolves to
(``url_not_allowed``: a ``default_avatar_url`` at a private address or none), to the
workspace's default ``recording_enabled`` or another option (``video_needs_recording``,
``format_has_no_video``), to the instant a timestamp names once
its offset is applied (``invalid_date``: a ``date_from``/``date_to`` outside 0002–9997 UTC;
``format: date-time`` has no range), to a registry (an invitation's ``email`` at a
special-use or reserved domain such as ``.test``; ``format: email`` has no such list) or to
another field's value
(``invalid_meeting_id`` when both ``meeting_url`` and ``native_meeting_id`` are given: they must
agree). The per-platform id and URL rules are in the document (a ``oneOf`` branch per platform),
so ``invalid_meeting_id`` and ``malformed_meeting_url`` are allowed only where the platform is
not in the body: a scheduled bot's ``PATCH`` (its stored platform). Those refusals are
documented with their fields; any other refusal of valid data fails the test.

Schema-invalid requests are generated for operations with a body or query parameters; path
parameters get their hostile values from tests/api/test_hostile_fuzz.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import requests
import schemathesis
from aiohttp import web
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from jsonschema import Draft202012Validator
from schemathesis.checks import (
    CHECKS,
    CheckContext,
    load_all_checks,
    not_a_server_error,
)
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Ok
from schemathesis.core.transport import Response
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance
from schemathesis.specs.openapi.schemas import OpenApiSchema

from control_plane.api.server import ApiRunner
from control_plane.app import create_app
from control_plane.db.engine import DB
from control_plane.launchers.memory import MemoryLauncher
from control_plane.settings import Settings
from tests.plugins.api_app import KEY_PREFIX, Caller, Tenants

from .fake_zoom import FakeZoom

pytestmark = pytest.mark.api

EXAMPLES_PER_OPERATION = 6
"""Per operation and generation mode (schema-valid, schema-invalid)."""
# docs/api.md Part 1: "Always 501" — a 5xx by contract, still checked against the document.
ALWAYS_501 = {("POST", "/api/v1/bots/{bot_id}/subscribe/refresh")}
BEYOND_SCHEMA = {
    "expires_at_in_past",
    "scheduled_start_in_past",
    "zoom_token_required",
    "prompt_version_not_found",
    "idempotency_key_reused",
    "zoom_authorization_failed",
    "invalid_date",
    # Issue 35: capture combinations that depend on another field or on the workspace's default
    # recording_enabled, and a default_avatar_url whose host resolves to a refused address (or
    # not at all).
    "video_needs_recording",
    "format_has_no_video",
    "url_not_allowed",
}
"""Problem codes that refuse schema-valid data for reasons no schema states (see above)."""
MEETING_CODES = {"invalid_meeting_id", "malformed_meeting_url"}
STORED_PLATFORM = ("PATCH", "/api/v1/bots/schedule/{bot_id}")
"""The operation whose meeting URL is checked against the stored bot's platform."""


def _reserved_email_domain(problem: dict[str, Any]) -> bool:
    """An address refused only for its special-use or reserved domain (``.test``, ``.local``…).

    ``format: email`` cannot state IANA's list of such domains; the field's description does.
    """
    errors = problem.get("errors") or []
    return bool(errors) and all(
        error.get("loc") == ["body", "email"] and "special-use or reserved" in error.get("msg", "")
        for error in errors
    )


def _refused_beyond_schema(response: Response, case: schemathesis.Case[Any]) -> bool:
    if response.status_code not in (400, 422):
        return False
    try:
        problem = json.loads(response.content)
        code = problem.get("code")
    except (ValueError, AttributeError):
        return False
    if code in BEYOND_SCHEMA or _reserved_email_domain(problem):
        return True
    if code not in MEETING_CODES:
        return False
    if (case.operation.method.upper(), case.operation.path) == STORED_PLATFORM:
        return True
    body = case.body if isinstance(case.body, dict) else {}
    both = body.get("meeting_url") is not None and body.get("native_meeting_id") is not None
    return code == "invalid_meeting_id" and both


def positive_data_acceptance_beyond_schema(
    ctx: CheckContext, response: Response, case: schemathesis.Case[Any]
) -> bool | None:
    """schemathesis's ``positive_data_acceptance``, but for the refusals beyond the schema."""
    if _refused_beyond_schema(response, case):
        return None
    return positive_data_acceptance(ctx, response, case)


def _all_checks() -> list[Any]:
    """Every check schemathesis registers, ``positive_data_acceptance`` as above."""
    load_all_checks()
    checks = [
        positive_data_acceptance_beyond_schema if check is positive_data_acceptance else check
        for check in CHECKS.get_all()
    ]
    assert len(checks) >= 14, [getattr(check, "__name__", check) for check in checks]
    return checks


@dataclass(frozen=True)
class LiveApp:
    """A running app: base URL, owner key, a spare key to delete, its fake Zoom (OAuth codes)."""

    base_url: str
    owner: Caller
    spare_key_id: int
    zoom: FakeZoom


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
        # The "ignored auth" check sends requests without a key, which spend the client
        # address's bucket: at the default 50 a long run was answered 429 where 401 is checked.
        address_rate_limit_per_second=10_000,
        address_rate_limit_burst=10_000,
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
            state["live"] = LiveApp(f"http://127.0.0.1:{port}", owner, spare.key_id, zoom)
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
    checks = [c for c in _all_checks() if not (contractual_501 and c is not_a_server_error)]

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

    # Unsatisfiable: nothing of this operation can be made schema-invalid (negative mode).
    with contextlib.suppress(Unsatisfiable):
        exercise()


def _negatable(operation: Any) -> bool:
    """Whether the operation takes a body or query parameters (what negative mode varies)."""
    raw = operation.definition.raw
    query = [p for p in raw.get("parameters", []) if p.get("in") == "query"]
    return bool(query) or "requestBody" in raw


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
        modes = [GenerationMode.POSITIVE]
        if _negatable(operation):
            modes.append(GenerationMode.NEGATIVE)
        for mode in modes:
            try:
                _fuzz(
                    operation.as_strategy(mode, headers=headers, path_parameters=fixed or None),
                    base_url=live_app.base_url,
                    session=session,
                    headers=headers,
                    contractual_501=(operation.method.upper(), operation.path) in ALWAYS_501,
                )
            # Collect every operation's failure, then report them all (schemathesis raises a
            # FailureGroup, a BaseExceptionGroup).
            except (Exception, FailureGroup) as exc:
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    session.close()
    assert operations >= 30
    assert not failures, "\n\n".join(failures)


def _reachable(case: schemathesis.Case[Any], live_app: LiveApp) -> None:
    """Give a chain's call the few values no generator can know, so its links lead somewhere.

    * ``workspace_id``: the owner's workspace (a generated one is someone else's: 404);
    * a webhook endpoint's ``url``: an https URL the SSRF policy accepts (its host does not
      resolve here, which registration accepts; generated strings are rarely URLs at all);
    * a Zoom connection's ``authorization_code``: a fresh one-time code from the fake Zoom, as
      a user's consent would give (Zoom refuses any other: 400).

    Everything else of the call stays as generated; the single-operation test above fuzzes
    these fields themselves.
    """
    if case.path_parameters and "workspace_id" in case.path_parameters:
        case.path_parameters["workspace_id"] = str(live_app.owner.workspace_id)
    if case.method.upper() != "POST" or not isinstance(case.body, dict):
        return
    if case.path.endswith("/webhooks"):
        case.body["url"] = f"https://hooks.example.invalid/{len(str(case.body))}"
    elif case.path.endswith("/zoom/connections"):
        case.body["authorization_code"] = live_app.zoom.authorize("fuzz-user", "fuzz@example.org")


def _body_valid(case: schemathesis.Case[Any], document: dict[str, Any]) -> bool:
    """Whether ``case``'s JSON body (if it has one) is valid by ``document``."""
    body = case.operation.definition.raw.get("requestBody", {})
    schema = body.get("content", {}).get("application/json", {}).get("schema")
    if schema is None or not isinstance(case.body, dict | list):
        return True
    root = {**schema, "components": document["components"]}
    return bool(Draft202012Validator(root).is_valid(case.body))


STATEFUL_SCENARIOS = 12
"""Scenarios of the stateful phase (hypothesis ``max_examples``)."""
STATEFUL_STEPS = 8
"""Calls per scenario at most (``stateful_step_count``)."""


def test_linked_operations_conform_to_the_document(live_app: LiveApp) -> None:
    """The stateful phase: chains of calls that follow the links between operations.

    schemathesis infers links from the document (a created bot's ``bot_id`` into
    ``GET``/``PATCH``/``DELETE /api/v1/bots/{bot_id}``, a webhook endpoint's ``id`` into its
    routes, …) and walks them as a state machine; every response is checked with every check,
    including the stateful ones (a created resource is available, a deleted one is gone).
    Bounded: :data:`STATEFUL_SCENARIOS` derandomized scenarios of up to
    :data:`STATEFUL_STEPS` calls.
    """
    schema = schemathesis.openapi.from_url(f"{live_app.base_url}/api/v1/openapi.json")
    # The meeting summary is a leaf no chain can bring to 2xx (it is written by a worker after
    # the meeting ends, tests/intelligence/test_summary_api.py): walked, it only took steps
    # from the chains above. The single-operation test fuzzes it.
    schema = cast(OpenApiSchema, schema.exclude(path="/api/v1/meetings/{meeting_id}/summary"))
    # Schema-valid chains only: the schema-invalid inputs are the single-operation test's
    # (above). Negative chains were judged on components the client never sends as generated
    # (the key header, added here to every call; a query parameter with an empty name that
    # the HTTP client drops), so a request that reached the server valid was "accepted
    # negative data".
    schema.config.generation.update(modes=[GenerationMode.POSITIVE], with_security_parameters=False)
    machine = schema.as_state_machine()
    linked = schema.operations_with_incoming_links()
    assert len(linked) >= 10, f"only {sorted(linked)} are reached by links"
    checks = _all_checks()
    # A link that puts a value into a generated body (a new Zoom connection's id into a bot's
    # zoom_connection_id) can leave a body the document refuses, still marked schema-valid:
    # such a call is judged by every check but the acceptance of valid data.
    lenient = [c for c in checks if c is not positive_data_acceptance_beyond_schema]
    session = requests.Session()
    headers = live_app.owner.headers
    document = session.get(f"{live_app.base_url}/api/v1/openapi.json").json()
    calls: list[tuple[str, str, int]] = []
    # Bots for the chains that start from a list (GET /meetings → its items' ids): an empty
    # workspace would send every link to a 404.
    for native in ("sta-tefu-lab", "sta-tefu-lcd"):
        created = session.post(
            f"{live_app.base_url}/api/v1/bots",
            json={"platform": "google_meet", "native_meeting_id": native},
            headers=headers,
        )
        assert created.status_code == 201, created.text
    # And an endpoint for the chains that list webhook endpoints (an api key's workspace_id →
    # the list → its items' ids).
    created = session.post(
        f"{live_app.base_url}/api/v1/workspaces/{live_app.owner.workspace_id}/webhooks",
        json={"url": "https://hooks.example.invalid/seed"},
        headers=headers,
    )
    assert created.status_code == 201, created.text

    class Workflow(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: schemathesis.Case[Any]) -> dict[str, Any]:
            # Never delete the fuzzing key itself (its id is small and guessable); keys that a
            # chain created are deleted as the link says.
            if case.path_parameters and case.path_parameters.get("key_id") == live_app.owner.key_id:
                case.path_parameters["key_id"] = live_app.spare_key_id
            _reachable(case, live_app)
            return {"base_url": live_app.base_url, "session": session, "headers": headers}

        def validate_response(
            self,
            response: Any,
            case: schemathesis.Case[Any],
            additional_checks: Any = None,
            **kwargs: Any,
        ) -> None:
            calls.append((case.method.upper(), case.path, response.status_code))
            if (case.method.upper(), case.path) in ALWAYS_501:
                assert response.status_code == 501
                return
            case.validate_response(
                response,
                checks=checks if _body_valid(case, document) else lenient,
                headers=headers,
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    try:
        Workflow.run(
            settings=settings(
                max_examples=STATEFUL_SCENARIOS,
                stateful_step_count=STATEFUL_STEPS,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )
        )
    finally:
        session.close()
    # The chains reached resources that earlier calls made (a 2xx on a path with an id),
    # webhook endpoints and Zoom connections among them.
    followed = {(method, path) for method, path, status in calls if "{" in path and status < 300}
    print(f"stateful: {len(calls)} calls, {len(linked)} linked operations, 2xx: {sorted(followed)}")
    reached = {path for _, path in followed}
    assert any("/webhooks/{endpoint_id}" in path for path in reached), sorted(followed)
    assert any("/zoom/connections/{connection_id}" in path for path in reached), sorted(followed)
