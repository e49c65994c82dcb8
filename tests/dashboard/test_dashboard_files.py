"""The dashboard's files as the control plane serves them: CSP, types, 404s, not in the API."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from control_plane.dashboard.routes import STATIC_DIR

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


async def test_the_page_and_its_files_carry_a_strict_policy(client: Client) -> None:
    page = await client.get("/")
    assert page.status == 200
    assert page.content_type == "text/html"
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy
    assert "script-src 'self';" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "frame-ancestors 'none'" in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    html = await page.text()
    for name in ("app.js", "app.css"):
        assert f"/ui/{name}" in html
    for path in sorted(STATIC_DIR.iterdir()):
        served = await client.get(f"/ui/{path.name}")
        assert served.status == 200, path.name
        assert served.headers["Content-Security-Policy"] == policy
        assert await served.read() == path.read_bytes()
    script = await client.get("/ui/app.js")
    assert script.content_type == "text/javascript"


@pytest.mark.parametrize("path", ["/ui/nothing.js", "/ui/..%2Froutes.py", "/ui/routes.py", "/ui/"])
async def test_anything_else_is_the_apis_404(client: Client, path: str) -> None:
    response = await client.get(path)
    assert response.status == 404
    assert response.content_type == "application/problem+json"
    assert (await response.json())["code"] == "not_found"


async def test_the_dashboard_is_not_part_of_the_api_document(client: Client) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    assert "/" not in document["paths"]
    assert not [path for path in document["paths"] if path.startswith("/ui")]
