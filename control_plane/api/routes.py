"""Declaring routes with their models, and generating the OpenAPI 3.1 document from them.

Every resource module owns one :class:`ApiRoutes` (a ``RouteTableDef`` plus the specs of its
routes) and declares each handler with its request/response models::

    routes = ApiRoutes("bots")

    @routes.post("/api/v1/bots", summary="Launch a bot", body=BotCreate,
                 response=BotRecord, status=201, errors=(400, 409), idempotent=True)
    async def create_bot(request: web.Request) -> web.Response:
        body = await read_body(request, BotCreate)          # control_plane.api.http
        ...
        return json_response(record, status=201)

Then ``control_plane.app`` adds the module's ``routes`` to ``RESOURCES`` (one line), which
registers the handlers and feeds :func:`build_openapi`. The document lists, per route: path
parameters (``path_types`` gives non-string ones, e.g. ``{"meeting_id": int}``), query
parameters (from the ``query`` model's fields), the JSON request body, the success response
(``response`` model and/or ``text_media`` for text bodies, or none for 204; ``also_status``
lists further success statuses with the same body) and problem+json
error responses: the declared ``errors`` plus the ones every route can give (429 and 500;
401/403 when ``auth``; 400/413/415/422 with a body).

A route with its own credentials (the bot stream's token) names its ``security_scheme`` (one of
the document's ``securitySchemes``) and gives ``raw_responses`` that replace generated ones.

Flags read by the middlewares: ``auth=False`` makes a route public (no ``X-API-Key``);
``read_key_ok=True`` lets ``read`` keys call a non-GET route (``POST …/subscribe``);
``edit_key_only=True`` refuses them on a GET (a webhook endpoint's signing secret);
``idempotent=True`` honours (and documents) ``Idempotency-Key``: the handler then writes through
:func:`control_plane.api.transaction.answered_transaction` (:mod:`control_plane.api.idempotency`).
"""

from __future__ import annotations

import copy
import functools
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from control_plane.errors import Problem

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_REF_TEMPLATE = "#/components/schemas/{model}"
_PARAM_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}")
_STATUS_TEXT = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No content",
    400: "Bad request",
    401: "Missing, invalid or expired API key",
    403: "Forbidden (read-only key, unbound key, role)",
    404: "Not found in this workspace",
    405: "Method not allowed",
    409: "Conflict with the resource's state",
    413: "Body over 1 MiB",
    415: "Body is not application/json",
    422: "Validation failed",
    429: "Rate limited (see Retry-After)",
    500: "Internal error",
    501: "Not implemented",
    502: "Upstream provider error",
    503: "Not configured (see Retry-After)",
}


@dataclass(frozen=True)
class RouteSpec:
    """One route's contract (see the module docstring for the fields' meaning)."""

    method: str
    path: str
    handler: Handler
    summary: str
    tag: str
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    status: int = 200
    also_status: tuple[int, ...] = ()
    text_media: tuple[str, ...] = ()
    errors: tuple[int, ...] = ()
    auth: bool = True
    read_key_ok: bool = False
    edit_key_only: bool = False
    idempotent: bool = False
    path_types: Mapping[str, type] = field(default_factory=dict)
    security_scheme: str | None = None
    raw_responses: Mapping[str, Any] = field(default_factory=dict)

    @property
    def operation_id(self) -> str:
        """The handler's name (unique across the API)."""
        return self.handler.__name__

    @property
    def allows_read_key(self) -> bool:
        """Whether a ``read`` key may call this route."""
        if self.edit_key_only:
            return False
        return self.method in {"GET", "HEAD"} or self.read_key_ok


