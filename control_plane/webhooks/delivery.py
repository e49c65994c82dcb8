"""The embedded provider's delivery worker: outbox fan-out, signed POSTs, retries, disabling.

One :class:`DeliveryWorker` runs per control-plane process (owned by the app's cleanup
context). Its loop:

1. **Relay**: claims undispatched outbox rows and, in the same transaction, creates one
   ``webhook_deliveries`` row per enabled endpoint of the workspace whose ``filter_types``
   match (empty filter = all). The filter in force when the event is relayed decides.
2. **Claim**: due deliveries (pending with ``next_attempt_at <= now``, or sending with an
   expired lease after a crash) are claimed by conditional ``UPDATE`` — safe with several
   replicas — and get an attempt row with status 3 (sending).
3. **Attempt**: POST the stored body with Standard Webhooks headers (``webhook-id`` = the
   message id on every retry), no redirects, 15 s timeout, the SSRF guard on the connection.
   A 2xx is success (0); anything else, or no answer, is failed (2).
4. **Schedule**: the first attempt is immediate; ``retry_schedule[n]`` is the delay after the
   failure of attempt ``n + 1`` before the next (setting ``webhook_retry_schedule``; API.md 2.8:
   0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); when the retries are used up the delivery
   is failed for good. An endpoint whose failures have lasted
   :data:`DISABLE_AFTER` without a success is disabled; its queued deliveries fail.

Delivery is at least once: a crash after the receiver answered but before the result is
stored repeats the attempt after the lease expires, with the same ``webhook-id``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import aiohttp
from sqlalchemy import and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from control_plane.db.models.webhook import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookMessage,
)
from control_plane.webhooks.ids import new_id
from control_plane.webhooks.outbox import claim_message, pending_messages
from control_plane.webhooks.schemas import AttemptStatus
from control_plane.webhooks.signing import signed_headers
from control_plane.webhooks.ssrf import TargetPolicy, TargetRefused, check_url, client_session

logger = logging.getLogger(__name__)

DISABLE_AFTER = timedelta(days=5)
# Longer than the 15 s request timeout plus the time to store the result.
LEASE = timedelta(seconds=60)
_RELAY_BATCH = 200


@dataclass(frozen=True, slots=True)
class _Job:
    delivery_id: int
    attempt_id: str
    message_id: str
    endpoint_id: str
    url: str
    secret: str
    body: str
    disabled: bool


def _now() -> datetime:
    return datetime.now(UTC)


class DeliveryWorker:
    """Relays the outbox to endpoints and delivers with retries until cancelled.

    Args:
        sessionmaker: Sessions on the control plane's database.
        retry_schedule: Delays in seconds before each retry, from the failure before it.
        policy: SSRF policy for the targets.
        poll_interval: Seconds between looks at the database when idle.
        concurrency: Attempts in flight at once.
    """

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        *,
        retry_schedule: Sequence[float],
        policy: TargetPolicy,
        poll_interval: float = 0.25,
        concurrency: int = 32,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._schedule = [float(delay) for delay in retry_schedule]
        self._policy = policy
        self._poll_interval = poll_interval
        self._concurrency = concurrency
        self._wake = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()

    def wake(self) -> None:
        """Look at the outbox and the due deliveries now instead of at the next poll."""
        self._wake.set()

    async def run(self) -> None:
        """Work until cancelled; in-flight attempts are cancelled with it (leases expire)."""
        async with client_session(self._policy) as http, asyncio.TaskGroup() as group:
            while True:
                self._wake.clear()
                try:
                    relayed = await self._relay()
                    free = self._concurrency - len(self._inflight)
                    jobs = await self._claim(free) if free > 0 else []
                except asyncio.CancelledError:
                    raise
                except Exception:
                    # A database hiccup must not end delivery; the next pass retries.
                    logger.exception("webhook worker pass failed")
                    await asyncio.sleep(self._poll_interval)
                    continue
                for job in jobs:
                    task = group.create_task(self._attempt(http, job))
                    self._inflight.add(task)
                    task.add_done_callback(self._finished)
                if relayed or (jobs and len(jobs) == free):
                    continue
                try:
                    await asyncio.wait_for(self._wake.wait(), self._poll_interval)
                except TimeoutError:
                    pass

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._wake.set()

    async def _relay(self) -> int:
        """Fan undispatched outbox rows out to matching endpoints; returns rows relayed."""
        async with self._sessionmaker() as session, session.begin():
            messages = await pending_messages(session, _RELAY_BATCH)
            if not messages:
                return 0
            workspaces = {message.workspace_id for message in messages}
            endpoints = await session.scalars(
                select(WebhookEndpoint).where(
                    WebhookEndpoint.workspace_id.in_(workspaces),
                    WebhookEndpoint.disabled.is_(False),
                )
            )
            by_workspace: dict[object, list[WebhookEndpoint]] = defaultdict(list)
            for endpoint in endpoints:
                by_workspace[endpoint.workspace_id].append(endpoint)
            now = _now()
            relayed = 0
            for message in messages:
                if not await claim_message(session, message.id, now):
                    continue
                relayed += 1
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
        return relayed

    async def _claim(self, limit: int) -> list[_Job]:
        """Claim up to ``limit`` due deliveries and open a ``sending`` attempt for each."""
        now = _now()
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
            claimed: list[int] = []
            for delivery_id in candidates:
                result = await session.execute(
                    update(WebhookDelivery)
                    .where(WebhookDelivery.id == delivery_id, due)
                    .values(status=AttemptStatus.SENDING, lease_until=now + LEASE)
                    .execution_options(synchronize_session=False)
                )
                if getattr(result, "rowcount", 0) == 1:
                    claimed.append(delivery_id)
            if not claimed:
                return []
            rows = await session.execute(
                select(WebhookDelivery, WebhookMessage, WebhookEndpoint)
                .join(WebhookMessage, WebhookMessage.id == WebhookDelivery.message_id)
                .join(WebhookEndpoint, WebhookEndpoint.id == WebhookDelivery.endpoint_id)
                .where(WebhookDelivery.id.in_(claimed))
            )
            jobs: list[_Job] = []
            for delivery, message, endpoint in rows:
                attempt_id = new_id("atmpt")
                session.add(
                    WebhookAttempt(
                        id=attempt_id,
                        delivery_id=delivery.id,
                        message_id=message.id,
                        endpoint_id=endpoint.id,
                        status=AttemptStatus.SENDING,
                        timestamp=now,
                    )
                )
                jobs.append(
                    _Job(
                        delivery_id=delivery.id,
                        attempt_id=attempt_id,
                        message_id=message.id,
                        endpoint_id=endpoint.id,
                        url=endpoint.url,
                        secret=endpoint.secret,
                        body=message.body,
                        disabled=endpoint.disabled,
                    )
                )
            return jobs

    async def _attempt(self, http: aiohttp.ClientSession, job: _Job) -> None:
        """Send one attempt and store its outcome; never raises (the task group must live)."""
        started = time.monotonic()
        code = 0
        try:
            if not job.disabled:
                code = await self._post(http, job)
        except asyncio.CancelledError:
            raise
        except TargetRefused:
            logger.warning(
                "webhook target refused by the SSRF guard",
                extra={"endpoint_id": job.endpoint_id, "message_id": job.message_id},
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            logger.info(
                "webhook attempt got no response",
                extra={
                    "endpoint_id": job.endpoint_id,
                    "message_id": job.message_id,
                    "error": type(error).__name__,
                },
            )
        duration_ms = int((time.monotonic() - started) * 1000)
        try:
            await self._record(job, code, duration_ms)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The lease expires and another pass retries; losing the log line is all we risk.
            logger.exception(
                "storing a webhook attempt failed",
                extra={"endpoint_id": job.endpoint_id, "message_id": job.message_id},
            )

    async def _post(self, http: aiohttp.ClientSession, job: _Job) -> int:
        check_url(job.url, self._policy)
        headers = signed_headers(job.secret, job.message_id, job.body, _now())
        async with http.post(
            job.url, data=job.body.encode("utf-8"), headers=headers, allow_redirects=False
        ) as response:
            return response.status

    async def _record(self, job: _Job, code: int, duration_ms: int) -> None:
        success = 200 <= code < 300
        now = _now()
        async with self._sessionmaker() as session, session.begin():
            await session.execute(
                update(WebhookAttempt)
                .where(WebhookAttempt.id == job.attempt_id)
                .values(
                    status=AttemptStatus.SUCCESS if success else AttemptStatus.FAILED,
                    response_status_code=code,
                    response_duration_ms=duration_ms,
                )
                .execution_options(synchronize_session=False)
            )
            delivery = await session.get(WebhookDelivery, job.delivery_id)
            endpoint = await session.get(WebhookEndpoint, job.endpoint_id)
            if delivery is None or endpoint is None:
                return  # the endpoint was deleted meanwhile
            delivery.attempt_count += 1
            delivery.lease_until = None
            if success:
                delivery.status = AttemptStatus.SUCCESS
                delivery.next_attempt_at = None
                endpoint.failing_since = None
                return
            if not job.disabled:
                endpoint.failing_since = endpoint.failing_since or now
                if now - endpoint.failing_since >= DISABLE_AFTER and not endpoint.disabled:
                    endpoint.disabled = True
                    logger.warning(
                        "webhook endpoint disabled after failing for 5 days",
                        extra={"endpoint_id": endpoint.id},
                    )
            retries_done = delivery.attempt_count - 1
            if retries_done < len(self._schedule) and not endpoint.disabled:
                delivery.status = AttemptStatus.PENDING
                delivery.next_attempt_at = now + timedelta(seconds=self._schedule[retries_done])
            else:
                delivery.status = AttemptStatus.FAILED
                delivery.next_attempt_at = None
