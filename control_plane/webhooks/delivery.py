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
   failure of attempt ``n + 1`` before the next (setting ``webhook_retry_schedule``;
   docs/api.md 2.8:
   0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); when the retries are used up the delivery
   is failed for good. An endpoint whose failures have lasted
   :data:`DISABLE_AFTER` without a success is disabled; its queued deliveries fail.

Every 10 minutes, messages older than 30 days (:data:`RETENTION`) are deleted with their
deliveries and attempts.

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
from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from control_plane.background import BackgroundLoop
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
from control_plane.webhooks.signing import signed_headers
from control_plane.webhooks.ssrf import TargetPolicy, TargetRefused, check_url, client_session

logger = logging.getLogger(__name__)

DISABLE_AFTER = timedelta(days=5)
# Longer than the 15 s request timeout plus the time to store the result.
LEASE = timedelta(seconds=60)
_RELAY_BATCH = 200
# Messages, deliveries and attempts are kept this long (the delivery log's horizon).
RETENTION = timedelta(days=30)
_SWEEP_INTERVAL_SECONDS = 600.0
_SWEEP_BATCH = 1000
# Timers may fire a hair early; closer than this to the next relay counts as due.
_TIMER_SLACK = 0.005


@dataclass(frozen=True, slots=True)
class _Job:
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
class _Result:
    job: _Job
    code: int
    duration_ms: int


def _now() -> datetime:
    return datetime.now(UTC)


