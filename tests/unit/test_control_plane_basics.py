"""Small control-plane pieces: key secrets, the token bucket, JSON log lines, timestamps."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta, timezone

import pytest

from agent.contracts.timestamps import format_utc
from control_plane.auth import api_keys
from control_plane.auth.ratelimit import RateLimiter
from control_plane.errors import NotFound, Validation
from control_plane.logs import JsonFormatter
from control_plane.timestamps import parse_utc

pytestmark = pytest.mark.unit


def test_generated_keys_have_the_documented_shape() -> None:
    new = api_keys.generate("mbk")
    assert new.secret.startswith("mbk_") and len(new.secret) == 4 + 43
    assert api_keys.well_formed(new.secret, "mbk")
    assert new.prefix == new.secret[:12]
    assert new.digest == api_keys.digest_of(new.secret) and len(new.digest) == 64
    assert api_keys.digests_match(new.digest, api_keys.digest_of(new.secret))
    assert not api_keys.digests_match(new.digest, api_keys.digest_of(new.secret + "x"))
    assert new.secret != api_keys.generate("mbk").secret
    assert not api_keys.well_formed("mbk_" + "a" * 42, "mbk")
    assert not api_keys.well_formed("xyz_" + "a" * 43, "mbk")


def test_token_bucket_allows_the_burst_then_refills_at_the_rate() -> None:
    now = [100.0]
    limiter = RateLimiter(rate=2.0, burst=3, clock=lambda: now[0])
    assert [limiter.acquire(1) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.acquire(1) == 1.0  # half a second to the next token, rounded up
    assert limiter.acquire(2) == 0.0  # every key has its own bucket
    now[0] += 0.5
    assert limiter.acquire(1) == 0.0
    now[0] += 100.0  # refills to the burst, not beyond
    assert [limiter.acquire(1) for _ in range(4)][-1] == 1.0


def test_json_log_lines_carry_static_message_and_fields() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "bot launched", None, None)
    record.bot_id = "b-1"
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "bot launched" and line["bot_id"] == "b-1"
    assert line["level"] == "info" and line["logger"] == "x" and "ts" in line


def test_timestamps_in_any_offset_out_as_utc_z() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert parse_utc("2026-11-21T11:30:00+02:00") == datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
    assert parse_utc("2026-11-21T09:30:00") == datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
    assert parse_utc("2026-11-21T09:30:00Z").tzinfo == UTC
    moment = datetime(2026, 11, 21, 11, 30, 0, 123456, tzinfo=plus_two)
    assert format_utc(moment) == "2026-11-21T09:30:00Z"
    with pytest.raises(ValueError):
        parse_utc("21/11/2026")


def test_problem_bodies_name_the_code_and_keep_validation_status() -> None:
    problem = NotFound("no such bot", code="bot_not_found").problem()
    assert problem.model_dump(exclude_none=True) == {
        "type": "/errors/bot_not_found",
        "title": "Not found",
        "status": 404,
        "detail": "no such bot",
        "code": "bot_not_found",
    }
    assert Validation("bad", status=400, code="invalid_date").problem().status == 400
    assert Validation("bad").problem().errors == []