class ApiRoutes:
    """A resource's routes: a ``RouteTableDef`` plus a :class:`RouteSpec` per route."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.table = web.RouteTableDef()
        self.specs: list[RouteSpec] = []

    def route(self, method: str, path: str, **spec: Any) -> Callable[[Handler], Handler]:
        """Register a handler for ``method path`` with the :class:`RouteSpec` fields ``spec``."""

        def register(handler: Handler) -> Handler:
            self.specs.append(
                RouteSpec(method=method, path=path, handler=handler, tag=self.tag, **spec)
            )
            self.table.route(method, path)(handler)
            return handler

        return register

    def get(self, path: str, **spec: Any) -> Callable[[Handler], Handler]:
        """Register a GET route."""
        return self.route("GET", path, **spec)

    def post(self, path: str, **spec: Any) -> Callable[[Handler], Handler]:
        """Register a POST route."""
        return self.route("POST", path, **spec)

    def put(self, path: str, **spec: Any) -> Callable[[Handler], Handler]:
        """Register a PUT route."""
        return self.route("PUT", path, **spec)

    def patch(self, path: str, **spec: Any) -> Callable[[Handler], Handler]:
        """Register a PATCH route."""
        return self.route("PATCH", path, **spec)

    def delete(self, path: str, **spec: Any) -> Callable[[Handler], Handler]:
        """Register a DELETE route."""
        return self.route("DELETE", path, **spec)


def spec_index(resources: Iterable[ApiRoutes]) -> dict[tuple[str, str], RouteSpec]:
    """Map ``(method, path template)`` to its spec (the middlewares look routes up here)."""
    return {(spec.method, spec.path): spec for res in resources for spec in res.specs}


NO_NUL = "^[^\\u0000]*$"
"""Pattern of every input string: the server refuses NUL characters (422, docs/api.md 2.1)."""


def _param_schema(kind: type) -> dict[str, Any]:
    if kind is int:
        # Ids are INTEGER columns; anything outside names no resource (404).
        return {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}
    if kind is uuid.UUID:
        return {"type": "string", "format": "uuid"}
    return {"type": "string", "pattern": NO_NUL}


def _forbid_nul(schema: Any, components: dict[str, Any], seen: set[str]) -> None:
    """Add the :data:`NO_NUL` pattern to every free-form string of an input schema.

    It follows ``$ref`` into ``components`` once each.
    """
    if isinstance(schema, list):
        for item in schema:
            _forbid_nul(item, components, seen)
        return
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen and name in components:
            seen.add(name)
            _forbid_nul(components[name], components, seen)
        return
    if schema.get("type") == "string" and not {"enum", "const", "format", "pattern"} & set(schema):
        schema["pattern"] = NO_NUL
    for key, value in schema.items():
        if key in {"properties", "$defs"} and isinstance(value, dict):
            for item in value.values():
                _forbid_nul(item, components, seen)
        elif key in {"items", "anyOf", "oneOf", "allOf", "additionalProperties", "prefixItems"}:
            _forbid_nul(value, components, seen)


@functools.cache
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema, generated once per process (each caller takes a deep copy)."""
    return model.model_json_schema(ref_template=_REF_TEMPLATE)


@functools.cache
def _component_schemas(
    inputs: tuple[tuple[type[BaseModel], JsonSchemaMode], ...],
) -> tuple[dict[Any, dict[str, Any]], dict[str, Any]]:
    """``models_json_schema`` of ``inputs``, generated once per process.

    Pydantic takes most of a second of CPU for the API's models, and every app built in a
    process (each test's, each replica's) documents the same models. The document is changed in
    place after (:func:`_forbid_nul`, the meeting rules, the webhooks), so each caller takes a
    deep copy.
    """
    return models_json_schema(list(inputs), ref_template=_REF_TEMPLATE)


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = copy.deepcopy(_model_schema(model))
    required = set(schema.get("required", []))
    params = []
    for name, prop in schema.get("properties", {}).items():
        prop_schema = {k: v for k, v in prop.items() if k not in {"title", "description"}}
        param: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": prop_schema,
        }
        if "description" in prop:
            param["description"] = prop["description"]
        params.append(param)
    return params


def _problem_response(status: int) -> dict[str, Any]:
    return {
        "description": _STATUS_TEXT.get(status, "Error"),
        "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
        },
    }


Refs = Mapping[tuple[Any, str], dict[str, Any]]


