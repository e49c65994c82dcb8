"""``Idempotency-Key`` comes from the route's ``idempotent=True`` flag, not from its handler.

The real app with two routes of this test declared ``idempotent=True``: one writes through
``answered_transaction`` and so replays with no code of its own for the key; one answers
without it, and a keyed request to it fails (500) instead of ignoring the key silently.
"""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from control_plane.api.routes import ROUTE_SPECS, ApiRoutes, spec_index
from control_plane.api.transaction import answered_transaction
from control_plane.app import create_app
from control_plane.launchers.memory import MemoryLauncher
from control_plane.records.schemas import Message
from control_plane.settings import Settings
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]
ANSWERS = "/api/v1/test-answers"
FORGETFUL = "/api/v1/test-forgetful"


def _test_routes() -> ApiRoutes:
    routes = ApiRoutes("test")

    @routes.post(ANSWERS, summary="Answer", body=Message, status=201, idempotent=True)
    async def answers(request: web.Request) -> web.Response:
        body = await request.json()
        async with answered_transaction(request) as transaction:
            transaction.answer(Message(message=f"{body['message']} {id(request)}"), status=201)
        return transaction.response

    @routes.post(FORGETFUL, summary="Forget", body=Message, status=201, idempotent=True)
    async def forgetful(request: web.Request) -> web.Response:
        return web.json_response({"message": "not stored"}, status=201)

    return routes


@pytest.fixture
def app(settings: Settings, launcher: MemoryLauncher) -> web.Application:
    """The real application plus this test's two idempotent routes."""
    application = create_app(settings, launcher=launcher)
    routes = _test_routes()
    application.router.add_routes(routes.table)
    application[ROUTE_SPECS].update(spec_index([routes]))
    return application


async def test_a_route_that_writes_through_the_transaction_replays(
    client: Client, owner: Caller
) -> None:
    headers = {**owner.headers, "Idempotency-Key": "once"}
    first = await client.post(ANSWERS, json={"message": "hi"}, headers=headers)
    again = await client.post(ANSWERS, json={"message": "hi"}, headers=headers)
    assert (first.status, again.status) == (201, 201)
    assert await first.json() == await again.json()
    assert again.headers.get("Idempotent-Replayed") == "true"
    other = await client.post(ANSWERS, json={"message": "other"}, headers=headers)
    assert (other.status, (await other.json())["code"]) == (422, "idempotency_key_reused")
    unkeyed = await client.post(ANSWERS, json={"message": "hi"}, headers=owner.headers)
    assert await unkeyed.json() != await first.json()


async def test_a_route_that_ignores_the_key_fails_loudly(client: Client, owner: Caller) -> None:
    keyed = await client.post(
        FORGETFUL, json={"message": "x"}, headers={**owner.headers, "Idempotency-Key": "k"}
    )
    assert (keyed.status, (await keyed.json())["code"]) == (500, "internal_error")
    unkeyed = await client.post(FORGETFUL, json={"message": "x"}, headers=owner.headers)
    assert unkeyed.status == 201
