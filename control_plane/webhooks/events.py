"""The webhook event catalogue: every event type, its payload model, and its OpenAPI rendering.

Source: docs/api.md 2.8 (event types, the ``{type, timestamp, data}`` envelope, the ``data`` of
``bot.status_changed`` and ``transcription.ready``); the other ``data`` shapes mirror the SSE
events of docs/api.md 2.7 plus the ``bot_id``/``meeting_id`` a webhook receiver needs to route them.

| event type | ``data`` model | emitted when |
|---|---|---|
| ``bot.status_changed`` | :class:`BotStatusChanged` | every stored status change of a bot |
| ``transcription.ready`` | :class:`TranscriptionReady` | a transcription tier finished a meeting |
| ``recording.ready`` | :class:`RecordingReady` | a recording is uploaded and downloadable |
| ``action.detected`` | :class:`ActionDetected` | the language model reported an action |
| ``participant.joined`` | :class:`ParticipantJoined` | a participant appeared in the meeting |
| ``participant.left`` | :class:`ParticipantLeft` | a participant left the meeting |
| ``summary.ready`` | :class:`SummaryReady` | a final meeting's summary was written (2.14) |

:func:`openapi_webhooks` renders the same table into the OpenAPI 3.1 ``webhooks`` section, so
the document and the code cannot drift apart.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from agent.contracts.timestamps import format_utc


class EventType(StrEnum):
    """Every webhook event type a ``filter_types`` list may name (docs/api.md 2.8)."""

    BOT_STATUS_CHANGED = "bot.status_changed"
    TRANSCRIPTION_READY = "transcription.ready"
    RECORDING_READY = "recording.ready"
    ACTION_DETECTED = "action.detected"
    PARTICIPANT_JOINED = "participant.joined"
    PARTICIPANT_LEFT = "participant.left"
    SUMMARY_READY = "summary.ready"


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    bot_id: str = Field(description="The bot's UUID.")
    meeting_id: int = Field(description="The meeting's integer id.")


class BotStatusChanged(_Data):
    """``data`` of ``bot.status_changed``: the new and the previous status with its reason."""

    status: str = Field(description="New status (docs/architecture.md §3).")
    previous_status: str | None = Field(description="Status before the change; null on creation.")
    status_reason: str | None = Field(description="Machine-readable snake_case reason code.")


class TranscriptionReady(_Data):
    """``data`` of ``transcription.ready``: one tier finished; ``segment_count`` segments stored."""

    tier: Literal["realtime", "deferred"]
    segment_count: int = Field(ge=0)


class RecordingReady(_Data):
    """``data`` of ``recording.ready``: a recording can be downloaded (duration in seconds)."""

    recording_id: str
    format: str = Field(description="`mp4`, `mp3` or `webm`.")
    duration_s: float | None = Field(default=None, ge=0)


class ActionDetected(_Data):
    """``data`` of ``action.detected``: one action found in the transcript (docs/api.md 2.9)."""

    id: str = Field(description="Stable id of the action.")
    type: Literal["action_item", "decision", "question", "follow_up"]
    text: str
    owner: str | None = Field(default=None, description="Who takes it, when said; else null.")
    due: str | None = Field(default=None, description="When it is due, as said; else null.")
    segment_ids: list[str] = Field(description="Ids of the transcript segments it rests on.")
    timestamp: datetime = Field(description="When the control plane detected and stored it.")

    @field_serializer("timestamp")
    def _utc(self, value: datetime) -> str:
        return format_utc(value)


class ParticipantJoined(_Data):
    """``data`` of ``participant.joined``: who joined, and everyone present afterwards."""

    name: str
    participants: list[str]


class ParticipantLeft(_Data):
    """``data`` of ``participant.left``: who left, and everyone present afterwards."""

    name: str
    participants: list[str]


class SummaryDecisionData(BaseModel):
    """A decision of the meeting summary and the segments that say so."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    segment_ids: list[str] = Field(description="Ids of the transcript segments it rests on.")


class SummaryActionItemData(BaseModel):
    """An action item of the meeting summary; owner and due as its segments say them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    owner: str | None = Field(description="Who takes it, as said in its segments; else null.")
    due: str | None = Field(description="When it is due, as said in its segments; else null.")
    segment_ids: list[str] = Field(description="Ids of the transcript segments it rests on.")


class SummaryReady(_Data):
    """``data`` of ``summary.ready``: the whole meeting's summary (docs/api.md 2.14)."""

    summary: str = Field(description="A short summary of the whole meeting.")
    decisions: list[SummaryDecisionData]
    action_items: list[SummaryActionItemData]
    model: str | None = Field(description="`provider/model` that wrote it.")
    created_at: datetime = Field(description="When the meeting became final.")
    ready_at: datetime = Field(description="When the summary was written.")

    @field_serializer("created_at", "ready_at")
    def _utc(self, value: datetime) -> str:
        return format_utc(value)


