"""An action prompt's ``model`` is checked against the replica's provider (docs/api.md 2.9):
the embedded provider serves its one model and refuses any other name with 422
``model_not_available``; an OpenAI-compatible server decides for itself, so any name is kept."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from control_plane.settings import Settings
from tests.plugins.api_app import Caller

pytestmark = pytest.mark.api

Client = TestClient[web.Request, web.Application]


@pytest.fixture(params=["embedded", "openai"])
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """The app under each provider (nothing is loaded or called: no bot enables actions)."""
    return settings.model_copy(
        update={
            "intelligence_provider": request.param,
            "intelligence_base_url": "http://127.0.0.1:9/v1",
            "intelligence_embedded_model": "/models/phi-3.gguf",
        }
    )


async def _post(client: Client, owner: Caller, model: str | None) -> tuple[int, dict[str, object]]:
    response = await client.post(
        "/api/v1/action-prompts",
        json={"name": "standup", "instructions": "Report tasks.", "model": model},
        headers=owner.headers,
    )
    body: dict[str, object] = await response.json()
    return response.status, body


async def test_a_prompt_names_only_a_model_the_provider_can_serve(
    client: Client, owner: Caller, settings: Settings
) -> None:
    status, body = await _post(client, owner, "gpt-4o")
    if settings.intelligence_provider == "openai":
        assert (status, body["model"]) == (201, "gpt-4o")
    else:
        assert status == 422
        assert body["code"] == "model_not_available"
        assert body["type"] == "/errors/model_not_available"
        assert body["errors"] == [
            {
                "loc": ["body", "model"],
                "msg": body["detail"],
                "type": "model_not_available",
            }
        ]
        assert "'gpt-4o'" in str(body["detail"]) and "'phi-3'" in str(body["detail"])
    # The embedded model's own name (its file's name without .gguf) and no model: both kept.
    assert (await _post(client, owner, "phi-3"))[0] == 201
    assert (await _post(client, owner, None))[0] == 201
    listed = await (await client.get("/api/v1/action-prompts", headers=owner.headers)).json()
    expected = [None, "phi-3"] + (["gpt-4o"] if settings.intelligence_provider == "openai" else [])
    assert [p["model"] for p in listed] == expected


async def test_the_openapi_document_describes_model_not_available(client: Client) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    operation = document["paths"]["/api/v1/action-prompts"]["post"]
    assert "422" in operation["responses"]
    model = document["components"]["schemas"]["ActionPromptCreate"]["properties"]["model"]
    assert "model_not_available" in model["description"]


async def test_the_openapi_document_names_the_one_model_the_embedded_provider_serves(
    client: Client, settings: Settings
) -> None:
    # A schema-valid body is one the server accepts: under the embedded provider the field's
    # string branch allows the served name only (schemathesis found the 422 otherwise).
    document = await (await client.get("/api/v1/openapi.json")).json()
    model = document["components"]["schemas"]["ActionPromptCreate"]["properties"]["model"]
    strings = [b for b in model.get("anyOf", [model]) if b.get("type") == "string"]
    assert len(strings) == 1
    if settings.intelligence_provider == "embedded":
        assert strings[0]["enum"] == ["phi-3"]
    else:
        assert "enum" not in strings[0]
