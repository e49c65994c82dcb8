"""The webhook delivery tables' moves, one transaction each: relay, claim, record, sweep.

:class:`DeliveryLedger` is the database half of the embedded provider's delivery
(:class:`~control_plane.webhooks.delivery.DeliveryWorker` is the loop and the HTTP half):

1. **Relay**: claims undispatched outbox rows and, in the same transaction, creates one
   ``webhook_deliveries`` row per enabled endpoint of the workspace whose ``filter_types``
   match (empty filter = all). The filter in force when the event is relayed decides.
2. **Claim**: due deliveries (pending with ``next_attempt_at <= now``, or sending with an
   expired lease after a crash) are claimed by conditional ``UPDATE`` — safe with several
   replicas — and get an attempt row with status 3 (sending).
3. **Record**: an attempt's outcome (a 2xx is success (0); anything else, or no answer, is
   failed (2)) is stored and the delivery scheduled: ``retry_schedule[n]`` is the delay after
   the failure of attempt ``n + 1`` before the next (setting ``webhook_retry_schedule``;
   docs/api.md 2.8: 0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); when the retries are used
   up the delivery is failed for good. An endpoint whose failures have lasted
   :data:`DISABLE_AFTER` without a success is disabled; its queued deliveries fail.
4. **Sweep**: messages older than :data:`RETENTION` are deleted with their deliveries and
   attempts.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from control_plane.db.models.webhook import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookMessage,
)
from control_plane.enums import AttemptStatus
from control_plane.token_cipher import TokenCipher
from control_plane.webhooks.ids import new_id
from control_plane.webhooks.metrics import WebhookMetrics
from control_plane.webhooks.outbox import pending_messages
from control_plane.webhooks.sealed_secrets import open_secret

logger = logging.getLogger(__name__)

DISABLE_AFTER = timedelta(days=5)
# Longer than the 15 s request timeout plus the time to store the result.
LEASE = timedelta(seconds=60)
_RELAY_BATCH = 200
# Messages, deliveries and attempts are kept this long (the delivery log's horizon).
RETENTION = timedelta(days=30)
_SWEEP_BATCH = 1000


@dataclass(frozen=True, slots=True)
class Job:
    """A claimed delivery's attempt, to be sent.

    Attributes:
        delivery_id: The ``webhook_deliveries`` row.
        attempts_before: Attempts the delivery had before this one.
        attempt_id: The ``webhook_attempts`` row opened as sending for this one.
        message_id: The message (the ``webhook-id`` header, the same on every retry).
        endpoint_id: The endpoint's id.
        url: Where the POST goes.
        secret: The endpoint's signing secret, opened.
        body: The stored JSON body.
        disabled: The endpoint is disabled: nothing is sent, the attempt fails.
    """

    delivery_id: int
    attempts_before: int
    attempt_id: str
    message_id: str
    endpoint_id: str
    url: str
    secret: str
    body: str
    disabled: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an attempt got: the HTTP status (0: no answer) and how long it took, in ms."""

    job: Job
    code: int
    duration_ms: int


