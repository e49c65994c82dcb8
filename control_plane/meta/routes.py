"""Routes that need no key: liveness, readiness, Prometheus metrics, the OpenAPI document."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from control_plane.api.http import json_response
from control_plane.api.routes import OPENAPI, ApiRoutes
from control_plane.db.engine import DB
from control_plane.errors import NotConfigured
from control_plane.metrics import METRICS

routes = ApiRoutes("service")


class Health(BaseModel):
    """``{"status": "ok"}``."""

    status: str


@routes.get("/healthz", summary="Liveness", response=Health, auth=False)
async def healthz(request: web.Request) -> web.Response:
    """The process is up."""
    del request
    return json_response(Health(status="ok"))


@routes.get("/readyz", summary="Readiness", response=Health, errors=(503,), auth=False)
async def readyz(request: web.Request) -> web.Response:
    """The database answers; 503 ``database_unavailable`` otherwise."""
    try:
        await request.app[DB].ping()
    except Exception as exc:  # any driver failure means "not ready"
        raise NotConfigured("the database is unreachable", code="database_unavailable") from exc
    return json_response(Health(status="ok"))


@routes.get("/metrics", summary="Prometheus metrics", text_media=("text/plain",), auth=False)
async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition of this process's registry."""
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


@routes.get(
    "/api/v1/openapi.json",
    summary="OpenAPI 3.1 document",
    text_media=("application/json",),
    auth=False,
)
async def openapi(request: web.Request) -> web.Response:
    """This API's OpenAPI 3.1 document, generated from the routes' pydantic models."""
    return json_response(request.app[OPENAPI])
