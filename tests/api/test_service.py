"""Service routes, the problem+json error body for aiohttp's own errors, and the migrations."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from sqlalchemy import inspect

from control_plane.db.engine import DB

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


async def test_health_and_readiness_need_no_key(client: Client) -> None:
    for path in ("/healthz", "/readyz"):
        response = await client.get(path)
        assert response.status == 200
        assert await response.json() == {"status": "ok"}


async def test_metrics_are_prometheus_text_of_this_app(client: Client) -> None:
    await client.get("/healthz")
    response = await client.get("/metrics")
    assert response.status == 200
    text = await response.text()
    assert 'meetbot_http_requests_total{method="GET",route="/healthz",status="200"} 1.0' in text


async def test_openapi_document_is_generated_and_public(client: Client) -> None:
    response = await client.get("/api/v1/openapi.json")
    assert response.status == 200
    doc = await response.json()
    assert doc["openapi"] == "3.1.0"
    assert "Problem" in doc["components"]["schemas"]
    assert doc["components"]["securitySchemes"]["ApiKey"]["name"] == "X-API-Key"
    readyz = doc["paths"]["/readyz"]["get"]
    assert readyz["security"] == []
    problem = readyz["responses"]["503"]["content"]["application/problem+json"]["schema"]
    assert problem == {"$ref": "#/components/schemas/Problem"}


async def test_unknown_path_is_problem_json_404(client: Client) -> None:
    response = await client.get("/api/v1/nothing-here")
    assert response.status == 404
    assert response.content_type == "application/problem+json"
    body = await response.json()
    assert body == {
        "type": "/errors/not_found",
        "title": "Not found",
        "status": 404,
        "detail": "no such path",
        "code": "not_found",
    }


async def test_wrong_method_is_problem_json_405(client: Client) -> None:
    response = await client.post("/healthz")
    assert response.status == 405
    assert response.content_type == "application/problem+json"
    assert (await response.json())["code"] == "method_not_allowed"
    assert "GET" in response.headers["Allow"]


async def test_migrations_build_every_table(client: Client) -> None:
    database = client.app[DB]
    async with database.engine.connect() as conn:
        tables = set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))
        revision = (await conn.exec_driver_sql("SELECT version_num FROM alembic_version")).scalar()
    assert {"workspaces", "users", "memberships", "api_keys", "meetings", "segments"} <= tables
    assert {"bot_status_changes", "idempotency_records"} <= tables
    assert revision is not None
