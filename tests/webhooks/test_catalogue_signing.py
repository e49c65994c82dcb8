"""The event catalogue, payload validation, OpenAPI rendering and Standard Webhooks signing."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from control_plane.webhooks.errors import UnknownEventType
from control_plane.webhooks.events import (
    CATALOGUE,
    EVENT_TYPE_NAMES,
    BotStatusChanged,
    EventType,
    build_payload,
    openapi_webhooks,
)
from control_plane.webhooks.ids import new_id
from control_plane.webhooks.signing import new_secret, signed_headers
from control_plane.webhooks.validation import checked_filter_types

pytestmark = pytest.mark.unit

BOT = "6f1c2f7e-0a43-4a57-9f0e-3d1b5b1b9a10"


def test_catalogue_lists_the_event_types_of_api_2_8() -> None:
    assert EVENT_TYPE_NAMES == {
        "bot.status_changed",
        "transcription.ready",
        "recording.ready",
        "action.detected",
        "participant.joined",
        "participant.left",
        "summary.ready",
    }
    assert set(CATALOGUE) == set(EventType)


def test_status_changed_payload_has_the_envelope_and_fields_of_api_2_8() -> None:
    at = datetime(2026, 11, 21, 9, 30, 0, 123456, tzinfo=UTC)
    payload = build_payload(
        EventType.BOT_STATUS_CHANGED,
        BotStatusChanged(
            bot_id=BOT,
            meeting_id=7,
            status="active",
            previous_status="joining",
            status_reason="admitted",
        ),
        at,
    )
    assert payload == {
        "type": "bot.status_changed",
        "timestamp": "2026-11-21T09:30:00Z",
        "data": {
            "bot_id": BOT,
            "meeting_id": 7,
            "status": "active",
            "previous_status": "joining",
            "status_reason": "admitted",
        },
    }


def test_transcription_ready_accepts_a_dict_and_rejects_a_wrong_tier() -> None:
    at = datetime.now(UTC)
    data = {"bot_id": BOT, "meeting_id": 1, "tier": "deferred", "segment_count": 12}
    assert build_payload("transcription.ready", data, at)["data"] == data
    with pytest.raises(ValidationError):
        build_payload("transcription.ready", {**data, "tier": "fast"}, at)
    with pytest.raises(ValidationError):
        build_payload("transcription.ready", {**data, "extra": 1}, at)
    with pytest.raises(ValueError, match="not a valid EventType"):
        build_payload("bot.exploded", data, at)


def test_openapi_webhooks_section_has_one_post_per_event_with_resolvable_refs() -> None:
    webhooks, schemas = openapi_webhooks()
    assert set(webhooks) == EVENT_TYPE_NAMES
    for name, item in webhooks.items():
        operation = item["post"]
        headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
        assert headers == {"webhook-id", "webhook-timestamp", "webhook-signature"}
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        envelope = schemas[ref.rsplit("/", 1)[1]]
        assert envelope["properties"]["type"]["const"] == name
        data_ref = envelope["properties"]["data"]["$ref"].rsplit("/", 1)[1]
        assert "bot_id" in schemas[data_ref]["properties"]
    # The whole thing is JSON (no Python objects left in it).
    json.dumps([webhooks, schemas])


def test_filter_types_are_checked_and_deduplicated() -> None:
    assert checked_filter_types(None) == []
    assert checked_filter_types(["bot.status_changed", "bot.status_changed"]) == [
        "bot.status_changed"
    ]
    with pytest.raises(UnknownEventType) as raised:
        checked_filter_types(["bot.status_changed", "bot.nope"])
    problem = raised.value.problem()
    assert problem.status == 422
    assert problem.code == "unknown_event_type"
    assert problem.errors is not None and problem.errors[0].loc == ["body", "filter_types", 1]


def test_signature_verifies_with_the_standardwebhooks_package() -> None:
    secret = new_secret()
    assert secret.startswith("whsec_")
    message_id = new_id("msg")
    body = json.dumps({"type": "bot.status_changed", "data": {"x": "é"}}, ensure_ascii=False)
    headers = signed_headers(secret, message_id, body, datetime.now(UTC))
    assert headers["webhook-id"] == message_id
    assert headers["webhook-signature"].startswith("v1,")
    assert Webhook(secret).verify(body.encode(), headers)["data"]["x"] == "é"
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(body.encode(), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace("é", "e").encode(), headers)


def test_ids_carry_svix_style_prefixes_and_sort_by_time() -> None:
    first, second = new_id("ep"), new_id("ep")
    assert first.startswith("ep_") and len(first) == 29
    assert first[:13] <= second[:13]
    assert first != second
