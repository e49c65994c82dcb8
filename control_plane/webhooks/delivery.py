"""The embedded provider's delivery worker: the loop, its pacing, and the signed POSTs.

One :class:`DeliveryWorker` runs per control-plane process (owned by the app's cleanup
context). Each pass it stores the outcomes of finished attempts, relays the outbox, claims due
deliveries and starts their attempts; the database side of each of those moves (and the retry
schedule, disabling, retention) is :class:`~control_plane.webhooks.deliveries.DeliveryLedger`.

An attempt POSTs the stored body with Standard Webhooks headers (``webhook-id`` = the message
id on every retry), no redirects, 15 s timeout, the SSRF guard on the connection; up to
``concurrency`` are in flight at once. Every 10 minutes old messages are swept
(:data:`~control_plane.webhooks.deliveries.RETENTION`, 30 days).

Delivery is at least once: a crash after the receiver answered but before the result is
stored repeats the attempt after the lease expires, with the same ``webhook-id``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import aiohttp
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from control_plane.background import BackgroundLoop
from control_plane.token_cipher import TokenCipher
from control_plane.webhooks.deliveries import DeliveryLedger, Job, Outcome
from control_plane.webhooks.metrics import WebhookMetrics
from control_plane.webhooks.signing import signed_headers
from meetbot_common.ssrf import TargetPolicy, TargetRefused, check_url, client_session

logger = logging.getLogger(__name__)

_SWEEP_INTERVAL_SECONDS = 600.0
# Timers may fire a hair early; closer than this to the next relay counts as due.
_TIMER_SLACK = 0.005


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
        self._ledger = DeliveryLedger(
            sessionmaker, retry_schedule=retry_schedule, cipher=cipher, metrics=metrics
        )
        self._metrics = metrics
        self._policy = policy
        self._poll_interval = poll_interval
        self._concurrency = concurrency
        self._inflight: set[asyncio.Task[None]] = set()
        # Outcomes waiting to be stored; the loop writes them in one transaction per pass, so
        # attempts in flight never compete with each other for the database.
        self._results: list[Outcome] = []
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
                relayed = await self._ledger.relay()
                self._next_relay = clock.time() + (0 if relayed else self._poll_interval)
            free = self._concurrency - len(self._inflight)
            due_check = free >= batch or not self._inflight
            jobs = await self._ledger.claim(free) if free > 0 and due_check else []
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
        """Delete messages older than the retention (30 days) whose deliveries are all final.

        Returns how many messages were deleted (at most 1000 a call); see
        :meth:`DeliveryLedger.sweep <control_plane.webhooks.deliveries.DeliveryLedger.sweep>`.
        """
        return await self._ledger.sweep(now)

    async def _attempt(self, http: aiohttp.ClientSession, job: Job) -> None:
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
        self._results.append(Outcome(job, code, int(elapsed * 1000)))
        if self._metrics is not None:
            outcome = "success" if 200 <= code < 300 else "failed"
            self._metrics.attempts.labels(outcome=outcome).inc()
            self._metrics.attempt_seconds.observe(elapsed)

    async def _post(self, http: aiohttp.ClientSession, job: Job) -> int:
        check_url(job.url, self._policy)
        headers = signed_headers(job.secret, job.message_id, job.body, datetime.now(UTC))
        async with http.post(
            job.url, data=job.body.encode("utf-8"), headers=headers, allow_redirects=False
        ) as response:
            return response.status

    def _take_results(self) -> list[Outcome]:
        results, self._results = self._results, []
        return results

    async def _store(self, results: list[Outcome]) -> None:
        """Store outcomes and schedule retries, all in one transaction.

        On failure the outcomes are dropped: their deliveries stay ``sending`` until the lease
        expires and are then attempted again (at least once, same ``webhook-id``).
        """
        try:
            await self._ledger.record(results)
        except Exception:
            logger.exception("storing webhook attempts failed", extra={"count": len(results)})
