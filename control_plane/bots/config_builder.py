"""Building the ``BotConfig`` a launched bot receives: one builder, named steps.

A config starts from the meeting row (platform, URL, settings) and this control plane's
``control_plane_url``; named steps then fill in what other parts own. The app lists the steps
once (``control_plane.app.bot_config_steps``):

* ``zoom_obf_token`` — a network step: a zoom bot's OBF token, its given one (stored sealed) or
  one minted from its stored Zoom connection;
* ``transcription_models`` — the Whisper models the bots run;
* ``agent_token`` — a local agent's token, minted into its config (its digest stored); for a
  bot machine ``agent_link`` instead: its link row only (its bootstrap exchange mints the token).

Network steps run first, concurrently per bot and outside any transaction. The transaction
steps then run for a whole batch in ONE transaction that the meetings are attached to, so what
they store (the agent token's digest) is written in one commit before any launch instead of one
transaction per bot (bench/api.py: the per-bot transactions were a fifth of a creation's
database round trips).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from agent.contracts.bot_config import BotConfig, BotSettings, Platform
from control_plane.db.engine import Database
from control_plane.db.models.bot import Meeting
from control_plane.errors import DomainError
from control_plane.launchers.base import LaunchError

log = logging.getLogger(__name__)

NetworkRun = Callable[[Meeting, BotConfig], Awaitable[BotConfig]]
TransactionRun = Callable[[AsyncSession, Meeting, BotConfig], Awaitable[BotConfig]]
TransactionPrepare = Callable[[AsyncSession, Sequence[Meeting]], Awaitable[None]]


@dataclass(frozen=True)
class NetworkStep:
    """A step that may do network I/O: runs before the batch transaction, with no session.

    Attributes:
        name: What it fills in (for logs and for readers).
        run: ``config = await run(meeting, config)``; raising fails this bot's launch alone.
    """

    name: str
    run: NetworkRun


@dataclass(frozen=True)
class TransactionStep:
    """A step that runs inside the batch transaction (no network I/O, no commit).

    Attributes:
        name: What it fills in.
        run: ``config = await run(session, meeting, config)``; ``meeting`` is attached to
            ``session``; what the step adds to the session commits with the batch. Raising
            fails this bot's launch alone (rows it added before raising still commit).
        prepare: Optional ``await prepare(session, meetings)``, once per batch before any
            ``run``: one look-up for the whole batch instead of one round trip per bot (a
            per-bot ``session.get`` also flushed the previous bot's pending row, so each bot
            cost two round trips). Raising fails the whole batch's configs.
    """

    name: str
    run: TransactionRun
    prepare: TransactionPrepare | None = None

    async def prepare_batch(self, session: AsyncSession, meetings: Sequence[Meeting]) -> None:
        """Run :attr:`prepare` (when there is one) for ``meetings``, all attached to ``session``."""
        if self.prepare is not None and meetings:
            await self.prepare(session, meetings)


@dataclass(frozen=True)
class BotConfigBuilder:
    """Builds ``BotConfig``s from meeting rows through the listed steps.

    Args:
        database: Where the batch transaction runs.
        control_plane_url: The base URL the agent reaches this control plane at.
        network_steps: Run first, in order, outside any transaction.
        transaction_steps: Then, in order, inside the batch transaction.
    """

    database: Database
    control_plane_url: str
    network_steps: Sequence[NetworkStep] = field(default_factory=tuple)
    transaction_steps: Sequence[TransactionStep] = field(default_factory=tuple)

    def base(self, meeting: Meeting) -> BotConfig:
        """The config of ``meeting`` before any step."""
        return BotConfig(
            bot_id=meeting.bot_id,
            workspace_id=meeting.workspace_id,
            meeting_id=meeting.id,
            platform=Platform(meeting.platform),
            meeting_url=meeting.constructed_meeting_url,
            native_meeting_id=meeting.native_meeting_id,
            passcode=meeting.passcode,
            settings=BotSettings.model_validate(meeting.settings),
            control_plane_url=self.control_plane_url,
        )

    async def _network(self, meeting: Meeting) -> BotConfig:
        config = self.base(meeting)
        for step in self.network_steps:
            config = await step.run(meeting, config)
        return config

    async def _in_transaction(
        self, session: AsyncSession, meeting: Meeting, config: BotConfig
    ) -> BotConfig:
        for step in self.transaction_steps:
            config = await step.run(session, meeting, config)
        return config

    async def build(self, meeting: Meeting) -> BotConfig:
        """The config of one meeting, in a transaction of its own.

        Raises:
            Exception: Whatever a step raised (``LaunchError``, ``DomainError``, …).
        """
        config = await self._network(meeting)
        async with self.database.sessions.begin() as session:
            session.add(meeting)
            for step in self.transaction_steps:
                await step.prepare_batch(session, [meeting])
            return await self._in_transaction(session, meeting, config)

    async def build_batch(self, meetings: Sequence[Meeting]) -> dict[int, BotConfig | None]:
        """The configs of a batch by meeting id; None for a bot whose config failed (logged).

        One bot's failure never stops the batch.
        """
        async with asyncio.TaskGroup() as group:
            prepared = [group.create_task(_outcome(self._network(m))) for m in meetings]
        configs: dict[int, BotConfig | None] = {}
        ready: list[tuple[Meeting, BotConfig]] = []
        for meeting, task in zip(meetings, prepared, strict=True):
            config = task.result()
            if isinstance(config, BaseException):
                log_launch_error(meeting, config)
                configs[meeting.id] = None
            else:
                ready.append((meeting, config))
        async with self.database.sessions.begin() as session:
            for meeting, _ in ready:
                session.add(meeting)
            for step in self.transaction_steps:
                await step.prepare_batch(session, [meeting for meeting, _ in ready])
            for meeting, config in ready:
                try:
                    configs[meeting.id] = await self._in_transaction(session, meeting, config)
                except Exception as exc:  # one broken config must not stop the batch
                    log_launch_error(meeting, exc)
                    configs[meeting.id] = None
        return configs


CONFIG_BUILDER = web.AppKey("bot_config_builder", BotConfigBuilder)
"""The application's config builder (the scheduler's; tests and benchmarks build with it too)."""


async def _outcome(work: Awaitable[BotConfig]) -> BotConfig | BaseException:
    """``await work``, with an exception returned instead of raised.

    One bot's failure must not cancel its batch's TaskGroup.
    """
    try:
        return await work
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return exc


# Longest status_detail kept from a launcher's error (a provider's message is a sentence).
_DETAIL_CHARS = 500


def launch_failure_detail(exc: BaseException) -> str:
    """The words a bot record shows for a failed launch (its ``status_detail``).

    A launcher's refusal (:class:`LaunchError`, e.g. EC2's ``InsufficientInstanceCapacity:
    …``) and a domain error (a Zoom token that could not be minted) are the user's to read,
    cut to 500 characters; anything else is a fault of ours, whose trace stays in the log.
    """
    if isinstance(exc, LaunchError | DomainError):
        return str(exc)[:_DETAIL_CHARS] or type(exc).__name__
    return "the launcher failed unexpectedly; the control plane's log has the error"


def log_launch_error(meeting: Meeting, exc: BaseException) -> None:
    """Log why a bot could not be launched: a warning for expected failures, else the trace."""
    fields = {"bot_id": str(meeting.bot_id), "meeting_id": meeting.id}
    if isinstance(exc, LaunchError | DomainError):
        # The reason is the launcher's (a cloud provider's error code and message).
        log.warning(
            "bot launch failed", extra={**fields, "error": type(exc).__name__, "reason": str(exc)}
        )
    else:
        log.error("bot launch crashed", extra=fields, exc_info=exc)
