"""Issue 18 finding 8: the OpenAPI document states the rules the server enforces, and the
``Allow`` header of a 405 names the methods of the path's own route.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from jsonschema import Draft202012Validator

from control_plane.api.routes import NO_NUL, OPENAPI
from control_plane.app import create_app
from control_plane.settings import Settings
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


def _strings(schema: Any, components: dict[str, Any], seen: set[str]) -> list[dict[str, Any]]:
    if isinstance(schema, list):
        return [s for item in schema for s in _strings(item, components, seen)]
    if not isinstance(schema, dict):
        return []
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return []
        seen.add(name)
        return _strings(components[name], components, seen)
    found = [schema] if schema.get("type") == "string" else []
    for key in ("properties",):
        for item in schema.get(key, {}).values():
            found += _strings(item, components, seen)
    for key in ("items", "anyOf", "oneOf", "allOf"):
        if key in schema:
            found += _strings(schema[key], components, seen)
    return found


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_document_states_enforced_rules(client: Client) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    components = document["components"]["schemas"]
    free = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            schemas = [p["schema"] for p in operation.get("parameters", []) if p["in"] == "query"]
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                schemas.append(body["schema"])
            for schema in schemas:
                for string in _strings(schema, components, set()):
                    if not {"enum", "const", "format", "pattern"} & set(string):
                        free.append((method, path, string))
            for param in operation.get("parameters", []):
                if param["in"] == "path" and param["schema"].get("type") == "integer":
                    assert param["schema"]["maximum"] == 2**31 - 1, (path, param)
    assert free == [], "input strings without the NUL rule"
    bots = document["paths"]["/api/v1/meetings"]["get"]["parameters"]
    date_from = next(p for p in bots if p["name"] == "date_from")
    assert "date-time" in str(date_from["schema"])
    create = components["BotCreate"]["properties"]
    assert "2147483647" in str(create["zoom_connection_id"])
    assert "malformed_meeting_url" in create["meeting_url"]["description"]
    assert "zoom_token_required" in create["zoom_obf_token"]["description"]
    assert "minted at launch" in create["zoom_obf_token"]["description"]
    assert "never in plain text" in create["zoom_obf_token"]["description"]
    assert "zoom_token_required" in create["zoom_connection_id"]["description"]
    assert (
        "expires_at_in_past"
        in components["ApiKeyCreate"]["properties"]["expires_at"]["description"]
    )
    assert create["bot_name"]["anyOf"][0]["pattern"] == NO_NUL
    # Exactly one source of speech / of a screen share; a meeting reference for a bot.
    speak = [branch["required"] for branch in components["SpeakRequest"]["oneOf"]]
    assert speak == [["text"], ["audio_url"]]
    screen = [branch["required"] for branch in components["ScreenRequest"]["oneOf"]]
    assert screen == [["url"], ["image_url"], ["video_url"]]
    for name in ("BotCreate", "ScheduledBotCreate"):
        required = [branch["required"] for branch in components[name]["anyOf"]]
        assert required == [["meeting_url"], ["native_meeting_id"]], name


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_allow_header_names_the_paths_own_methods(client: Client, owner: Caller) -> None:
    cases = {
        "/api/v1/bots/schedule": "GET, HEAD, POST",
        "/api/v1/bots": "GET, HEAD, POST",
        "/api/v1/bots/8f0c5a8e-2f7e-4b8e-9a57-0c3a1f7b2d11": "DELETE, GET, HEAD, PATCH",
    }
    for path, allowed in cases.items():
        response = await client.put(path, json={}, headers=owner.headers)
        assert response.status == 405, path
        assert response.content_type == "application/problem+json"
        assert response.headers["Allow"] == allowed, path


ARABIC_INDIC_9 = "".join(chr(0x0661 + i) for i in range(9))
MEETING_BODIES: list[tuple[dict[str, Any], bool]] = [
    ({"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}, True),
    ({"platform": "google_meet", "meeting_url": "https://meet.google.com/abc-defg-hij?x=1"}, True),
    ({"platform": "google_meet", "meeting_url": "https://MEET.google.com/abc-defg-hij"}, False),
    ({"platform": "google_meet", "meeting_url": "https://meet.google.com/abc-defg-hij "}, False),
    ({"platform": "google_meet", "native_meeting_id": "123456789"}, False),
    ({"platform": "zoom", "native_meeting_id": "123456789"}, True),
    ({"platform": "zoom", "native_meeting_id": ARABIC_INDIC_9}, False),
    ({"platform": "zoom", "meeting_url": f"https://zoom.us/j/{ARABIC_INDIC_9}"}, False),
    ({"platform": "zoom", "meeting_url": "https://us05web.zoom.us/wc/123456789/join"}, True),
    ({"platform": "zoom", "meeting_url": "https://user@zoom.us/j/123456789"}, False),
    ({"platform": "zoom", "meeting_url": "https://meet.google.com/abc-defg-hij"}, False),
    ({"platform": "zoom", "meeting_url": "http://127.0.0.1:9/j/123456789"}, True),  # extra host
    ({"platform": "teams", "native_meeting_id": "1234567890"}, True),
    ({"platform": "teams", "native_meeting_id": "19:meeting_x@thread.v2"}, False),
    (
        {
            "platform": "teams",
            "meeting_url": "https://teams.microsoft.com/l/meetup-join/19%3ameeting_x%40thread.v2/0",
            "native_meeting_id": "19:meeting_x@thread.v2",
        },
        True,
    ),
    ({"platform": "teams", "meeting_url": "https://teams.live.com/meet/123456789"}, False),
]
"""Bodies of ``POST /api/v1/bots`` and whether the document and the server take them."""


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_document_and_server_take_the_same_meeting_references(
    client: Client, owner: Caller
) -> None:
    """The per-platform ``oneOf`` branches state what the server accepts (issue 18)."""
    document = await (await client.get("/api/v1/openapi.json")).json()
    validator = Draft202012Validator(
        {"$ref": "#/components/schemas/BotCreate", "components": document["components"]}
    )
    for body, accepted in MEETING_BODIES:
        full = {**body, "zoom_obf_token": "t"} if body["platform"] == "zoom" else body
        assert validator.is_valid(full) is accepted, body
        response = await client.post("/api/v1/bots", json=full, headers=owner.headers)
        if accepted:
            assert response.status == 201, (body, await response.text())
        else:
            problem = await response.json()
            assert (response.status, problem["code"]) in {
                (400, "invalid_meeting_id"),
                (422, "malformed_meeting_url"),
            }, (body, problem)
    update = document["components"]["schemas"]["ScheduledBotUpdate"]["properties"]["meeting_url"]
    pattern = next(branch["pattern"] for branch in update["anyOf"] if branch.get("type"))
    assert re.fullmatch(pattern, "https://teams.live.com/meet/1234567890")
    assert not re.fullmatch(pattern, f"https://teams.live.com/meet/{ARABIC_INDIC_9}0")


def test_each_app_documents_its_own_meeting_hosts() -> None:
    """Apps built in one process share the generated schemas, never the document.

    The component schemas are generated once per process (control_plane.api.routes) and each
    app's document is then changed in place with its deployment's meeting hosts: one app's
    hosts must not show up in, or vanish from, another's.
    """
    documents = [
        create_app(
            Settings(database_url="sqlite+aiosqlite:///:memory:", extra_meeting_hosts=[host])
        )[OPENAPI]
        for host in ("meet.first.example.org", "meet.second.example.org")
    ]
    for document, own, other in zip(
        documents,
        ("meet.first.example.org", "meet.second.example.org"),
        ("meet.second.example.org", "meet.first.example.org"),
        strict=True,
    ):
        update = document["components"]["schemas"]["ScheduledBotUpdate"]
        branches = update["properties"]["meeting_url"]["anyOf"]
        pattern = next(branch["pattern"] for branch in branches if branch.get("type"))
        assert re.fullmatch(pattern, f"https://{own}/abc-defg-hij"), pattern
        assert not re.fullmatch(pattern, f"https://{other}/abc-defg-hij"), pattern
