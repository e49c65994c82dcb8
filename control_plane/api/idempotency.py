"""``Idempotency-Key``: the same key and body within 24 h replays the first answer.

Contract: docs/api.md 2.1.

Use inside the transaction that performs the operation, so the operation and its stored answer
commit together. The look-up joins the operation's first read (:func:`record_match` is its
condition), and the answer is stored with the work, after it, in one statement::

    key = idempotency_key(request)                 # None without the header
    digest = body_digest(raw_body)
    try:
        async with db.sessions.begin() as session:
            row = ...first read, outer-joined to IdempotencyRecord on record_match(...)
            if row.record is not None and (replay := replay_of(row.record, digest)):
                return replay                      # same body: the first response again
            ...                                    # do the work (only flushed, not committed)
            if key and not await store_response(session, ..., 201, response_text):
                raise KeyTaken()                   # rolls the work back
    except (KeyTaken, IntegrityError):
        async with db.sessions.begin() as session:
            return await find_replay(session, ...) # the winner's answer

A concurrent request with the same key that stores its answer first wins: the other's
``INSERT … ON CONFLICT DO NOTHING`` waits for the winner's commit (PostgreSQL; SQLite runs one
writer at a time) and inserts nothing, so its transaction, with the work it did and the events
it queued in the outbox, rolls back, and it answers the winner's response. One statement covers
what a look-up, a claim flushed before the work and an update of the claim with the answer did
in three round trips (issue 18). A different body with a known key raises 422
``idempotency_key_reused``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import ColumnElement, and_, delete, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.models.idempotency import IdempotencyRecord
from control_plane.errors import ErrorItem, Validation

REPLAY_WINDOW = timedelta(hours=24)
MAX_KEY_LENGTH = 255


class KeyTaken(Exception):
    """A concurrent request with the same key stored its answer first (replay it)."""


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


def record_match(api_key_id: int, route: str, key: str) -> ColumnElement[bool]:
    """The condition selecting the record of (``api_key_id``, ``route``, ``key``)."""
    return and_(
        IdempotencyRecord.api_key_id == api_key_id,
        IdempotencyRecord.route == route,
        IdempotencyRecord.idempotency_key == key,
    )


def replay_of(
    record: IdempotencyRecord, digest: str, now: datetime | None = None
) -> web.Response | None:
    """The stored first response of ``record``, or None when it is older than 24 h.

    The caller deletes an expired record (:func:`forget`) before storing a new answer.

    Raises:
        Validation: 422 ``idempotency_key_reused`` when the body differs.
    """
    if (now or datetime.now(UTC)) - record.created_at > REPLAY_WINDOW:
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


async def forget(session: AsyncSession, record: IdempotencyRecord) -> None:
    """Delete an expired ``record`` now (flushed), so its key can be used afresh."""
    await session.delete(record)
    await session.flush()


async def find_replay(
    session: AsyncSession, api_key_id: int, route: str, key: str, digest: str
) -> web.Response | None:
    """The stored first response for this key, or None when there is none within 24 h.

    An expired record is deleted so the key can be used afresh.

    Raises:
        Validation: 422 ``idempotency_key_reused`` when the body differs.
    """
    record = (
        await session.execute(select(IdempotencyRecord).where(record_match(api_key_id, route, key)))
    ).scalar_one_or_none()
    if record is None:
        return None
    replay = replay_of(record, digest)
    if replay is None:
        await forget(session, record)
    return replay


async def store_response(
    session: AsyncSession,
    api_key_id: int,
    route: str,
    key: str,
    digest: str,
    status: int,
    body: str,
) -> bool:
    """Store this key's answer in ``session``'s transaction unless the key is taken.

    One ``INSERT … ON CONFLICT DO NOTHING``: on PostgreSQL it waits while a concurrent
    transaction holds the same key and inserts nothing once that one commits.

    Returns:
        True when stored; False when another request holds the key (the caller rolls back and
        replays that request's answer with :func:`find_replay`).
    """
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    statement = (
        insert(IdempotencyRecord)
        .values(
            api_key_id=api_key_id,
            route=route,
            idempotency_key=key,
            request_digest=digest,
            response_status=status,
            response_body=body,
            created_at=datetime.now(UTC),
        )
        .on_conflict_do_nothing(index_elements=["api_key_id", "route", "idempotency_key"])
        .returning(IdempotencyRecord.id)
    )
    return (await session.execute(statement)).first() is not None


async def purge_expired(session: AsyncSession, now: datetime | None = None) -> int:
    """Delete records older than the replay window; returns how many went."""
    cutoff = (now or datetime.now(UTC)) - REPLAY_WINDOW
    result = await session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < cutoff)
    )
    return int(getattr(result, "rowcount", 0) or 0)
