"""The detection worker: live action detection of every meeting, in the control plane.

Source: docs/api.md 2.9, docs/architecture.md §16 (issue 34). One worker per ``meetbot
serve`` replica, sharing the replica's one :class:`~control_plane.intelligence.chat.ChatModel`.

- Its claim loop (a :class:`~control_plane.background.BackgroundLoop`, every ``poll``
  seconds) enrols meetings whose bot has ``enable_actions`` true (a meeting without it is never
  enrolled, so no call is ever made for it) and claims up to ``meetings_at_once`` free cursors
  (:mod:`.cursors`). Each claimed meeting gets a loop of its own (:class:`_MeetingRun`), so at
  most one call is in flight per meeting, and meetings never wait for each other.
- A meeting's step renews its lease when half of it is spent, reads the segments after the
  cursor (:mod:`.window_store`), and asks :func:`~.windows.next_window` for a complete window
  (a pause, 30 s of speech, no new segment for a pause of wall-clock time, or the meeting's
  end). The window, with the previous one as context and the bot's action prompt (its
  ``instructions``, and its ``model`` when it names one), goes to
  :func:`~.detection.detect_actions` within the workspace's budget (:mod:`.budget`), each try
  limited to ``window_timeout``; transient failures
  (:class:`~.chat.ChatUnavailable`, timeouts) are tried again with exponential backoff up to
  ``window_attempts`` tries. Then the cursor moves and the actions are stored in ONE
  transaction; a repeat of a stored action is dropped. After the commit the window's actions
  are offered to the bot's stream (``action_detected``, through its agent), one after the
  other in stored order and all within ONE ``offer_timeout`` (each waits for the agent's answer
  only as long as the window has left, so a stalled agent holds the meeting's next window up
  for one timeout, not one per action); when the agent says it streamed one, it is marked
  streamed. One it did not stream (the agent left, it is from an image that answers
  ``unknown_command``, no answer in time, or not offered because the window's time was spent)
  is counted and sent by the control plane's stream after the agent's last event, once this
  meeting's detection is finished; the webhook and the record carry it in any case.
- A window given up on (tries spent, an answer that is not the JSON asked for, any other
  :class:`~.chat.ChatError`, e.g. a prompt's ``model`` the provider does not serve) is logged
  once as a warning with the meeting, the window's rows, the error and the prompt's model,
  counted (``meetbot_action_windows_total{outcome="failed"}`` and the cursor's
  ``windows_failed``), and skipped: the cursor moves on, so one broken window cannot stall a
  meeting.
- A meeting is done (never claimed again) once it is final and every stored segment was
  analysed. A lease lost (another replica claimed it after this one stalled) ends the run;
  whatever this replica then answers is not stored (the cursor compare fails).

Stopping (the app's shutdown) ends the claim loop, then each meeting's run: a call in flight,
a backoff or a budget wait is abandoned (no transaction is open then; the window is left to
the next owner), a commit in progress finishes; then the leases are released so another
replica takes the meetings at once. A replica that
dies leaves its leases to lapse; its uncommitted window is analysed again by the next owner and
stored once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from control_plane.action_prompts.service import resolve
from control_plane.background import BackgroundLoop
from control_plane.db.engine import Database
from control_plane.intelligence.action_prompt import build_messages
from control_plane.intelligence.budget import WorkspaceBudgets
from control_plane.intelligence.chat import (
    ChatAnswerInvalid,
    ChatError,
    ChatMessage,
    ChatModel,
    ChatUnavailable,
)
from control_plane.intelligence.cursors import CursorLeases
from control_plane.intelligence.detection import (
    DetectedAction,
    Detection,
    DetectionRequest,
    detect_actions,
)
from control_plane.intelligence.detection_metrics import DetectionMetrics
from control_plane.intelligence.halting import Halted, unless_halted
from control_plane.intelligence.window_store import MeetingView, StoredAction, WindowStore
from control_plane.intelligence.windows import Window, next_window
from control_plane.webhooks.outbox import Outbox
from meetbot_common.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

_OFFER_LEAST_S = 0.1
"""Less time than this left of a window's offers is none (a timer may fire a hair early)."""

