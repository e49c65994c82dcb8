"""Issue 18 "what must be shown": hostile inputs over every operation of the OpenAPI document.

Hypothesis picks an operation of the live app's own document, a place (one body field, the
whole body, one query parameter, one path parameter, or a header line) and a hostile value —
deep nesting, numbers beyond 64 bits and beyond floats, timestamps whose UTC conversion
overflows, lines far over 8 KiB, NUL and lone surrogates — and sends it with a real owner key.
Every answer must be below 500 (the contractual 501 aside) and every error problem+json with a
``code``. Bounded: a fixed number of derandomized examples, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any
from urllib.parse import quote

import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.api.test_openapi_fuzz import ALWAYS_501, LiveApp, live_app  # noqa: F401 - fixture

pytestmark = pytest.mark.api

EXAMPLES = 400
LONG = "x" * 10_000
HOSTILE_JSON = [
    "[" * 5000 + "]" * 5000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    "1" + "0" * 400,
    "-" + "9" * 400,
    "1e400",
    str(2**63),
    str(-(2**63) - 1),
    str(2**31),
    '"0001-01-01T00:00:00+14:00"',
    '"9999-12-31T23:59:59-14:00"',
    '"-999999999-01-01"',
    json.dumps(LONG * 20),
    '"a\\u0000b"',
    '"\\ud800"',
    "null",
    "[]",
    "{}",
    '"' + "\\u0041" * 2000 + '"',
]
HOSTILE_TEXT = [
    "9" * 400,
    "-1",
    str(2**63),
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    LONG,
    "%00",
    "\u00e9\u2028",
    "../../etc/passwd",
    "1e400",
]
PLACES = ["body_field", "body", "query", "path", "header"]


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


def _body_fields(document: dict[str, Any], operation: dict[str, Any]) -> list[str]:
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is None:
        return []
    ref = body["schema"].get("$ref", "")
    schema = document["components"]["schemas"].get(ref.rsplit("/", 1)[-1], body["schema"])
    return sorted(schema.get("properties", {})) or ["x"]


def _path(live: LiveApp, template: str, hostile: str | None) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if hostile is not None:
            return quote(hostile, safe="")
        if name == "workspace_id":
            return str(live.owner.workspace_id)
        if name.endswith("_id") and name not in {"endpoint_id", "prompt_version_id"}:
            return str(uuid.uuid4()) if name == "bot_id" else str(2**31 - 1)
        return "ep_missing"

    return re.sub(r"\{([^}]+)\}", fill, template)


STREAM = "/api/v1/bots/{bot_id}/stream"
"""The bot's stream: its 401 is JSON ``{code: invalid_stream_token, detail}`` (api.md 2.7)."""


def _check(response: requests.Response, contractual_501: bool, template: str) -> None:
    if contractual_501:
        assert response.status_code in (400, 401, 404, 413, 415, 422, 429, 501)
    else:
        assert response.status_code < 500, response.text[:300]
    if template == STREAM and response.status_code == 401:
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.json()["code"] == "invalid_stream_token"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    elif response.status_code >= 400:
        assert response.headers["Content-Type"].startswith("application/problem+json"), (
            response.status_code,
            response.text[:300],
        )
        problem = response.json()
        assert problem["status"] == response.status_code and problem["code"]


def test_hostile_inputs_never_answer_5xx(live_app: LiveApp) -> None:  # noqa: F811
    session = requests.Session()
    document = session.get(f"{live_app.base_url}/api/v1/openapi.json", timeout=30).json()
    operations = _operations(document)
    assert len(operations) >= 30
    seen: set[tuple[str, str]] = set()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(
        index=st.integers(0, len(operations) - 1),
        place=st.sampled_from(PLACES),
        pick=st.integers(0, 10_000),
    )
    def exercise(index: int, place: str, pick: int) -> None:
        method, template, operation = operations[index]
        seen.add((method, template))
        headers = {**live_app.owner.headers, "Content-Type": "application/json"}
        params: dict[str, str] = {}
        body = "{}"
        hostile_path = None
        if place == "body_field":
            fields = _body_fields(document, operation) or ["x"]
            field = fields[pick % len(fields)]
            body = "{" + json.dumps(field) + ": " + HOSTILE_JSON[pick % len(HOSTILE_JSON)] + "}"
        elif place == "body":
            body = HOSTILE_JSON[pick % len(HOSTILE_JSON)]
        elif place == "query":
            names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
            params[names[pick % len(names)] if names else "q"] = HOSTILE_TEXT[
                pick % len(HOSTILE_TEXT)
            ]
        elif place == "path":
            if "{" in template:
                hostile_path = HOSTILE_TEXT[pick % len(HOSTILE_TEXT)]
        else:
            headers["X-Long"] = LONG if pick % 2 else "y" * 9000
        url = live_app.base_url + _path(live_app, template, hostile_path)
        if operation.get("requestBody") is None and place in ("body", "body_field"):
            body = ""
        response = session.request(
            method, url, params=params, data=body.encode(), headers=headers, timeout=60
        )
        _check(response, (method, template) in ALWAYS_501, template)

    exercise()
    session.close()
    assert len(seen) >= len(operations) * 0.9, sorted(set(operations_keys(operations)) - seen)


def operations_keys(operations: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str]]:
    """``(method, path)`` of each operation."""
    return [(method, path) for method, path, _ in operations]
