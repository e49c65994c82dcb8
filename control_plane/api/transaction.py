"""A handler's write transaction and the answer it commits with.

The seam through which ``Idempotency-Key`` reaches a handler that knows nothing of it::

    async with answered_transaction(request) as transaction:
        row = await transaction.first_read(select(Workspace, ...).where(...))
        ...                                             # the work, in transaction.session
        transaction.answer(record, status=201)
    ...                                                 # after the commit
    return transaction.response

Without ``request[IDEMPOTENCY]`` it is one transaction, committed when the block ends. With it
(a route declared ``idempotent=True`` and a request that sends the header; see
:mod:`control_plane.api.idempotency`):

* :meth:`AnsweredTransaction.first_read` brings the key's stored answer in the same statement
  (an outer join): the same body raises :class:`~control_plane.api.idempotency.Replay` before
  any work (the transaction rolls back, the middleware sends the stored response), a different
  one 422 ``idempotency_key_reused``;
* the answer is stored after the block, before the commit, in one statement; when another
  request holds the key, or the work fails on a constraint, the transaction rolls back and
  that request's stored answer is raised as a ``Replay`` (the failure itself when there is
  none).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from pydantic import BaseModel
from sqlalchemy import Row, Select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.api.http import json_response, read_json_object
from control_plane.api.idempotency import (
    IDEMPOTENCY,
    Idempotency,
    KeyTaken,
    Replay,
    body_digest,
)
from control_plane.db.engine import DB


class AnsweredTransaction:
    """The open transaction of :func:`answered_transaction` (see the module docstring).

    Attributes:
        session: The transaction's session; the block does its work in it (flushed, not
            committed).
    """

    def __init__(self, session: AsyncSession, idempotency: Idempotency | None, digest: str):
        self.session = session
        self._idempotency = idempotency
        self._digest = digest
        self._response: web.Response | None = None

    async def first_read(self, statement: Select[*tuple[Any, ...]]) -> Row[*tuple[Any, ...]] | None:
        """Run the transaction's first read; its first row, or None.

        Read its columns by name (``row.live``): with an ``Idempotency-Key`` the row carries one
        column more, the key's record.

        Raises:
            Replay: The key's stored answer for this body (nothing of the work is done).
            Validation: 422 ``idempotency_key_reused`` for another body.
        """
        idempotency = self._idempotency
        if idempotency is None:
            return (await self.session.execute(statement)).first()
        row = (await self.session.execute(idempotency.joined(statement))).first()
        record = None if row is None else idempotency.record_of(row)
        replay = None if record is None else idempotency.replay_of(record, self._digest)
        if replay is not None:
            raise Replay(replay)
        return row

    def answer(self, payload: BaseModel, *, status: int) -> None:
        """Set the response (``payload`` as JSON) the transaction commits with."""
        self._response = json_response(payload, status=status)

    @property
    def response(self) -> web.Response:
        """The response given to :meth:`answer`.

        Raises:
            RuntimeError: :meth:`answer` was not called.
        """
        if self._response is None:
            raise RuntimeError("the transaction was not answered")
        return self._response


@asynccontextmanager
async def answered_transaction(request: web.Request) -> AsyncIterator[AnsweredTransaction]:
    """Open the request's write transaction; it commits, with the answer, when the block ends.

    Raises:
        Replay: The request's ``Idempotency-Key`` has a stored answer for this body (also when
            a concurrent request stored it first).
        Validation: 422 ``idempotency_key_reused``.
    """
    sessions = request.app[DB].sessions
    idempotency = request.get(IDEMPOTENCY)
    if idempotency is None:
        async with sessions.begin() as session:
            yield AnsweredTransaction(session, None, "")
        return
    digest = body_digest(await read_json_object(request))
    try:
        async with sessions.begin() as session:
            transaction = AnsweredTransaction(session, idempotency, digest)
            yield transaction
            answer = transaction.response
            await idempotency.store(session, digest, answer.status, answer.text or "")
    except (KeyTaken, IntegrityError):
        # A concurrent request with the same key committed first: answer what it answered.
        async with sessions.begin() as session:
            replay = await idempotency.find_replay(session, digest)
        if replay is None:
            raise
        raise Replay(replay) from None
