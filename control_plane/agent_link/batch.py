"""One transaction for many link frames: the process's link batcher.

Every link's frames with effects (and the frames that only refresh ``last_seen_at``) are
stored through one :class:`FrameBatcher`. A link hands it a group (what it read since its last
group, in order) and waits; a writer takes the groups queued until the oldest of them is
``max_wait`` seconds old or ``max_frames`` frames are queued across links, whichever comes
first, and stores them in one transaction
(:func:`~control_plane.agent_link.frames.store_batch`). The link acks its frames only once the
answer came, i.e. after the commit, so an agent never forgets a frame that is not stored.

Flushing by age as well as by size bounds a frame's wait before its transaction starts, and it
keeps the transactions few: a writer that committed as soon as anything was queued made one
small transaction (and its round trips to the database, the replica's largest CPU cost) for
every few frames. One writer gathers at a time; up to ``writers`` gathered batches commit at
once, so the next batch gathers while the last one commits.

A link has at most one group in flight, so its frames are stored in the order it sent them
even with several writers. When a batch's transaction fails, nothing of it was written; its
groups are then stored again one frame per transaction, so one link's bad frame (or a database
hiccup) does not cost the other links their acks: each group answers the outcomes of the
frames stored before its first failure and that failure (the link closes and its agent resends
the rest later). A frame already stored by a concurrent transaction (a resend racing its
original on another connection) counts as a duplicate: its receipt's insert waits for that
commit and inserts nothing; receipts keep every frame exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiohttp import web

from agent.contracts.link import AgentFrame
from control_plane.agent_link.frames import FrameStore, store_batch
from control_plane.db.engine import Database

logger = logging.getLogger(__name__)

Entry = tuple[FrameStore, AgentFrame]


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """What became of a group of frames.

    Attributes:
        outcomes: One per frame stored, from the first (``stored``, ``duplicate``, ``touched``).
        error: Why the frames after those were not stored (None: all were).
        settled_at: ``time.perf_counter()`` when the outcome was known (after the commit), so
            the link can time its acks from there.
    """

    outcomes: list[str]
    error: BaseException | None = None
    settled_at: float = field(default_factory=time.perf_counter)


StageObserver = Callable[[str, float], None]
"""Told ``(stage, seconds)`` once per committed batch: ``wait`` (its oldest group queued → the
transaction begins) and ``transaction`` (begin → commit)."""


@dataclass(slots=True)
class _Group:
    entries: Sequence[Entry]
    queued_at: float = field(default_factory=time.perf_counter)
    done: asyncio.Future[GroupOutcome] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def settle(self, outcome: GroupOutcome) -> None:
        if not self.done.done():  # the link may have gone (its wait was cancelled)
            self.done.set_result(outcome)


class FrameBatcher:
    """Stores groups of link frames, many links per transaction; see the module docstring.

    Args:
        db: The control plane's database.
        max_frames: Most frames in one transaction (a group is never split, so one group
            larger than this goes alone).
        writers: Transactions in flight at once.
        max_wait: Seconds the oldest queued group waits for others before its transaction
            starts (0: a free writer takes what is queued at once).
        observe: Told each committed batch's stage times (:data:`StageObserver`).
    """

    def __init__(
        self,
        db: Database,
        *,
        max_frames: int = 500,
        writers: int = 2,
        max_wait: float = 0.0,
        observe: StageObserver | None = None,
    ) -> None:
        self._db = db
        self._observe = observe
        self._max_frames = max_frames
        self._writers = writers
        self._max_wait = max_wait
        self._queue: asyncio.Queue[_Group] = asyncio.Queue()
        self._queued_frames = 0
        self._full = asyncio.Event()  # max_frames are queued: the gathering writer goes now
        self._gathering = asyncio.Lock()  # one writer gathers a batch at a time
        self._tasks: list[asyncio.Task[None]] = []
        self.batches = 0  # transactions committed (batches of several groups included)

    def start(self) -> None:
        """Start the writer tasks (owned here; :meth:`aclose` ends them)."""
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._write(), name=f"link-batch-writer-{n}")
                for n in range(self._writers)
            ]

    async def aclose(self) -> None:
        """Stop the writers; groups still queued are answered with an error (not stored)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        while not self._queue.empty():
            self._queue.get_nowait().settle(GroupOutcome([], ConnectionError("shutting down")))
        self._queued_frames = 0
        self._full.clear()

    async def store(self, entries: Sequence[Entry]) -> GroupOutcome:
        """Store one link's frames (in order) with other links' in a shared transaction.

        Returns once the transaction committed (or failed): the outcome per stored frame, and
        the error that stopped the rest, if any.
        """
        if not self._tasks:
            raise RuntimeError("the link batcher is not running")
        group = _Group(entries)
        self._queue.put_nowait(group)
        self._queued_frames += len(entries)
        if self._queued_frames >= self._max_frames:
            self._full.set()
        return await group.done

    async def _write(self) -> None:
        while True:
            async with self._gathering:
                groups = await self._gather()
            await self._commit(groups)

    async def _gather(self) -> list[_Group]:
        """The next batch: queued groups until the oldest is ``max_wait`` old or it is full."""
        first = await self._queue.get()
        if self._max_wait > 0 and self._queued_frames < self._max_frames:
            remaining = first.queued_at + self._max_wait - time.perf_counter()
            if remaining > 0:
                try:
                    await asyncio.wait_for(self._full.wait(), remaining)
                except TimeoutError:
                    pass
                except asyncio.CancelledError:  # shutting down: the group in hand is answered
                    first.settle(GroupOutcome([], ConnectionError("shutting down")))
                    raise
        groups = [first]
        count = len(first.entries)
        while count < self._max_frames and not self._queue.empty():
            group = self._queue.get_nowait()
            groups.append(group)
            count += len(group.entries)
        self._queued_frames -= count
        if self._queued_frames < self._max_frames:
            self._full.clear()
        return groups

    async def _commit(self, groups: list[_Group]) -> None:
        now = datetime.now(UTC)
        began = time.perf_counter()
        try:
            async with self._db.sessions.begin() as session:
                outcomes = await store_batch(
                    session, [entry for group in groups for entry in group.entries], now
                )
        except Exception:  # nothing was written; each frame is retried alone
            logger.warning(
                "agent link batch not stored; storing its frames one by one",
                extra={"groups": len(groups), "frames": sum(len(g.entries) for g in groups)},
                exc_info=True,
            )
            for group in groups:
                group.settle(await self._one_by_one(group.entries))
            return
        self.batches += 1
        if self._observe is not None:
            self._observe("wait", began - min(group.queued_at for group in groups))
            self._observe("transaction", time.perf_counter() - began)
        taken = 0
        for group in groups:
            group.settle(GroupOutcome(outcomes[taken : taken + len(group.entries)]))
            taken += len(group.entries)

    async def _one_by_one(self, entries: Sequence[Entry]) -> GroupOutcome:
        outcomes: list[str] = []
        for entry in entries:
            try:
                async with self._db.sessions.begin() as session:
                    outcome = await store_batch(session, [entry], datetime.now(UTC))
                outcomes.extend(outcome)  # committed
            except Exception as exc:  # the link closes; its agent resends the rest
                return GroupOutcome(outcomes, exc)
        return GroupOutcome(outcomes)


FRAME_BATCHER = web.AppKey("frame_batcher", FrameBatcher)
"""The process's link batcher (started and closed with the agent link's context)."""