PublishAction = Callable[[uuid.UUID, StoredAction, float], Awaitable[None]]
"""``await publish(bot_id, action, within_seconds)``: offers ``action_detected`` to the bot's
stream, waiting up to ``within_seconds`` for the agent's answer (raises when it could not:
:class:`OfferFailed` with its reason; any other exception is counted as ``error``)."""

OfferFailure = Literal["no_link", "refused", "timeout", "not_offered", "error"]
"""Why a stored action was not put on its bot's stream by the agent, the ``reason`` label of
``meetbot_action_stream_offers_failed_total``: ``no_link`` (no replica holds the bot's link:
the agent left), ``refused`` (the agent answered with an error, e.g. ``unknown_command`` from
an older image), ``timeout`` (no answer within what was left of the window's
``offer_timeout``), ``not_offered`` (that time was spent before its turn), ``error`` (any
other failure of the offer; the log line says which)."""


class OfferFailed(Exception):
    """A :data:`PublishAction` could not get the action on the stream, for ``reason``.

    Args:
        reason: One of :data:`OfferFailure`.
        message: What happened, for the log.
    """

    def __init__(self, reason: OfferFailure, message: str) -> None:
        super().__init__(message)
        self.reason: OfferFailure = reason


@dataclass(frozen=True, slots=True)
class DetectionOptions:
    """How the worker windows, paces and retries (``Settings.intelligence_*``; seconds).

    Attributes:
        window_pause: Gap or quiet that closes a window.
        window_max_speech: Speech that closes a window.
        poll: How often the worker looks for meetings and new segments.
        lease: How long a claim on a meeting holds without renewal.
        meetings_at_once: Meetings this replica analyses at once.
        calls_per_minute: Calls per workspace per rolling minute (this replica).
        tokens_per_minute: Tokens per workspace per rolling minute (this replica).
        window_timeout: One try of a window, queueing in the model included.
        window_attempts: Tries of a window on transient failures.
        retry_base: First backoff, doubling per try.
        retry_max: Longest backoff.
        max_tokens: Longest answer, in tokens.
        offer_timeout: How long one window's offers to the bot's stream wait for the agent's
            answers, all of them together (a live command's timeout).
        dedupe_similarity: Text similarity (0-1) at which an action repeats a stored one.
        budget_period: Seconds of the rolling budgets (60; shorter only in tests).
    """

    window_pause: float = 4.0
    window_max_speech: float = 30.0
    poll: float = 1.0
    lease: float = 30.0
    meetings_at_once: int = 64
    calls_per_minute: int = 120
    tokens_per_minute: int = 400_000
    window_timeout: float = 120.0
    window_attempts: int = 3
    retry_base: float = 1.0
    retry_max: float = 30.0
    max_tokens: int = 384
    offer_timeout: float = 20.0
    dedupe_similarity: float = 0.8
    budget_period: float = 60.0


class _WindowFailed(Exception):
    """A window was given up on; ``outcome`` says how."""

    def __init__(self, outcome: str, error: BaseException, model: str | None) -> None:
        super().__init__(str(error))
        self.outcome = outcome
        self.error = error
        self.model = model


class _MeetingRun:
    """One claimed meeting: its loop and what the worker remembers of it between steps."""

    def __init__(self, worker: DetectionWorker, meeting_id: int) -> None:
        self.meeting_id = meeting_id
        self.ended = False
        self.lease_until = datetime.now(UTC) + timedelta(seconds=worker.options.lease)
        self.newest_row = 0
        self.newest_at = time.monotonic()
        self.loop = BackgroundLoop(
            f"action-detection-{meeting_id}",
            lambda: worker.step_meeting(self),
            interval=worker.options.poll,
            stop_grace=worker.options.window_timeout + 5.0,
        )


