"""Webhook endpoint routes (docs/api.md Part 1 "Webhooks", 2.8); every one needs role ``owner``.

Paths are under ``/api/v1/workspaces/{workspace_id}/webhooks``. Access follows the other
workspace paths (:mod:`control_plane.workspaces.access`): unknown workspace 404, a
workspace other than the key's 403 ``not_a_member``, role ``member`` 403 ``owner_required``;
an endpoint id of another workspace answers 404 ``webhook_endpoint_not_found``. The handlers
validate input (event types, URL policy) and call the configured
:class:`~control_plane.webhooks.provider.WebhookProvider`.
"""

from __future__ import annotations

import uuid

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, RootModel

from control_plane.api.http import json_response, read_body, read_query
from control_plane.api.routes import ApiRoutes
from control_plane.quotas import check_quota
from control_plane.settings import SETTINGS
from control_plane.webhooks.schemas import (
    DeliveryAttempt,
    Endpoint,
    EndpointCreate,
    EndpointPatch,
    EndpointSecret,
)
from control_plane.webhooks.validation import checked_filter_types, checked_url
from control_plane.webhooks.wiring import WEBHOOK_PROVIDER, target_policy
from control_plane.workspaces.access import workspace_of_path

routes = ApiRoutes("webhooks")

_BASE = "/api/v1/workspaces/{workspace_id}/webhooks"
_ONE = _BASE + "/{endpoint_id}"
_PATH_TYPES = {"workspace_id": uuid.UUID}
# 403 other workspace or role; 404 unknown workspace/endpoint; 502/503 provider trouble.
_ERRORS = (403, 404, 502, 503)


class EndpointList(RootModel[list[Endpoint]]):
    """The workspace's endpoints, newest first."""


class AttemptList(RootModel[list[DeliveryAttempt]]):
    """Delivery attempts, newest first."""


class LogsQuery(BaseModel):
    """Query of the delivery log: how many attempts (1 to 250, default 50)."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=50, ge=1, le=250)


async def _owner_workspace(request: web.Request) -> uuid.UUID:
    """The path's workspace once the caller is its owner (404 unknown, 403 otherwise)."""
    return await workspace_of_path(request, owner_only=True)


@routes.post(
    _BASE,
    summary="Create a webhook endpoint",
    body=EndpointCreate,
    response=Endpoint,
    status=201,
    errors=(*_ERRORS, 409),
    path_types=_PATH_TYPES,
)
async def create_webhook_endpoint(request: web.Request) -> web.Response:
    """Create an endpoint; it receives every event type unless ``filter_types`` narrows it.

    422 ``unknown_event_type`` for a type outside the catalogue; 422
    ``webhook_url_not_allowed`` for a non-https URL or one resolving to an internal address;
    409 ``quota_exceeded`` at ``max_webhook_endpoints``.
    """
    workspace_id = await _owner_workspace(request)
    body = await read_body(request, EndpointCreate)
    provider = request.app[WEBHOOK_PROVIDER]
    check_quota(
        len(await provider.list_endpoints(workspace_id)),
        request.app[SETTINGS].max_webhook_endpoints,
        "webhook endpoints",
    )
    spec = body.model_copy(
        update={
            "filter_types": checked_filter_types(body.filter_types),
            "url": await checked_url(body.url, target_policy(request.app[SETTINGS])),
        }
    )
    endpoint = await provider.create_endpoint(workspace_id, spec)
    return json_response(endpoint, status=201)


@routes.get(
    _BASE,
    summary="List webhook endpoints",
    response=EndpointList,
    errors=_ERRORS,
    path_types=_PATH_TYPES,
)
async def list_webhook_endpoints(request: web.Request) -> web.Response:
    """The workspace's endpoints, newest first."""
    workspace_id = await _owner_workspace(request)
    endpoints = await request.app[WEBHOOK_PROVIDER].list_endpoints(workspace_id)
    return json_response(EndpointList(endpoints))


@routes.get(
    _ONE,
    summary="Get a webhook endpoint",
    response=Endpoint,
    errors=_ERRORS,
    path_types=_PATH_TYPES,
)
async def get_webhook_endpoint(request: web.Request) -> web.Response:
    """One endpoint."""
    workspace_id = await _owner_workspace(request)
    endpoint_id = request.match_info["endpoint_id"]
    return json_response(
        await request.app[WEBHOOK_PROVIDER].get_endpoint(workspace_id, endpoint_id)
    )


@routes.patch(
    _ONE,
    summary="Update a webhook endpoint",
    body=EndpointPatch,
    response=Endpoint,
    errors=_ERRORS,
    path_types=_PATH_TYPES,
)
async def update_webhook_endpoint(request: web.Request) -> web.Response:
    """Change ``url``, ``description``, ``filter_types`` (or ``disabled``); others stay.

    422 for an unknown event type or a refused URL; 502 provider error; 503 not configured.
    """
    workspace_id = await _owner_workspace(request)
    endpoint_id = request.match_info["endpoint_id"]
    patch = await read_body(request, EndpointPatch)
    updates: dict[str, object] = {}
    if "filter_types" in patch.model_fields_set:
        updates["filter_types"] = checked_filter_types(patch.filter_types)
    if patch.url is not None:
        updates["url"] = await checked_url(patch.url, target_policy(request.app[SETTINGS]))
    patch = patch.model_copy(update=updates)
    endpoint = await request.app[WEBHOOK_PROVIDER].update_endpoint(workspace_id, endpoint_id, patch)
    return json_response(endpoint)


@routes.delete(
    _ONE,
    summary="Delete a webhook endpoint",
    status=204,
    errors=_ERRORS,
    path_types=_PATH_TYPES,
)
async def delete_webhook_endpoint(request: web.Request) -> web.Response:
    """Delete the endpoint; undelivered messages to it are dropped."""
    workspace_id = await _owner_workspace(request)
    await request.app[WEBHOOK_PROVIDER].delete_endpoint(
        workspace_id, request.match_info["endpoint_id"]
    )
    return web.Response(status=204)


@routes.get(
    _ONE + "/secret",
    summary="Get a webhook endpoint's signing secret",
    response=EndpointSecret,
    errors=_ERRORS,
    edit_key_only=True,
    path_types=_PATH_TYPES,
)
async def get_webhook_endpoint_secret(request: web.Request) -> web.Response:
    """``{key: "whsec_…"}``: verify deliveries with it (Standard Webhooks).

    Whoever holds the secret can forge deliveries, so it takes an owner's ``edit`` key: a
    ``read`` key gets 403 ``read_only_key`` (docs/api.md 2.2; ``edit_key_only`` route).
    """
    workspace_id = await _owner_workspace(request)
    secret = await request.app[WEBHOOK_PROVIDER].get_secret(
        workspace_id, request.match_info["endpoint_id"]
    )
    return json_response(secret)


@routes.get(
    _ONE + "/logs",
    summary="List delivery attempts of a webhook endpoint",
    query=LogsQuery,
    response=AttemptList,
    errors=_ERRORS,
    path_types=_PATH_TYPES,
)
async def list_webhook_endpoint_logs(request: web.Request) -> web.Response:
    """Delivery attempts, newest first: ``status`` 0 success, 1 pending, 2 failed, 3 sending.

    ``response_status_code`` is the receiver's HTTP status, 0 when it gave none.
    """
    workspace_id = await _owner_workspace(request)
    query = read_query(request, LogsQuery)
    attempts = await request.app[WEBHOOK_PROVIDER].list_attempts(
        workspace_id, request.match_info["endpoint_id"], query.limit
    )
    return json_response(AttemptList(attempts))
