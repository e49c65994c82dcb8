"""A local aiohttp server speaking the part of Svix's REST API the ``svix`` provider uses.

The Svix server itself cannot be built here (research/findings.md), so the provider's tests run
the real ``svix`` SDK against this in-memory implementation of the cloud API: applications
(by id or ``uid``), event types, endpoints (create, list, get, patch, delete, secret), messages
(``eventId`` uniqueness → 409, idempotency keys, delivery to matching endpoints signed with
``standardwebhooks``) and attempts by endpoint. Wire format: camelCase JSON as in Svix's
OpenAPI document; errors ``{"code", "detail"}``, validation errors ``{"detail": [{loc, msg,
type}]}``.

``fail_with`` makes every request answer that HTTP status, to test error mapping.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import aiohttp
from aiohttp import web
from standardwebhooks.webhooks import Webhook


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def _error(status: int, code: str, detail: str) -> web.Response:
    return web.json_response({"code": code, "detail": detail}, status=status)


@dataclass
class _App:
    id: str
    uid: str | None
    name: str
    created_at: str
    endpoints: dict[str, dict[str, Any]] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    event_ids: dict[str, str] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def out(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "uid": self.uid,
            "name": self.name,
            "metadata": {},
            "createdAt": self.created_at,
            "updatedAt": self.created_at,
        }


class SvixApiServer:
    """The in-memory Svix API; :meth:`app` builds its aiohttp application.

    Args:
        token: The only API key accepted (``Authorization: Bearer <token>``).
    """

    def __init__(self, token: str) -> None:
        self.token = token
        self.fail_with: int | None = None
        self.event_types: dict[str, dict[str, Any]] = {}
        self.apps: dict[str, _App] = {}
        self.requests: list[tuple[str, str]] = []
        self._idempotent: dict[str, dict[str, Any]] = {}
        self._deliveries: set[asyncio.Task[None]] = set()

    def app(self) -> web.Application:
        """The aiohttp application; its cleanup awaits deliveries still running."""
        application = web.Application(middlewares=[self._gate])
        r = application.router
        r.add_put("/api/v1/event-type/{name}", self._upsert_event_type)
        r.add_get("/api/v1/event-type", self._list_event_types)
        r.add_post("/api/v1/app", self._create_app)
        r.add_get("/api/v1/app/{app}", self._get_app)
        r.add_post("/api/v1/app/{app}/endpoint", self._create_endpoint)
        r.add_get("/api/v1/app/{app}/endpoint", self._list_endpoints)
        r.add_get("/api/v1/app/{app}/endpoint/{ep}", self._get_endpoint)
        r.add_patch("/api/v1/app/{app}/endpoint/{ep}", self._patch_endpoint)
        r.add_delete("/api/v1/app/{app}/endpoint/{ep}", self._delete_endpoint)
        r.add_get("/api/v1/app/{app}/endpoint/{ep}/secret", self._get_secret)
        r.add_post("/api/v1/app/{app}/msg", self._create_message)
        r.add_get("/api/v1/app/{app}/attempt/endpoint/{ep}", self._list_attempts)
        application.cleanup_ctx.append(self._owned_deliveries)
        return application

    async def _owned_deliveries(self, _: web.Application) -> AsyncIterator[None]:
        yield
        for task in list(self._deliveries):
            task.cancel()
        await asyncio.gather(*self._deliveries, return_exceptions=True)

    async def settle(self) -> None:
        """Wait until every delivery started so far has finished."""
        while self._deliveries:
            await asyncio.gather(*list(self._deliveries), return_exceptions=True)

    @web.middleware
    async def _gate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append((request.method, request.path))
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return _error(401, "authentication_failed", "invalid token")
        if self.fail_with is not None:
            return _error(self.fail_with, "server_error", "injected failure")
        response: web.StreamResponse = await handler(request)
        return response

    def _app_of(self, request: web.Request) -> _App | None:
        key = request.match_info["app"]
        if key in self.apps:
            return self.apps[key]
        return next((app for app in self.apps.values() if app.uid == key), None)

    def _unknown_types(self, body: dict[str, Any]) -> web.Response | None:
        types = body.get("eventTypes") or body.get("filterTypes") or []
        unknown = [name for name in types if name not in self.event_types]
        if not unknown:
            return None
        return web.json_response(
            {
                "detail": [
                    {
                        "loc": ["body", "eventTypes"],
                        "msg": f"event types not found: {', '.join(unknown)}",
                        "type": "value_error",
                    }
                ]
            },
            status=422,
        )

    async def _upsert_event_type(self, request: web.Request) -> web.Response:
        body = await request.json()
        name = request.match_info["name"]
        now = _now()
        created = self.event_types.get(name, {}).get("createdAt", now)
        self.event_types[name] = {
            "name": name,
            "description": body["description"],
            "archived": False,
            "deprecated": False,
            "schemas": body.get("schemas"),
            "createdAt": created,
            "updatedAt": now,
        }
        return web.json_response(self.event_types[name])

    async def _list_event_types(self, _: web.Request) -> web.Response:
        return web.json_response(
            {"data": list(self.event_types.values()), "iterator": None, "done": True}
        )

    def _new_app(self, body: dict[str, Any]) -> _App:
        app = _App(id=_id("app"), uid=body.get("uid"), name=body["name"], created_at=_now())
        self.apps[app.id] = app
        return app

    async def _create_app(self, request: web.Request) -> web.Response:
        body = await request.json()
        uid = body.get("uid")
        existing = next((a for a in self.apps.values() if uid and a.uid == uid), None)
        if existing is not None:
            if request.query.get("get_if_exists") == "true":
                return web.json_response(existing.out())
            return _error(409, "conflict", "uid exists")
        return web.json_response(self._new_app(body).out(), status=201)

    async def _get_app(self, request: web.Request) -> web.Response:
        app = self._app_of(request)
        if app is None:
            return _error(404, "not_found", "app not found")
        return web.json_response(app.out())

    async def _create_endpoint(self, request: web.Request) -> web.Response:
        app = self._app_of(request)
        if app is None:
            return _error(404, "not_found", "app not found")
        body = await request.json()
        invalid = self._unknown_types(body)
        if invalid is not None:
            return invalid
        now = _now()
        endpoint = {
            "id": _id("ep"),
            "url": body["url"],
            "description": body.get("description") or "",
            "eventTypes": body.get("eventTypes") or body.get("filterTypes"),
            "disabled": bool(body.get("disabled", False)),
            "metadata": body.get("metadata") or {},
            "createdAt": now,
            "updatedAt": now,
        }
        app.endpoints[endpoint["id"]] = endpoint
        app.secrets[endpoint["id"]] = body.get("secret") or (
            "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
        )
        return web.json_response(endpoint, status=201)

    async def _list_endpoints(self, request: web.Request) -> web.Response:
        app = self._app_of(request)
        if app is None:
            return _error(404, "not_found", "app not found")
        return web.json_response(
            {"data": list(app.endpoints.values()), "iterator": None, "done": True}
        )

    def _endpoint_of(self, request: web.Request) -> tuple[_App, dict[str, Any]] | web.Response:
        app = self._app_of(request)
        if app is None:
            return _error(404, "not_found", "app not found")
        endpoint = app.endpoints.get(request.match_info["ep"])
        if endpoint is None:
            return _error(404, "not_found", "endpoint not found")
        return app, endpoint

    async def _get_endpoint(self, request: web.Request) -> web.Response:
        found = self._endpoint_of(request)
        if isinstance(found, web.Response):
            return found
        return web.json_response(found[1])

    async def _patch_endpoint(self, request: web.Request) -> web.Response:
        found = self._endpoint_of(request)
        if isinstance(found, web.Response):
            return found
        body = await request.json()
        invalid = self._unknown_types(body)
        if invalid is not None:
            return invalid
        endpoint = found[1]
        for key in ("url", "description", "eventTypes", "disabled", "metadata"):
            if key in body:
                endpoint[key] = body[key]
        endpoint["updatedAt"] = _now()
        return web.json_response(endpoint)

    async def _delete_endpoint(self, request: web.Request) -> web.Response:
        found = self._endpoint_of(request)
        if isinstance(found, web.Response):
            return found
        del found[0].endpoints[found[1]["id"]]
        return web.Response(status=204)

    async def _get_secret(self, request: web.Request) -> web.Response:
        found = self._endpoint_of(request)
        if isinstance(found, web.Response):
            return found
        return web.json_response({"key": found[0].secrets[found[1]["id"]]})

    async def _create_message(self, request: web.Request) -> web.Response:
        key = request.headers.get("idempotency-key")
        if key and key in self._idempotent:
            return web.json_response(self._idempotent[key], status=202)
        body = await request.json()
        app = self._app_of(request)
        if app is None:
            if not body.get("application"):
                return _error(404, "not_found", "app not found")
            app = self._new_app(body["application"])
        event_id = body.get("eventId")
        if event_id and event_id in app.event_ids:
            return _error(409, "conflict", "eventId exists")
        message = {
            "id": _id("msg"),
            "eventId": event_id,
            "eventType": body["eventType"],
            "payload": body["payload"],
            "timestamp": _now(),
        }
        app.messages[message["id"]] = message
        if event_id:
            app.event_ids[event_id] = message["id"]
        if key:
            self._idempotent[key] = message
        for endpoint in app.endpoints.values():
            types = endpoint.get("eventTypes")
            if endpoint.get("disabled") or (types and message["eventType"] not in types):
                continue
            task = asyncio.create_task(self._deliver(app, endpoint, message))
            self._deliveries.add(task)
            task.add_done_callback(self._deliveries.discard)
        return web.json_response(message, status=202)

    async def _deliver(self, app: _App, endpoint: dict[str, Any], message: dict[str, Any]) -> None:
        body = json.dumps(message["payload"])
        at = datetime.now(UTC)
        headers = {
            "webhook-id": message["id"],
            "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": Webhook(app.secrets[endpoint["id"]]).sign(message["id"], at, body),
            "content-type": "application/json",
        }
        code = 0
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.post(endpoint["url"], data=body, headers=headers) as response,
            ):
                code = response.status
        except aiohttp.ClientError:
            code = 0
        ok = 200 <= code < 300
        app.attempts.append(
            {
                "id": _id("atmpt"),
                "url": endpoint["url"],
                "response": "",
                "responseStatusCode": code,
                "responseDurationMs": 1,
                "status": 0 if ok else 2,
                "statusText": "success" if ok else "fail",
                "triggerType": 0,
                "msgId": message["id"],
                "endpointId": endpoint["id"],
                "timestamp": _now(),
            }
        )

    async def _list_attempts(self, request: web.Request) -> web.Response:
        found = self._endpoint_of(request)
        if isinstance(found, web.Response):
            return found
        app, endpoint = found
        limit = int(request.query.get("limit", "50"))
        attempts = [a for a in reversed(app.attempts) if a["endpointId"] == endpoint["id"]]
        return web.json_response({"data": attempts[:limit], "iterator": None, "done": True})