class DetectionWorker:
    """Live action detection of the meetings this replica holds (see the module docstring).

    Args:
        database: The control plane's database.
        chat: The replica's model (shared with the summary worker; not closed here).
        outbox: The webhook outbox.
        options: Windowing, pacing and retries.
        metrics: Where windows, calls and latencies are counted.
        publish: Offers each stored action to its bot's stream; None offers nothing.
        owner: This worker's id in the cursors' ``owner`` (unique per process by default).
    """

    def __init__(
        self,
        *,
        database: Database,
        chat: ChatModel,
        outbox: Outbox,
        options: DetectionOptions,
        metrics: DetectionMetrics,
        publish: PublishAction | None = None,
        owner: str | None = None,
    ) -> None:
        self.options = options
        self.owner = owner or f"actions-{uuid.uuid4().hex[:16]}"
        self._chat = chat
        self._metrics = metrics
        self._publish = publish
        self._leases = CursorLeases(database, self.owner, timedelta(seconds=options.lease))
        self._store = WindowStore(database, outbox, self.owner)
        self._database = database
        self._budgets = WorkspaceBudgets(
            options.calls_per_minute, options.tokens_per_minute, options.budget_period
        )
        self._runs: dict[int, _MeetingRun] = {}
        self._halt = asyncio.Event()
        self.loop = BackgroundLoop("action-detection", self.step, interval=options.poll)

    @property
    def meetings(self) -> frozenset[int]:
        """Ids of the meetings this worker is analysing now."""
        return frozenset(self._runs)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[DetectionWorker]:
        """Run the worker for the body of the ``async with``; stop it (see above) on the way out."""
        try:
            async with self.loop.running():
                yield self
                self._halt.set()
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """End every meeting's run after its window in progress and release the leases."""
        self._halt.set()
        runs, self._runs = list(self._runs.values()), {}
        await asyncio.gather(*(run.loop.stop() for run in runs))
        held = [run.meeting_id for run in runs if not run.ended]
        try:
            await self._leases.release(held)
        except Exception as exc:  # the database is going away: the leases lapse on their own
            logger.warning(
                "action leases not released; they lapse after %s s",
                self.options.lease,
                extra={"meetings": len(held), "error": str(exc)},
            )

    async def step(self) -> None:
        """One pass of the claim loop: reap ended runs, enrol, claim, start runs."""
        for meeting_id, run in list(self._runs.items()):
            if run.ended:
                del self._runs[meeting_id]
                await run.loop.stop()
        if self._halt.is_set():
            return
        now = datetime.now(UTC)
        await self._leases.enrol(now)
        room = self.options.meetings_at_once - len(self._runs)
        for meeting_id in await self._leases.claim(now, room):
            run = _MeetingRun(self, meeting_id)
            self._runs[meeting_id] = run
            self._metrics.claims.inc()
            run.loop.start()

    async def step_meeting(self, run: _MeetingRun) -> bool | None:
        """One step of a meeting's run: at most one window. True when more is due now."""
        if run.ended or self._halt.is_set():
            return None
        now = datetime.now(UTC)
        if run.lease_until - now < timedelta(seconds=self.options.lease / 2):
            if not await self._leases.renew(run.meeting_id, now):
                self._end(run, "lease lost")
                return None
            run.lease_until = now + timedelta(seconds=self.options.lease)
        view = await self._store.view(run.meeting_id)
        if view is None:
            self._end(run, "cursor not held")
            return None
        newest = view.rows[-1].row if view.rows else view.last_row
        if newest != run.newest_row:
            run.newest_row, run.newest_at = newest, time.monotonic()
        quiet = time.monotonic() - run.newest_at >= self.options.window_pause
        window = next_window(
            view.rows,
            pause=self.options.window_pause,
            max_speech=self.options.window_max_speech,
            final=view.final or view.redacted,
            quiet=quiet,
        )
        if window is None:
            if (view.final or view.redacted) and not view.rows:
                if await self._leases.finish(run.meeting_id, view.last_row, now):
                    self._end(run, "meeting done")
            return None
        try:
            await self._window(run, view, window)
        except Halted:
            return None
        return True

    async def _keep_lease(self, run: _MeetingRun) -> None:
        """Renew the lease every third of it while a window's calls run (cancelled after)."""
        every = self.options.lease / 3
        while True:
            await asyncio.sleep(every)
            now = datetime.now(UTC)
            try:
                kept = await self._leases.renew(run.meeting_id, now)
            except Exception as exc:  # the next renewal may work; the commit checks ownership
                logger.info("action lease not renewed", extra={"error": str(exc)})
                continue
            if not kept:
                return  # another replica has it: this window's commit will not store
            run.lease_until = now + timedelta(seconds=self.options.lease)

    def _end(self, run: _MeetingRun, why: str) -> None:
        run.ended = True
        run.loop.request_stop()
        logger.info(
            "action detection of a meeting ended", extra={"meeting_id": run.meeting_id, "why": why}
        )

    async def _window(self, run: _MeetingRun, view: MeetingView, window: Window) -> None:
        actions: tuple[DetectedAction, ...] = ()
        failed: _WindowFailed | None = None
        if window.lines and not view.redacted:
            keeper = asyncio.create_task(self._keep_lease(run), name=f"{run.loop.name}-lease")
            try:
                detection = await self._detect(view, window)
                actions = detection.actions
            except _WindowFailed as exc:
                failed = exc
            finally:
                await cancel_and_wait(keeper)
        stored = await self._store.store(
            view,
            window,
            actions,
            failed=failed is not None,
            similarity=self.options.dedupe_similarity,
            now=datetime.now(UTC),
        )
        if stored is None:
            self._metrics.windows.labels("superseded").inc()
            return
        if failed is not None:
            self._metrics.windows.labels("failed").inc()
            logger.warning(
                "action detection gave up on a window: %s",
                failed.error,
                extra={
                    "meeting_id": view.meeting_id,
                    "bot_id": str(view.bot_id),
                    "rows": f"{view.last_row + 1}-{window.last_row}",
                    "segments": len(window.lines),
                    "outcome": failed.outcome,
                    "model": self._chat.name,
                    "prompt_model": failed.model,
                },
            )
        elif window.lines:
            self._metrics.windows.labels("done").inc()
            if window.ended_at is not None:
                latency = (datetime.now(UTC) - window.ended_at).total_seconds()
                self._metrics.latency.observe(max(0.0, latency))
        else:
            self._metrics.windows.labels("skipped").inc()
        self._metrics.actions.labels("stored").inc(len(stored.actions))
        self._metrics.actions.labels("repeat").inc(stored.repeats)
        await self._offer(view, stored.actions)

    async def _offer(self, view: MeetingView, actions: Sequence[StoredAction]) -> None:
        """Offer a window's ``actions`` to the bot's stream in order, within one ``offer_timeout``.

        Each offer waits for the agent's answer only as long as the window has left; once that
        is spent (an agent that does not answer spends it on the first) the rest are not
        offered. Every action not streamed is counted and logged with why; the stream sends it
        after the agent's last event instead.
        """
        if self._publish is None:
            return
        deadline = time.monotonic() + self.options.offer_timeout
        bot_id = view.bot_id
        for index, stored in enumerate(actions):
            left = deadline - time.monotonic()
            if left < _OFFER_LEAST_S:
                spent = f"the window's {self.options.offer_timeout} s were spent"
                for unoffered in actions[index:]:
                    self._not_streamed(bot_id, unoffered, "not_offered", spent)
                return
            try:
                async with asyncio.timeout(left):  # delivery through the relay included
                    await self._publish(bot_id, stored, left)
            except TimeoutError:
                self._not_streamed(bot_id, stored, "timeout", f"no answer in the {left:.1f} s left")
                continue
            except OfferFailed as exc:
                self._not_streamed(bot_id, stored, exc.reason, f"{type(exc).__name__}: {exc}")
                continue
            except Exception as exc:  # the stream sends it after the agent's last event instead
                self._not_streamed(bot_id, stored, "error", f"{type(exc).__name__}: {exc}")
                continue
            await self._store.streamed(view.meeting_id, stored.id, datetime.now(UTC))

    def _not_streamed(
        self, bot_id: uuid.UUID, stored: StoredAction, reason: OfferFailure, why: str
    ) -> None:
        self._metrics.stream_offers_failed.labels(reason).inc()
        logger.info(
            "action not streamed by the agent; the stream sends it after the agent's end",
            extra={"bot_id": str(bot_id), "action_id": stored.id, "reason": reason, "error": why},
        )

    async def _detect(self, view: MeetingView, window: Window) -> Detection:
        async with self._database.reads() as session:
            prompt = await resolve(session, view.workspace_id, view.prompt_version_id)
        context = await self._store.context(view)
        request = DetectionRequest(window.lines, context, prompt.instructions)
        messages = build_messages(request)  # once per window: budgeted, then sent on each try
        budget = self._budgets.of(view.workspace_id)
        estimate = self._estimate(messages)
        error: BaseException = ChatUnavailable("no try made")
        for attempt in range(self.options.window_attempts):
            if attempt:
                delay = min(self.options.retry_max, self.options.retry_base * 2 ** (attempt - 1))
                self._metrics.retries.inc()
                await self._pause(delay)
            while (wait := budget.wait_seconds(estimate)) > 0:
                self._metrics.budget_waits.inc()
                await self._pause(wait)
            entry = budget.spend(estimate)
            self._metrics.calls.inc()
            try:
                detection = await self._call(request, messages, prompt.model)
            except TimeoutError:
                error = ChatUnavailable(f"no answer within {self.options.window_timeout} s")
                continue
            except ChatUnavailable as exc:
                error = exc
                continue
            except ChatAnswerInvalid as exc:
                self._metrics.invalid_answers.inc()
                raise _WindowFailed("invalid_answer", exc, prompt.model) from exc
            except ChatError as exc:
                raise _WindowFailed("error", exc, prompt.model) from exc
            budget.settle(entry, detection.total_tokens)
            self._metrics.tokens.inc(detection.total_tokens)
            self._dropped(view, detection)
            self._metrics.call_seconds.observe(detection.seconds)
            return detection
        raise _WindowFailed("unavailable", error, prompt.model)

    def _dropped(self, view: MeetingView, detection: Detection) -> None:
        """Count and log the answer's items that did not become actions, each with why."""
        if not detection.drops:
            return
        for drop in detection.drops:
            self._metrics.items_dropped.labels(drop.reason).inc()
        logger.info(
            "answer items dropped",
            extra={
                "meeting_id": view.meeting_id,
                "bot_id": str(view.bot_id),
                "drops": [f"{drop.reason}: {drop.text}" for drop in detection.drops],
            },
        )

    async def _call(
        self, request: DetectionRequest, messages: list[ChatMessage], model: str | None
    ) -> Detection:
        """One try of ``messages`` within ``window_timeout`` by ``model``; a stop abandons it.

        ``messages`` are ``request``'s, built once for the window. A stop raises :class:`Halted`.
        No transaction is open during the call, so abandoning it loses nothing: the window is
        analysed again by the meeting's next owner.
        """
        return await unless_halted(
            asyncio.wait_for(
                detect_actions(
                    self._chat,
                    request,
                    max_tokens=self.options.max_tokens,
                    model=model,
                    messages=messages,
                ),
                self.options.window_timeout,
            ),
            self._halt,
            name="action-detection-call",
        )

    def _estimate(self, messages: list[ChatMessage]) -> int:
        """Tokens a call may cost before the server counts them (4 characters a token).

        Counted on the messages the call sends (instructions, worked examples, the window),
        so a longer prompt is budgeted as what it is.
        """
        chars = sum(len(message.content) + 8 for message in messages)
        return chars // 4 + self.options.max_tokens

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds`` unless the worker stops first (then :class:`Halted`)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._halt.wait(), seconds)
        if self._halt.is_set():
            raise Halted