EventData = (
    BotStatusChanged
    | TranscriptionReady
    | RecordingReady
    | ActionDetected
    | ParticipantJoined
    | ParticipantLeft
    | SummaryReady
)

CATALOGUE: dict[EventType, tuple[type[_Data], str]] = {
    EventType.BOT_STATUS_CHANGED: (BotStatusChanged, "A bot's status changed."),
    EventType.TRANSCRIPTION_READY: (
        TranscriptionReady,
        "A transcription tier (realtime or deferred) finished a meeting's transcript.",
    ),
    EventType.RECORDING_READY: (RecordingReady, "A meeting recording is ready to download."),
    EventType.ACTION_DETECTED: (ActionDetected, "Live action detection found an action."),
    EventType.PARTICIPANT_JOINED: (ParticipantJoined, "A participant joined the meeting."),
    EventType.PARTICIPANT_LEFT: (ParticipantLeft, "A participant left the meeting."),
    EventType.SUMMARY_READY: (SummaryReady, "A final meeting's summary is ready."),
}
"""Event type → (``data`` model, one-line description), the single source of the catalogue."""

EVENT_TYPE_NAMES: frozenset[str] = frozenset(event.value for event in EventType)


def unknown_event_types(names: list[str]) -> list[str]:
    """The names in ``names`` that are not event types, in their given order."""
    return [name for name in names if name not in EVENT_TYPE_NAMES]


def build_payload(
    event_type: EventType | str, data: BaseModel | dict[str, Any], at: datetime
) -> dict[str, Any]:
    """Validate ``data`` against the catalogue and wrap it in the webhook envelope.

    Args:
        event_type: One of :class:`EventType`.
        data: The ``data`` object, as its model or as a plain dict.
        at: When the event happened (becomes ``timestamp``).

    Returns:
        ``{"type": str, "timestamp": "YYYY-MM-DDTHH:MM:SSZ", "data": {...}}``, JSON-ready.

    Raises:
        ValueError: Unknown event type.
        pydantic.ValidationError: ``data`` does not fit the event type's model.
    """
    kind = EventType(event_type)
    model = CATALOGUE[kind][0]
    raw = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    validated = model.model_validate(raw)
    return {
        "type": kind.value,
        "timestamp": format_utc(at),
        "data": validated.model_dump(mode="json"),
    }


def _schema_name(event: EventType) -> str:
    words = event.value.replace("_", ".").split(".")
    return "Webhook" + "".join(word.capitalize() for word in words)


def openapi_webhooks() -> tuple[dict[str, Any], dict[str, Any]]:
    """Render the catalogue for an OpenAPI 3.1 document.

    Returns:
        ``(webhooks, schemas)``: the document's top-level ``webhooks`` object (one POST per event
        type, with the Standard Webhooks headers) and the component schemas it refers to, to be
        merged into ``components.schemas``.
    """
    headers = {
        "webhook-id": "Message id (`msg_…`), the same on every retry; deduplicate on it.",
        "webhook-timestamp": "Unix seconds when this attempt was signed.",
        "webhook-signature": "`v1,<base64 HMAC-SHA256>` over `id.timestamp.body` (Standard "
        "Webhooks), keyed with the endpoint's `whsec_` secret.",
    }
    webhooks: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for event, (model, description) in CATALOGUE.items():
        data_name = model.__name__ + "Data"
        data_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        # Nested models (the summary's items) become component schemas of their own.
        schemas.update(data_schema.pop("$defs", {}))
        schemas[data_name] = data_schema
        envelope = _schema_name(event)
        schemas[envelope] = {
            "type": "object",
            "required": ["type", "timestamp", "data"],
            "additionalProperties": False,
            "properties": {
                "type": {"type": "string", "const": event.value},
                "timestamp": {"type": "string", "format": "date-time"},
                "data": {"$ref": f"#/components/schemas/{data_name}"},
            },
        }
        webhooks[event.value] = {
            "post": {
                "summary": description,
                "operationId": "webhook_" + event.value.replace(".", "_"),
                "parameters": [
                    {
                        "name": name,
                        "in": "header",
                        "required": True,
                        "description": text,
                        "schema": {"type": "string"},
                    }
                    for name, text in headers.items()
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": f"#/components/schemas/{envelope}"}}
                    },
                },
                "responses": {
                    "2XX": {"description": "Received; any 2xx within 15 s counts as delivered."},
                    "default": {"description": "Retried on the schedule of docs/api.md 2.8."},
                },
            }
        }
    return webhooks, schemas