def _operation(spec: RouteSpec, refs: Refs) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": spec.operation_id,
        "summary": spec.summary,
        "tags": [spec.tag],
    }
    doc = (spec.handler.__doc__ or "").strip()
    if doc:
        op["description"] = doc
    params: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": _param_schema(spec.path_types.get(name, str)),
        }
        for name in _PARAM_RE.findall(spec.path)
    ]
    if spec.query is not None:
        params += _query_parameters(spec.query)
    if spec.idempotent:
        params.append(
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": False,
                "schema": {"type": "string", "minLength": 1, "maxLength": 255},
            }
        )
    if params:
        op["parameters"] = params
    if spec.body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": dict(refs[(spec.body, "validation")])}},
        }
    success: dict[str, Any] = {"description": _STATUS_TEXT.get(spec.status, "Success")}
    content: dict[str, Any] = {}
    if spec.response is not None:
        content["application/json"] = {"schema": dict(refs[(spec.response, "serialization")])}
    # Beside a JSON body too (a transcript is JSON or text by its ``format``).
    for media in spec.text_media:
        content[media] = {"schema": {"type": "string" if media.startswith("text/") else "object"}}
    if content:
        success["content"] = content
    # 429 on every route: a key's bucket, or (public routes, bad keys) the client address's.
    error_statuses = set(spec.errors) | {429, 500}
    if spec.auth:
        error_statuses.add(401)
        if not spec.allows_read_key:
            error_statuses.add(403)
    if spec.body is not None:
        error_statuses |= {400, 413, 415, 422}
    responses: dict[str, Any] = {str(spec.status): success}
    for status in spec.also_status:
        responses[str(status)] = {**success, "description": _STATUS_TEXT.get(status, "Success")}
    for status in sorted(error_statuses):
        responses[str(status)] = _problem_response(status)
    responses.update(spec.raw_responses)
    op["responses"] = responses
    if spec.auth:
        op["security"] = [{"ApiKey": []}]
    elif spec.security_scheme is not None:
        op["security"] = [{spec.security_scheme: []}]
    else:
        op["security"] = []
    return op


def build_openapi(resources: Iterable[ApiRoutes], *, title: str, version: str) -> dict[str, Any]:
    """Generate the OpenAPI 3.1 document of every route in ``resources``.

    Component schemas come from the routes' pydantic models (``model_json_schema`` with
    ``ref_template`` into ``#/components/schemas``) plus ``Problem``, the RFC 9457 error body.
    """
    specs = [spec for res in resources for spec in res.specs]
    inputs: dict[tuple[type[BaseModel], JsonSchemaMode], None] = {(Problem, "serialization"): None}
    for spec in specs:
        if spec.body is not None:
            inputs[(spec.body, "validation")] = None
        if spec.response is not None:
            inputs[(spec.response, "serialization")] = None
    keyed, defs = copy.deepcopy(_component_schemas(tuple(inputs)))
    refs = {(model, str(mode)): ref for (model, mode), ref in keyed.items()}
    schemas: dict[str, Any] = dict(defs.get("$defs", {}))
    problem_name = refs[(Problem, "serialization")]["$ref"].rsplit("/", 1)[-1]
    if problem_name != "Problem":
        schemas["Problem"] = schemas[problem_name]
    paths: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    for spec in specs:
        operation = _operation(spec, refs)
        paths.setdefault(spec.path, {})[spec.method.lower()] = operation
        for param in operation.get("parameters", []):
            if param["in"] == "query":
                _forbid_nul(param["schema"], schemas, seen)
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            _forbid_nul(body["schema"], schemas, seen)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "StreamToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "The stream token of POST /api/v1/bots/{bot_id}/subscribe",
                },
            },
        },
    }


ROUTE_SPECS: web.AppKey[dict[tuple[str, str], RouteSpec]] = web.AppKey("route_specs")
"""Every route's spec by ``(method, path template)`` (read by the middlewares)."""
OPENAPI: web.AppKey[dict[str, Any]] = web.AppKey("openapi")
"""The generated OpenAPI 3.1 document."""