class DeliveryWorker:
    """Relays the outbox to endpoints and delivers with retries until cancelled.

    Args:
        sessionmaker: Sessions on the control plane's database.
        retry_schedule: Delays in seconds before each retry, from the failure before it.
        policy: SSRF policy for the targets.
        cipher: Opens the endpoints' sealed secrets (:mod:`control_plane.webhooks.sealed_secrets`).
        poll_interval: Seconds between looks at the database when idle.
        concurrency: Attempts in flight at once.
        metrics: Where to count relayed messages and attempts (none when omitted).
        wake_gap: Seconds between two relays that wake-ups ask for: the wake-ups of the
            commits in between are answered together by one relay (a busy agent link commits
            a batch with an event many times a second; one pass for each cost a transaction).
    """

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        *,
        retry_schedule: Sequence[float],
        policy: TargetPolicy,
        cipher: TokenCipher,
        poll_interval: float = 0.25,
        concurrency: int = 32,
        metrics: WebhookMetrics | None = None,
        wake_gap: float = 0.1,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._cipher = cipher
        self._metrics = metrics
        self._schedule = [float(delay) for delay in retry_schedule]
        self._policy = policy
        self._poll_interval = poll_interval
        self._concurrency = concurrency
        self._inflight: set[asyncio.Task[None]] = set()
        # Outcomes waiting to be stored; the loop writes them in one transaction per pass, so
        # attempts in flight never compete with each other for the database.
        self._results: list[_Result] = []
        self._relay_now = True
        self._next_relay = 0.0
        self._wake_gap = wake_gap
        self._last_relay = float("-inf")  # loop time of the last relay
        self._wake_timer: asyncio.TimerHandle | None = None
        self._next_sweep = 0.0
        # Set while run() runs: the attempts' HTTP session and the group owning their tasks.
        self._http: aiohttp.ClientSession | None = None
        self._group: asyncio.TaskGroup | None = None
        self._loop = BackgroundLoop("webhook-delivery", self.step, interval=poll_interval)

    def wake(self) -> None:
        """Look at the outbox and the due deliveries now instead of at the next poll.

        "Now" is at most ``wake_gap`` after the last relay: the wake-ups in between share one.
        """
        self._relay_now = True
        if self._wake_timer is not None:
            return  # a relay is already due at the end of the gap
        try:
            clock = asyncio.get_running_loop()
        except RuntimeError:  # not on the worker's loop: no timer to arm, wake as before
            self._loop.wake()
            return
        delay = self._last_relay + self._wake_gap - clock.time()
        if delay <= 0:
            self._loop.wake()
            return
        self._wake_timer = clock.call_later(delay, self._wake_after_gap)

    def _wake_after_gap(self) -> None:
        self._wake_timer = None
        self._loop.wake()

    async def run(self) -> None:
        """Work until :meth:`stop` (or cancellation).

        After :meth:`stop`, attempts in flight finish (each is bounded by the 15 s timeout)
        and every outcome is stored before ``run`` returns. When cancelled instead, outcomes
        not yet stored are lost and those deliveries are attempted again once their lease
        expires (same ``webhook-id``).
        """
        async with client_session(self._policy) as http:
            async with asyncio.TaskGroup() as group:
                self._http, self._group = http, group
                try:
                    await self._loop.run()
                finally:
                    self._http = self._group = None
                    if self._wake_timer is not None:
                        self._wake_timer.cancel()
                        self._wake_timer = None
            if self._results:
                await self._store(self._take_results())

    def stop(self) -> None:
        """Ask :meth:`run` to finish its attempts in flight, store them and return.

        The pass in progress is never cancelled; see :mod:`control_plane.background`.
        """
        self._loop.request_stop()

    async def step(self) -> float:
        """One pass: store outcomes, sweep (every 10 min), relay the outbox, start due attempts.

        Returns:
            Seconds to wait before the next pass (0: more is due now).

        Raises:
            RuntimeError: Called outside :meth:`run`.
        """
        if self._http is None or self._group is None:
            raise RuntimeError("DeliveryWorker.step runs inside run()")
        clock = asyncio.get_running_loop()
        # Claim in batches: topping up one slot at a time would cost a transaction per attempt.
        batch = max(1, self._concurrency // 4)
        try:
            if self._results:
                await self._store(self._take_results())
            if clock.time() >= self._next_sweep:
                # Scheduled first: a failing sweep must not come back on every pass.
                self._next_sweep = clock.time() + _SWEEP_INTERVAL_SECONDS
                await self.sweep()
            relayed = 0
            if self._relay_now or clock.time() >= self._next_relay - _TIMER_SLACK:
                self._relay_now = False
                self._last_relay = clock.time()
                relayed = await self._relay()
                self._next_relay = clock.time() + (0 if relayed else self._poll_interval)
            free = self._concurrency - len(self._inflight)
            due_check = free >= batch or not self._inflight
            jobs = await self._claim(free) if free > 0 and due_check else []
        except asyncio.CancelledError:
            raise
        except Exception:
            # A database hiccup must not end delivery; the next pass retries.
            logger.exception("webhook worker pass failed")
            return self._poll_interval
        for job in jobs:
            task = self._group.create_task(self._attempt(self._http, job))
            self._inflight.add(task)
            task.add_done_callback(self._finished)
        if relayed or (jobs and len(jobs) == free):
            return 0.0
        remaining = self._next_relay - clock.time()
        if remaining <= _TIMER_SLACK:
            return 0.0
        return min(self._poll_interval, remaining)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._loop.wake()

    async def sweep(self, now: datetime | None = None) -> int:
        """Delete messages older than :data:`RETENTION` with their deliveries and attempts.

        Only messages whose deliveries are all final (success or failed) go; the retry
        schedule ends long before the retention does. Returns how many messages were deleted.
        """
        cutoff = (now or _now()) - RETENTION
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

    async def _relay(self) -> int:
        """Fan undispatched outbox rows out to matching endpoints; returns rows relayed."""
        async with self._sessionmaker() as session, session.begin():
            messages = {
                message.id: message for message in await pending_messages(session, _RELAY_BATCH)
            }
            if not messages:
                return 0
            now = _now()
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
                _Job(
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

    async def _attempt(self, http: aiohttp.ClientSession, job: _Job) -> None:
        """Send one attempt and queue its outcome; never raises (the task group must live)."""
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
        elapsed = time.monotonic() - started
        self._results.append(_Result(job, code, int(elapsed * 1000)))
        if self._metrics is not None:
            outcome = "success" if 200 <= code < 300 else "failed"
            self._metrics.attempts.labels(outcome=outcome).inc()
            self._metrics.attempt_seconds.observe(elapsed)

    async def _post(self, http: aiohttp.ClientSession, job: _Job) -> int:
        check_url(job.url, self._policy)
        headers = signed_headers(job.secret, job.message_id, job.body, _now())
        async with http.post(
            job.url, data=job.body.encode("utf-8"), headers=headers, allow_redirects=False
        ) as response:
            return response.status

    def _take_results(self) -> list[_Result]:
        results, self._results = self._results, []
        return results

    async def _store(self, results: list[_Result]) -> None:
        """Store outcomes and schedule retries, all in one transaction.

        On failure the outcomes are dropped: their deliveries stay ``sending`` until the lease
        expires and are then attempted again (at least once, same ``webhook-id``).
        """
        try:
            async with self._sessionmaker() as session, session.begin():
                await self._record(session, results)
        except Exception:
            logger.exception("storing webhook attempts failed", extra={"count": len(results)})

    async def _record(self, session: AsyncSession, results: list[_Result]) -> None:
        now = _now()
        endpoint_ids = {result.job.endpoint_id for result in results}
        endpoints = {
            endpoint.id: endpoint
            for endpoint in await session.scalars(
                select(WebhookEndpoint).where(WebhookEndpoint.id.in_(endpoint_ids))
            )
        }
        attempts: list[dict[str, object]] = []
        deliveries: list[dict[str, object]] = []
        for result in results:
            job = result.job
            endpoint = endpoints.get(job.endpoint_id)
            if endpoint is None:
                continue  # deleted meanwhile, with its deliveries and attempts
            success = 200 <= result.code < 300
            attempts.append(
                {
                    "id": job.attempt_id,
                    "status": AttemptStatus.SUCCESS if success else AttemptStatus.FAILED,
                    "response_status_code": result.code,
                    "response_duration_ms": result.duration_ms,
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
