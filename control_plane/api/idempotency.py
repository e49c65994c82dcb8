"""``Idempotency-Key``: the same key and body within 24 h replays the first answer.

Contract: docs/api.md 2.1. No handler handles it: a route declared ``idempotent=True``
(:mod:`control_plane.api.routes`) gets it from two places that meet at the request.

* :func:`~control_plane.api.middlewares.idempotency_middleware` checks the header (422 unless 1
  to 255 characters), sets ``request[IDEMPOTENCY]`` (:class:`Idempotency`: the caller's API key,
  the route template, the key) and answers a :class:`Replay` the handler raised with its stored
  response.
* The handler's write goes through :func:`~control_plane.api.transaction.answered_transaction`,
  which reads the key's stored answer with the transaction's first read
  (:meth:`Idempotency.joined`, :meth:`Idempotency.replay_of`) and stores the handler's answer
  with the work, after it, in one statement (:meth:`Idempotency.store`).

A concurrent request with the same key that stores its answer first wins: the other's
``INSERT … ON CONFLICT`` waits for the winner's commit (PostgreSQL; SQLite runs one writer at a
time) and inserts nothing, so its transaction, with the work it did and the events it queued in
the outbox, rolls back, and it answers the winner's response (:meth:`Idempotency.find_replay`).
One statement covers what a look-up, a claim flushed before the work and an update of the claim
with the answer did in three round trips (issue 18). A record older than 24 h is replaced by
that same statement. A different body with a known key raises 422 ``idempotency_key_reused``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import ColumnElement, Row, Select, and_, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.inserts import dialect_insert
from control_plane.db.models.idempotency import IdempotencyRecord
from control_plane.errors import ErrorItem, Validation

REPLAY_WINDOW = timedelta(hours=24)
MAX_KEY_LENGTH = 255


class KeyTaken(Exception):
    """A concurrent request with the same key stored its answer first (replay it)."""


class Replay(Exception):
    """The stored first answer of this key and body: the middleware sends ``response``."""

    def __init__(self, response: web.Response) -> None:
        super().__init__("idempotent replay")
        self.response = response


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


def _window_start(now: datetime | None = None) -> datetime:
    return (now or datetime.now(UTC)) - REPLAY_WINDOW


@dataclass(slots=True)
class Idempotency:
    """One request's ``Idempotency-Key`` on a route declared ``idempotent=True``.

    Attributes:
        api_key_id: The caller's API key (a key counts per API key and route).
        route: The route's path template (``/api/v1/bots``).
        key: The header's value.
        stored: Set once the handler's answer is stored with its work (the middleware checks
            that a success was).
    """

    api_key_id: int
    route: str
    key: str
    stored: bool = False

    def _match(self) -> ColumnElement[bool]:
        return and_(
            IdempotencyRecord.api_key_id == self.api_key_id,
            IdempotencyRecord.route == self.route,
            IdempotencyRecord.idempotency_key == self.key,
        )

    def joined(self, statement: Select[*tuple[Any, ...]]) -> Select[*tuple[Any, ...]]:
        """``statement`` with this key's record (or NULLs) outer-joined as one more column.

        Read it from the row with :meth:`record_of`.
        """
        return statement.add_columns(IdempotencyRecord).outerjoin(IdempotencyRecord, self._match())

    @staticmethod
    def record_of(row: Row[*tuple[Any, ...]]) -> IdempotencyRecord | None:
        """The record column :meth:`joined` added to a row (None: no record)."""
        record: IdempotencyRecord | None = row._mapping[IdempotencyRecord]
        return record

    @staticmethod
    def replay_of(record: IdempotencyRecord, digest: str) -> web.Response | None:
        """The stored first response of ``record``, or None when it is older than 24 h.

        An expired record is left in place: :meth:`store` replaces it.

        Raises:
            Validation: 422 ``idempotency_key_reused`` when the body's ``digest`` differs.
        """
        if record.created_at < _window_start():
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

    async def store(self, session: AsyncSession, digest: str, status: int, body: str) -> None:
        """Store the answer (``status``, JSON ``body``) in ``session``'s transaction.

        One ``INSERT … ON CONFLICT DO UPDATE … WHERE`` the existing record expired: on
        PostgreSQL it waits while a concurrent transaction holds the same key and, once that
        one commits, finds its record within the window and changes nothing.

        Raises:
            KeyTaken: Another request holds the key (the caller rolls back and replays that
                request's answer with :meth:`find_replay`).
        """
        now = datetime.now(UTC)
        values = {
            "request_digest": digest,
            "response_status": status,
            "response_body": body,
            "created_at": now,
        }
        row = dialect_insert(session, IdempotencyRecord).values(
            api_key_id=self.api_key_id, route=self.route, idempotency_key=self.key, **values
        )
        upsert = row.on_conflict_do_update(
            index_elements=["api_key_id", "route", "idempotency_key"],
            set_={name: row.excluded[name] for name in values},
            where=IdempotencyRecord.created_at < _window_start(now),
        )
        if (await session.execute(upsert.returning(IdempotencyRecord.id))).first() is None:
            raise KeyTaken
        self.stored = True

    async def find_replay(self, session: AsyncSession, digest: str) -> web.Response | None:
        """The stored first response for this key, or None when there is none within 24 h.

        Raises:
            Validation: 422 ``idempotency_key_reused`` when the body's ``digest`` differs.
        """
        record = (
            await session.execute(select(IdempotencyRecord).where(self._match()))
        ).scalar_one_or_none()
        return None if record is None else self.replay_of(record, digest)


IDEMPOTENCY = web.RequestKey("idempotency", Idempotency)
"""Set by the idempotency middleware on a request to an ``idempotent=True`` route with a key."""


async def purge_expired(session: AsyncSession, now: datetime | None = None) -> int:
    """Delete records older than the replay window; returns how many went."""
    result = await session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < _window_start(now))
    )
    return int(getattr(result, "rowcount", 0) or 0)
