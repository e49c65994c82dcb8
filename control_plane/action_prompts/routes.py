"""Action prompts of the workspace: create a version, list versions (docs/api.md 2.9)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, RootModel
from sqlalchemy import select

from control_plane.action_prompts.service import create_version, embedded_model_name
from control_plane.api.http import json_response, read_body
from control_plane.api.routes import ApiRoutes
from control_plane.auth.context import auth_of
from control_plane.db.engine import DB
from control_plane.db.models.action_prompt import ActionPrompt
from control_plane.errors import Validation
from control_plane.settings import SETTINGS, Settings
from control_plane.timestamps import UtcDateTime

routes = ApiRoutes("action-prompts")


class ActionPromptCreate(BaseModel):
    """A prompt version: posting an existing ``name`` again creates its next ``version``.

    ``model`` is the model that detects the actions of bots using this version, in place of
    the replica's configured one (docs/api.md 2.9).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    instructions: str = Field(min_length=1, max_length=20_000)
    model: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description=(
            "The model that detects the actions of bots using this version; null for the "
            "control plane's configured model. With the openai provider any name the server "
            "serves; with the embedded provider only the embedded model's name, any other is "
            "422 model_not_available (docs/api.md 2.9)."
        ),
    )


def check_model(settings: Settings, model: str | None) -> None:
    """Refuse a ``model`` this replica's provider cannot serve (docs/api.md 2.9).

    The embedded provider serves one model (:func:`.service.embedded_model_name`); the
    ``openai`` provider's server decides for itself, so any name passes.

    Raises:
        Validation: 422 ``model_not_available``, ``errors[0].loc`` ``["body", "model"]``.
    """
    if model is None or settings.intelligence_provider != "embedded":
        return
    served = embedded_model_name(settings.intelligence_embedded_model)
    if model != served:
        detail = (
            f"model {model!r} is not available: this control plane runs the embedded "
            f"provider, which serves only {served!r} (omit model to use it)"
        )
        raise Validation.of_field("model", detail, code="model_not_available")


def state_prompt_models(document: dict[str, Any], settings: Settings) -> None:
    """Say in an OpenAPI ``document`` which ``model`` a new prompt may name on this replica.

    Under the embedded provider only the embedded model's name (or null) passes
    :func:`check_model`, so the document states it as the field's one value: a client or a
    schema-driven tester then never sends a body the server must refuse. Under ``openai``
    the field stays any string. ``document`` is changed in place.
    """
    if settings.intelligence_provider != "embedded":
        return
    served = embedded_model_name(settings.intelligence_embedded_model)
    field = document["components"]["schemas"][ActionPromptCreate.__name__]["properties"]["model"]
    for branch in field.get("anyOf", [field]):
        if branch.get("type") == "string":
            branch["enum"] = [served]


class ActionPromptOut(BaseModel):
    """One prompt version.

    Its ``id`` is what ``prompt_version_id`` and ``settings.default_prompt_version_id`` name.
    """

    id: str
    name: str
    version: int
    instructions: str
    model: str | None
    created_at: UtcDateTime


class ActionPromptList(RootModel[list[ActionPromptOut]]):
    """Every version of every prompt of the workspace, newest first."""


def _view(row: ActionPrompt) -> ActionPromptOut:
    return ActionPromptOut(
        id=row.id,
        name=row.name,
        version=row.version,
        instructions=row.instructions,
        model=row.model,
        created_at=row.created_at,
    )


@routes.post(
    "/api/v1/action-prompts",
    summary="Create an action prompt version",
    body=ActionPromptCreate,
    response=ActionPromptOut,
    status=201,
    errors=(403, 409),
)
async def create_action_prompt(request: web.Request) -> web.Response:
    """Version 1 of a new name, or the next version of an existing one."""
    caller = auth_of(request)
    workspace_id = caller.require_workspace()
    body = await read_body(request, ActionPromptCreate)
    check_model(request.app[SETTINGS], body.model)
    row = await create_version(
        request.app[DB],
        workspace_id=workspace_id,
        user_id=caller.user_id,
        name=body.name,
        instructions=body.instructions,
        model=body.model,
        max_prompts=request.app[SETTINGS].max_action_prompts,
    )
    return json_response(_view(row), status=201)


@routes.get(
    "/api/v1/action-prompts",
    summary="List action prompt versions",
    response=ActionPromptList,
    errors=(403,),
)
async def list_action_prompts(request: web.Request) -> web.Response:
    """Every version of the workspace's prompts, newest first."""
    workspace_id = auth_of(request).require_workspace()
    async with request.app[DB].reads() as session:
        rows = (
            await session.scalars(
                select(ActionPrompt)
                .where(ActionPrompt.workspace_id == workspace_id)
                .order_by(ActionPrompt.created_at.desc(), ActionPrompt.version.desc())
            )
        ).all()
    return json_response(ActionPromptList([_view(row) for row in rows]))
