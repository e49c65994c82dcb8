"""Thin-handler helpers: read a JSON body or query into a pydantic model, answer with one.

Every failure raises the domain error docs/api.md 2.1 asks for, so handlers never build errors:

* wrong ``Content-Type`` → 415 ``unsupported_media_type``
* body over ``client_max_size`` (1 MiB) → 413 ``payload_too_large``
* not JSON / not an object / nested deeper than ``MAX_JSON_DEPTH`` → 400 ``malformed_json``
  (a ``RecursionError`` of the parser is one of these, never a 500)
* schema failure incl. unknown fields (models use ``extra="forbid"``) → 422 ``validation_error``
  with ``errors: [{loc, msg, type}]``
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from control_plane.errors import (
    ErrorItem,
    MalformedJson,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
    Validation,
)

M = TypeVar("M", bound=BaseModel)

MAX_BODY_BYTES = 1024 * 1024
MAX_INT_ID = 2**31 - 1
MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays/objects a request body may have (docs/api.md 2.1)."""


def _too_deep(data: object, limit: int) -> bool:
    """Whether ``data`` nests arrays/objects deeper than ``limit`` (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: list[object] = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def error_items(exc: ValidationError, prefix: str) -> list[ErrorItem]:
    """Pydantic's errors as API ``errors`` items, ``loc`` starting with ``prefix``."""
    return [
        ErrorItem(loc=[prefix, *err["loc"]], msg=err["msg"], type=err["type"])
        for err in exc.errors(include_url=False)
    ]


async def read_json_object(request: web.Request) -> dict[str, Any]:
    """The request body as a JSON object (415/413/400 as in the module docstring)."""
    if request.content_type != "application/json":
        raise UnsupportedMediaType("send the body as Content-Type: application/json")
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        raise PayloadTooLarge(f"request bodies are limited to {MAX_BODY_BYTES} bytes") from exc
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedJson("the request body is not valid JSON") from exc
    except RecursionError as exc:
        raise MalformedJson(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from exc
    if not isinstance(data, dict):
        raise MalformedJson("the request body must be a JSON object")
    if _too_deep(data, MAX_JSON_DEPTH):
        raise MalformedJson(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return data


async def read_body(request: web.Request, model: type[M]) -> M:
    """Parse and validate the JSON body into ``model``.

    Raises:
        UnsupportedMediaType, PayloadTooLarge, MalformedJson: See the module docstring.
        Validation: 422 with one item per problem.
    """
    return validate(model, await read_json_object(request), "body")


def _nul_locations(value: object, loc: list[str | int]) -> list[list[str | int]]:
    if isinstance(value, str):
        return [loc] if "\x00" in value else []
    if isinstance(value, Mapping):
        return [
            found
            for key, item in value.items()
            for found in _nul_locations(key, [*loc, str(key)])
            + _nul_locations(item, [*loc, str(key)])
        ]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _nul_locations(item, [*loc, i])]
    return []


def validate(model: type[M], data: Mapping[str, Any], prefix: str) -> M:
    """Validate ``data`` into ``model`` (422 ``validation_error`` on failure).

    A NUL character anywhere is refused up front (422): PostgreSQL text cannot hold it, so it
    would otherwise fail as a 500 deep in the database (schemathesis found this).
    """
    nul = _nul_locations(data, [prefix])
    if nul:
        raise Validation(
            "text must not contain NUL characters",
            errors=[ErrorItem(loc=loc, msg="NUL character", type="string_nul") for loc in nul],
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise Validation("the request is invalid", errors=error_items(exc, prefix)) from exc


def read_query(request: web.Request, model: type[M]) -> M:
    """Validate the query string into ``model``; a repeated parameter keeps its last value."""
    return validate(model, dict(request.query), "query")


def path_uuid(request: web.Request, name: str, *, code: str = "not_found") -> uuid.UUID:
    """Path parameter ``name`` as a UUID; anything else names no resource (404 ``code``)."""
    try:
        return uuid.UUID(request.match_info[name])
    except ValueError as exc:
        raise NotFound(f"no such {name}", code=code) from exc


def path_int(request: web.Request, name: str, *, code: str = "not_found") -> int:
    """Path parameter ``name`` as a positive int; anything else names no resource (404).

    Ids are 32-bit ``INTEGER`` columns: a larger number names no row, and PostgreSQL would
    refuse it as a query argument (a 500 instead of the 404 schemathesis found).
    """
    text = request.match_info[name]
    if not text.isascii() or not text.isdigit() or len(text) > 10 or int(text) > MAX_INT_ID:
        raise NotFound(f"no such {name}", code=code)
    return int(text)


def json_response(
    payload: BaseModel | Mapping[str, Any] | list[Any],
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    """A JSON response; models are serialised in JSON mode (timestamps as ``...Z``)."""
    if isinstance(payload, BaseModel):
        text = payload.model_dump_json()
    else:
        text = json.dumps(payload)
    return web.Response(text=text, status=status, content_type="application/json", headers=headers)
