"""``Idempotency-Key``: the same key and body within 24 h replays the first answer.

Contract: docs/api.md 2.1.

Use inside the transaction that performs the operation, so the operation and its stored answer
commit together; claim the key *before* doing the work::

    key = idempotency_key(request)                 # None without the header
    digest = body_digest(raw_body)
    async with db.sessions.begin() as session:
        if key:
            if replay := await find_replay(session, auth.key_id, ROUTE, key, digest):
                return replay                      # same body: the first response again
            record = await claim(session, auth.key_id, ROUTE, key, digest)
        ...                                        # do the work
        if key:
            record.response_status, record.response_body = 201, response_text

Claiming first makes a concurrent request with the same key fail on the unique constraint at
``claim`` (PostgreSQL makes it wait for the winner's commit) before it has done any work or
emitted any event; the caller catches ``IntegrityError`` and answers :func:`find_replay` from a
new transaction. A different body with a known key raises 422 ``idempotency_key_reused``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.models.idempotency import IdempotencyRecord
from control_plane.errors import ErrorItem, Validation

REPLAY_WINDOW = timedelta(hours=24)
MAX_KEY_LENGTH = 255


def idempotency_key(request: web.Request) -> str | None:
    """The request's ``Idempotency-Key`` (1 to 255 characters), or None.

    Raises:
        Validation: 422 when it is empty or longer than 255 characters.
    """
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise Validation(
            "Idempotency-Key must be 1 to 255 characters",
            errors=[
                ErrorItem(
                    loc=["header", "Idempotency-Key"], msg="1 to 255 characters", type="length"
                )
            ],
        )
    return key


def body_digest(body: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of a request body (key order does not matter)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


async def find_replay(
    session: AsyncSession, api_key_id: int, route: str, key: str, digest: str
) -> web.Response | None:
    """The stored first response for this key, or None when there is none within 24 h.

    An expired record is deleted so the key can be used afresh.

    Raises:
        Validation: 422 ``idempotency_key_reused`` when the body differs.
    """
    record = (
        await session.execute(
            select(IdempotencyRecord).where(
                IdempotencyRecord.api_key_id == api_key_id,
                IdempotencyRecord.route == route,
                IdempotencyRecord.idempotency_key == key,
            )
        )
    ).scalar_one_or_none()
    if record is None:
        return None
    if datetime.now(UTC) - record.created_at > REPLAY_WINDOW:
        await session.delete(record)
        await session.flush()
        return None
    if record.request_digest != digest:
        raise Validation(
            "this Idempotency-Key was used with a different body",
            code="idempotency_key_reused",
        )
    return web.Response(
        text=record.response_body,
        status=record.response_status,
        content_type="application/json",
        headers={"Idempotent-Replayed": "true"},
    )


async def claim(
    session: AsyncSession, api_key_id: int, route: str, key: str, digest: str
) -> IdempotencyRecord:
    """Insert this key's record now (flushed), to be completed with the response later.

    Raises:
        sqlalchemy.exc.IntegrityError: Another request holds the key (its answer is replayable
            once it commits).
    """
    record = IdempotencyRecord(
        api_key_id=api_key_id,
        route=route,
        idempotency_key=key,
        request_digest=digest,
        response_status=0,
        response_body="",
    )
    session.add(record)
    await session.flush()
    return record


async def purge_expired(session: AsyncSession, now: datetime | None = None) -> int:
    """Delete records older than the replay window; returns how many went."""
    cutoff = (now or datetime.now(UTC)) - REPLAY_WINDOW
    result = await session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < cutoff)
    )
    return int(getattr(result, "rowcount", 0) or 0)