class DeliveryLedger:
    """Moves messages, deliveries and attempts through their states, one transaction a move.

    Args:
        sessionmaker: Sessions on the control plane's database.
        retry_schedule: Delays in seconds before each retry, from the failure before it.
        cipher: Opens the endpoints' sealed secrets (:mod:`control_plane.webhooks.sealed_secrets`).
        metrics: Where to count relayed messages and disabled endpoints (none when omitted).
    """

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        *,
        retry_schedule: Sequence[float],
        cipher: TokenCipher,
        metrics: WebhookMetrics | None = None,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._schedule = [float(delay) for delay in retry_schedule]
        self._cipher = cipher
        self._metrics = metrics

    async def relay(self) -> int:
        """Fan undispatched outbox rows out to matching endpoints; returns rows relayed.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: The database refused (nothing was relayed).
        """
        async with self._sessionmaker() as session, session.begin():
            messages = {
                message.id: message for message in await pending_messages(session, _RELAY_BATCH)
            }
            if not messages:
                return 0
            now = datetime.now(UTC)
            # The conditional UPDATE is the claim: rows another replica took are not returned.
            claimed = (
                await session.scalars(
                    update(WebhookMessage)
                    .where(
                        WebhookMessage.id.in_(list(messages)),
                        WebhookMessage.dispatched_at.is_(None),
                    )
                    .values(dispatched_at=now)
                    .returning(WebhookMessage.id)
                    .execution_options(synchronize_session=False)
                )
            ).all()
            workspaces = {messages[message_id].workspace_id for message_id in claimed}
            endpoints = await session.scalars(
                select(WebhookEndpoint).where(
                    WebhookEndpoint.workspace_id.in_(workspaces),
                    WebhookEndpoint.disabled.is_(False),
                )
            )
            by_workspace: dict[object, list[WebhookEndpoint]] = defaultdict(list)
            for endpoint in endpoints:
                by_workspace[endpoint.workspace_id].append(endpoint)
            for message_id in claimed:
                message = messages[message_id]
                for endpoint in by_workspace[message.workspace_id]:
                    if endpoint.filter_types and message.event_type not in endpoint.filter_types:
                        continue
                    session.add(
                        WebhookDelivery(
                            message_id=message.id,
                            endpoint_id=endpoint.id,
                            status=AttemptStatus.PENDING,
                            next_attempt_at=now,
                            created_at=now,
                        )
                    )
        if self._metrics is not None:
            self._metrics.relayed.inc(len(claimed))
        return len(claimed)

    async def claim(self, limit: int) -> list[Job]:
        """Claim up to ``limit`` due deliveries and open a ``sending`` attempt for each.

        Each is leased for :data:`LEASE`: one whose outcome is never recorded is due again
        once the lease expires.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: The database refused (nothing was claimed).
        """
        now = datetime.now(UTC)
        due = or_(
            and_(
                WebhookDelivery.status == AttemptStatus.PENDING,
                WebhookDelivery.next_attempt_at <= now,
            ),
            and_(
                WebhookDelivery.status == AttemptStatus.SENDING,
                WebhookDelivery.lease_until < now,
            ),
        )
        async with self._sessionmaker() as session, session.begin():
            candidates = (
                await session.scalars(
                    select(WebhookDelivery.id)
                    .where(due)
                    .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
                    .limit(limit)
                )
            ).all()
            if not candidates:
                return []
            # Re-checking ``due`` in the UPDATE makes it the claim (safe across replicas).
            claimed = (
                await session.scalars(
                    update(WebhookDelivery)
                    .where(WebhookDelivery.id.in_(candidates), due)
                    .values(status=AttemptStatus.SENDING, lease_until=now + LEASE)
                    .returning(WebhookDelivery.id)
                    .execution_options(synchronize_session=False)
                )
            ).all()
            if not claimed:
                return []
            rows = await session.execute(
                select(
                    WebhookDelivery.id,
                    WebhookDelivery.attempt_count,
                    WebhookMessage.id,
                    WebhookMessage.body,
                    WebhookEndpoint.id,
                    WebhookEndpoint.url,
                    WebhookEndpoint.secret,
                    WebhookEndpoint.disabled,
                )
                .join(WebhookMessage, WebhookMessage.id == WebhookDelivery.message_id)
                .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
                .where(WebhookDelivery.id.in_(claimed))
            )
            jobs = [
                Job(
                    delivery_id=delivery_id,
                    attempts_before=attempt_count,
                    attempt_id=new_id("atmpt"),
                    message_id=message_id,
                    endpoint_id=endpoint_id,
                    url=url,
                    secret=open_secret(self._cipher, secret),
                    body=body,
                    disabled=disabled,
                )
                for (
                    delivery_id,
                    attempt_count,
                    message_id,
                    body,
                    endpoint_id,
                    url,
                    secret,
                    disabled,
                ) in rows
            ]
            session.add_all(
                WebhookAttempt(
                    id=job.attempt_id,
                    delivery_id=job.delivery_id,
                    message_id=job.message_id,
                    endpoint_id=job.endpoint_id,
                    status=AttemptStatus.SENDING,
                    response_status_code=0,
                    response_duration_ms=0,
                    timestamp=now,
                )
                for job in jobs
            )
            return jobs

    async def record(self, outcomes: Sequence[Outcome]) -> None:
        """Store attempts' outcomes and schedule retries (or fail, or disable), in one transaction.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: The database refused (nothing was stored: the
                deliveries stay ``sending`` until their lease expires).
        """
        async with self._sessionmaker() as session, session.begin():
            await self._record(session, outcomes)

    async def _record(self, session: AsyncSession, outcomes: Sequence[Outcome]) -> None:
        now = datetime.now(UTC)
        endpoint_ids = {outcome.job.endpoint_id for outcome in outcomes}
        endpoints = {
            endpoint.id: endpoint
            for endpoint in await session.scalars(
                select(WebhookEndpoint).where(WebhookEndpoint.id.in_(endpoint_ids))
            )
        }
        attempts: list[dict[str, object]] = []
        deliveries: list[dict[str, object]] = []
        for outcome in outcomes:
            job = outcome.job
            endpoint = endpoints.get(job.endpoint_id)
            if endpoint is None:
                continue  # deleted meanwhile, with its deliveries and attempts
            success = 200 <= outcome.code < 300
            attempts.append(
                {
                    "id": job.attempt_id,
                    "status": AttemptStatus.SUCCESS if success else AttemptStatus.FAILED,
                    "response_status_code": outcome.code,
                    "response_duration_ms": outcome.duration_ms,
                }
            )
            count = job.attempts_before + 1
            state: dict[str, object] = {"id": job.delivery_id, "attempt_count": count}
            state["lease_until"] = None
            deliveries.append(state)
            if success:
                state["status"] = AttemptStatus.SUCCESS
                state["next_attempt_at"] = None
                endpoint.failing_since = None
                continue
            if not job.disabled:
                endpoint.failing_since = endpoint.failing_since or now
                if now - endpoint.failing_since >= DISABLE_AFTER and not endpoint.disabled:
                    endpoint.disabled = True
                    if self._metrics is not None:
                        self._metrics.endpoints_disabled.inc()
                    logger.warning(
                        "webhook endpoint disabled after failing for 5 days",
                        extra={"endpoint_id": endpoint.id},
                    )
            retries_done = count - 1
            if retries_done < len(self._schedule) and not endpoint.disabled:
                state["status"] = AttemptStatus.PENDING
                state["next_attempt_at"] = now + timedelta(seconds=self._schedule[retries_done])
            else:
                state["status"] = AttemptStatus.FAILED
                state["next_attempt_at"] = None
        if attempts:
            # ORM bulk UPDATE by primary key: one executemany per table.
            await session.execute(update(WebhookAttempt), attempts)
            await session.execute(update(WebhookDelivery), deliveries)

    async def sweep(self, now: datetime | None = None) -> int:
        """Delete messages older than :data:`RETENTION` with their deliveries and attempts.

        Only messages whose deliveries are all final (success or failed) go; the retry
        schedule ends long before the retention does. At most 1000 a call; returns how many
        messages were deleted.

        Raises:
            sqlalchemy.exc.SQLAlchemyError: The database refused (nothing was deleted).
        """
        cutoff = (now or datetime.now(UTC)) - RETENTION
        async with self._sessionmaker() as session, session.begin():
            unfinished = select(WebhookDelivery.message_id).where(
                WebhookDelivery.status.in_([AttemptStatus.PENDING, AttemptStatus.SENDING])
            )
            old = (
                await session.scalars(
                    select(WebhookMessage.id)
                    .where(
                        WebhookMessage.created_at < cutoff,
                        WebhookMessage.dispatched_at.is_not(None),
                        WebhookMessage.id.not_in(unfinished),
                    )
                    .limit(_SWEEP_BATCH)
                )
            ).all()
            if not old:
                return 0
            await session.execute(delete(WebhookAttempt).where(WebhookAttempt.message_id.in_(old)))
            await session.execute(
                delete(WebhookDelivery).where(WebhookDelivery.message_id.in_(old))
            )
            await session.execute(delete(WebhookMessage).where(WebhookMessage.id.in_(old)))
        logger.info("old webhook messages deleted", extra={"count": len(old)})
        return len(old)
