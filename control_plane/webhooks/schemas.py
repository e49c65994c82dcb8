"""Request and response models of the webhook API (docs/api.md Part 1 "Webhooks" and 2.8)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from control_plane.timestamps import UtcDateTime
from control_plane.webhooks.events import EventType

FilterType = Annotated[str, Field(json_schema_extra={"enum": [event.value for event in EventType]})]
"""A ``filter_types`` entry: the document lists the catalogue the server checks entries against
(another name is 422 ``unknown_event_type``, ``control_plane.webhooks.validation``)."""


class EndpointCreate(BaseModel):
    """Body of ``POST …/webhooks``; an empty or absent ``filter_types`` means every event."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2048)
    description: str = Field(default="", max_length=1000)
    filter_types: list[FilterType] | None = Field(default=None, max_length=64)


class EndpointPatch(BaseModel):
    """Body of ``PATCH …/webhooks/{endpoint_id}``: only the fields given change.

    ``filter_types: []`` (or null) clears the filter, so every event type is delivered.
    ``disabled`` is an addition to Part 1's fields, so an endpoint disabled after 5 days of
    failures can be switched back on.
    """

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, min_length=1, max_length=2048)
    description: str | None = Field(default=None, max_length=1000)
    filter_types: list[FilterType] | None = Field(default=None, max_length=64)
    disabled: bool | None = Field(
        default=None, description="false re-enables an endpoint disabled after failing."
    )


class Endpoint(BaseModel):
    """A webhook endpoint; ``filter_types`` empty means every event type."""

    id: str = Field(description="The provider's endpoint id (`ep_…`).")
    url: str
    description: str
    filter_types: list[str]
    disabled: bool
    created_at: UtcDateTime
    updated_at: UtcDateTime


class EndpointSecret(BaseModel):
    """The endpoint's signing secret (``whsec_…``, base64 after the prefix)."""

    key: str


class DeliveryAttempt(BaseModel):
    """One delivery attempt (docs/api.md Part 1 "Webhook delivery attempt").

    ``status``: 0 success, 1 pending, 2 failed, 3 sending. ``response_status_code`` is the
    receiver's HTTP status, 0 when none came (connection refused, timeout, refused target).
    """

    id: str
    status: int
    response_status_code: int
    timestamp: UtcDateTime
    msg_id: str = Field(description="The message (`webhook-id`) this attempt delivered.")
    response_duration_ms: int = 0
