"""Fleet benchmark: N simulated agents on the real link protocol against control-plane replicas.

Every agent is the real link client (:class:`agent.link.client.LinkClient` with the SQL of its
:class:`agent.link.outbox.Outbox`, in memory and without worker threads, and its stream
:class:`agent.sse.log.EventLog`), all on this process's one event loop, with no browser and no
whisper behind it: it sends a ``transcript_segment`` every 3-5 s, a
``participants`` change every 20-40 s, a partial transcript to its stream (relayed, not stored)
every second, heartbeats every 5 s (the client's own), and answers every command it is sent.
The control plane runs as ``--replicas`` separate processes (``python -m control_plane``, the
``memory`` launcher) on a fresh PostgreSQL database, so each has its own CPU; with two, the
agents reach them through a round-robin TCP balancer in this process, and ``--kill-at`` seconds
into the measurement one replica is killed (SIGKILL): its agents reconnect to the other.
``--commands-per-second`` ``POST /api/v1/bots/{id}/hand`` requests go to the replicas in turn.

Prints one JSON line: bots held (links up at the end), frames stored per second (outboxed
frames acked, i.e. committed), frame-to-stored p50/p99 (outbox put → ack, ms), heartbeats per
second, CPU seconds per stored frame of every replica and of this process, the control
plane's part by stage (``read_to_commit`` and its ``wait``, ``transaction`` and ``ack``, as
bucket bounds of ``meetbot_agent_link_stage_seconds``), this process's own pauses (event-loop
lag and garbage collections: a pause here delays every frame in flight as a slow replica
would), and from the database afterwards: losses (frames sent, no longer in their agent's
outbox, but without a receipt) and duplicates (webhook events beyond one per joined participant
per frame), both of which must be 0, frames still pending when the drain's minute ran out, and
the load average.

On a small machine, pin the replicas and the agents to different CPUs (``--replica-cpus 1
--fleet-cpus 0``): otherwise the simulated fleet takes the replicas' CPU and the figures
measure the simulator. PostgreSQL is not pinned (pin it with ``taskset`` to give a
replica a core of its own). ``replica_cpu_wait_s`` says how long the
replicas were ready to run but had no CPU (the machine's other work).

Usage: ``.venv/bin/python bench/fleet.py --database-url postgresql+asyncpg://… [--agents 200]
[--replicas 1|2] [--seconds 60] [--kill-at 30] [--replica-cpus 1 --fleet-cpus 0]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from aiohttp import web
from sqlalchemy import func, select, text

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent.contracts.bot_config import BotSettings  # noqa: E402 — after the path set-up above
from agent.contracts.link import (  # noqa: E402
    Command,
    CommandResult,
    ParticipantsEvent,
    Register,
    Segment,
    TranscriptSegmentEvent,
)
from agent.contracts.status import BotStatus  # noqa: E402
from agent.link.client import LinkClient, LinkTiming, agent_link_url  # noqa: E402
from agent.link.outbox import Outbox, OutboxItem  # noqa: E402
from agent.sse.log import EventLog  # noqa: E402
from bench.api import fresh_database  # noqa: E402
from bench.stats import free_port, percentile  # noqa: E402
from control_plane.api.server import YOUNG_GC_THRESHOLD  # noqa: E402
from control_plane.app import create_app  # noqa: E402
from control_plane.auth.provisioning import (  # noqa: E402
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.bots.config_builder import CONFIG_BUILDER  # noqa: E402
from control_plane.db.engine import DB, create_database  # noqa: E402
from control_plane.db.migrate import upgrade  # noqa: E402
from control_plane.db.models.agent_link import AgentFrameReceipt  # noqa: E402
from control_plane.db.models.bot import Meeting  # noqa: E402
from control_plane.db.models.webhook import WebhookMessage  # noqa: E402
from control_plane.enums import Role  # noqa: E402
from control_plane.launchers.memory import MemoryLauncher  # noqa: E402
from control_plane.settings import Settings  # noqa: E402

_TEXT = "and then we agreed that the quarterly numbers go out on friday after the review"


class Stalls:
    """The simulator's own pauses: its event loop's lateness and its garbage collections.

    A frame's time to its ack is measured in this process, so a pause here (a full collection
    over a thousand agents' objects, a long callback) lands on the frames in flight as if the
    control plane had been slow. Reported beside the latencies to tell the two apart.
    """

    def __init__(self, tick: float = 0.005) -> None:
        self._tick = tick
        self.lags_ms: list[float] = []
        self.gc_ms: list[float] = []
        self._gc_started = 0.0

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        """``gc.callbacks`` entry: times every collection."""
        del info
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_ms.append((time.perf_counter() - self._gc_started) * 1000)

    async def watch(self) -> None:
        """Sleep ``tick`` seconds again and again, noting how late each wake-up came."""
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self._tick)
            self.lags_ms.append((loop.time() - before - self._tick) * 1000)

    def clear(self) -> None:
        """Forget what was noted so far (the warm-up's)."""
        self.lags_ms.clear()
        self.gc_ms.clear()

    def figures(self) -> dict[str, float | None]:
        """Loop lag p99 / max and collection time total / max, in ms."""
        lags = self.lags_ms
        return {
            "agents_loop_lag_ms_p99": round(percentile(lags, 0.99), 1) if lags else None,
            "agents_loop_lag_ms_max": round(max(lags), 1) if lags else None,
            "agents_gc_ms_total": round(sum(self.gc_ms), 1),
            "agents_gc_ms_max": round(max(self.gc_ms, default=0.0), 1),
        }


class TimedOutbox(Outbox):
    """The real outbox's SQL in an in-memory SQLite database, run inline, timing each frame.

    An agent has its own machine and its outbox's worker thread costs it nothing; a thousand
    of them on one simulator core would spend it on thread hand-offs (``asyncio.to_thread`` for
    every put, ack and count) instead of speaking the link. The statements and their order are
    the real :class:`~agent.link.outbox.Outbox`'s, so what is resent after a reconnect is too.
    """

    def __init__(self, latencies: list[float]) -> None:
        super().__init__(Path(":memory:"))
        self._queued_at: dict[str, float] = {}
        self._latencies = latencies
        self.acked = 0

    async def put(self, frame_id: str, body: str) -> None:
        """Store the frame and note the time (see :meth:`Outbox.put`)."""
        self._queued_at[frame_id] = time.perf_counter()
        self._put(frame_id, body)

    async def ack(self, frame_id: str) -> bool:
        """Forget the frame and note its frame-to-stored time (see :meth:`Outbox.ack`)."""
        queued = self._queued_at.pop(frame_id, None)
        if queued is not None:
            self._latencies.append((time.perf_counter() - queued) * 1000)
            self.acked += 1
        return self._ack(frame_id)

    async def pending(self, after_seq: int = 0, limit: int = 100) -> list[OutboxItem]:
        """See :meth:`Outbox.pending`."""
        return self._pending(after_seq, limit)

    async def count(self) -> int:
        """See :meth:`Outbox.count`."""
        return self._count()


class SimAgent:
    """One bot's agent: the real link client fed with a meeting's worth of frames."""

    def __init__(self, bot_id: str, token: str, url: str, latencies: list[float]):
        self.bot_id = bot_id
        self.log = EventLog()
        self.outbox = TimedOutbox(latencies)
        self.client = LinkClient(
            agent_link_url(url, bot_id),
            token,
            self.outbox,
            self._register,
            LinkTiming(heartbeat_interval=5.0, reconnect_min=0.5, reconnect_max=5.0),
            stream=self.log,
        )
        self.stored_ids: list[str] = []  # frames the control plane must hold a receipt of
        self.joins = 0  # participant.joined webhook events the control plane must emit
        self.commands = 0
        self._people = [f"Person {n}" for n in range(3)]
        self._segments = 0

    def _register(self) -> Register:
        return Register(agent_version="bench-fleet", stream_seq=self.log.last_id)

    async def _segment(self) -> None:
        now = datetime.now(UTC)
        self._segments += 1
        n = self._segments
        frame = TranscriptSegmentEvent(
            segment=Segment(
                id=f"s{n}",
                start=n * 4.0,
                end=n * 4.0 + 3.5,
                absolute_start_time=now,
                absolute_end_time=now,
                text=_TEXT,
                speaker=random.choice(self._people),
            )
        )
        self.stored_ids.append(frame.id)
        await self.client.send(frame)

    async def _participants(self) -> None:
        joined = [f"Guest {uuid.uuid4().hex[:6]}"]
        left = [self._people.pop(0)] if len(self._people) > 3 else []
        self._people.extend(joined)
        frame = ParticipantsEvent(participants=list(self._people), joined=joined, left=left)
        self.stored_ids.append(frame.id)
        self.joins += 1
        await self.client.send(frame)

    async def talk(self, until: float) -> None:
        """Send the meeting's frames until ``until`` (loop time)."""
        loop = asyncio.get_running_loop()
        next_segment = loop.time() + random.uniform(0, 4)
        next_people = loop.time() + random.uniform(5, 40)
        partial = 0
        # Real agents are separate machines with unrelated clocks: each starts its second at
        # its own phase, or all thousand would speak in the same millisecond every second
        # (a burst the simulator's one loop spends ~100 ms on, and the replica after it).
        await asyncio.sleep(random.uniform(0, 1.0))
        while loop.time() < until:
            await asyncio.sleep(1.0)
            partial += 1
            await self.log.append(
                "transcript_partial", {"text": _TEXT[: 20 + partial % 60], "n": partial}
            )
            now = loop.time()
            if now >= next_segment:
                await self._segment()
                next_segment = now + random.uniform(3, 5)
            if now >= next_people:
                await self._participants()
                next_people = now + random.uniform(20, 40)

    async def answer(self) -> None:
        """Answer every command at once (``hand`` is the only one the bench sends)."""
        while True:
            command: Command = await self.client.commands.get()
            self.commands += 1
            await self.client.send(CommandResult(ref_id=command.id, ok=True, result={}))


class Balancer:
    """Round-robin TCP balancer in front of the replicas; a refused backend is skipped."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self._turn = itertools.count()
        self._pipes: set[asyncio.Task[None]] = set()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Join one client connection to the next backend that accepts it."""
        start = next(self._turn)
        for step in range(len(self.backends)):
            port = self.backends[(start + step) % len(self.backends)]
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                continue
            pipes = [
                asyncio.create_task(self._pipe(reader, up_writer)),
                asyncio.create_task(self._pipe(up_reader, writer)),
            ]
            self._pipes.update(pipes)
            try:
                await asyncio.gather(*pipes)
            finally:
                self._pipes.difference_update(pipes)
            return
        writer.close()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _waited_seconds(pid: int) -> float:
    """Seconds the threads of ``pid`` waited runnable for a CPU (``/proc/…/schedstat``)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[1])
    return total / 1e9


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _seed(database_url: str, data: Path, count: int) -> tuple[str, list[tuple[str, str]]]:
    """Workspace, API key and ``count`` active bots with their agent tokens."""
    settings = Settings(database_url=database_url, data_dir=data, launcher="memory")
    app = create_app(settings, launcher=MemoryLauncher())
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        async with app[DB].sessions.begin() as session:
            user = await get_or_create_user(session, "fleet@example.org")
            workspace = await create_workspace(session, "Fleet")
            await add_member(session, workspace, user, Role.OWNER)
            issued = await issue_key(
                session, user=user, workspace_id=workspace.id, name="fleet", key_prefix="mbk"
            )
            meetings = [
                Meeting(
                    workspace_id=workspace.id,
                    platform="google_meet",
                    native_meeting_id="abc-defg-hij",
                    constructed_meeting_url="https://meet.google.com/abc-defg-hij",
                    status=BotStatus.ACTIVE.value,
                    settings=BotSettings().model_dump(mode="json"),
                )
                for _ in range(count)
            ]
            session.add_all(meetings)
        bots = []
        for meeting in meetings:
            config = await app[CONFIG_BUILDER].build(meeting)
            assert config.agent_token is not None
            bots.append((str(meeting.bot_id), config.agent_token))
        return issued.secret, bots
    finally:
        await runner.cleanup()


def _cpus(text: str) -> set[int]:
    """``"0"``, ``"0,1"`` or ``"0-1"`` as a set of CPU numbers (empty text: no pinning)."""
    cpus: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def _replica(
    database_url: str, data: Path, port: int, log: Path, cpus: set[int]
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "MEETBOT_DATABASE_URL": database_url,
        "MEETBOT_DATA_DIR": str(data),
        "MEETBOT_LAUNCHER": "memory",
        "MEETBOT_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "MEETBOT_LOG_LEVEL": "WARNING",
        "MEETBOT_RATE_LIMIT_PER_SECOND": "100000",
        "MEETBOT_RATE_LIMIT_BURST": "100000",
        "MEETBOT_ADDRESS_RATE_LIMIT_PER_SECOND": "100000",
        "MEETBOT_ADDRESS_RATE_LIMIT_BURST": "100000",
    }
    # taskset pins the replica before Python starts, so every thread it makes inherits the CPUs.
    pin = ["taskset", "-c", ",".join(map(str, sorted(cpus)))] if cpus else []
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603 -- our own interpreter and arguments
            [
                *pin,
                sys.executable,
                "-m",
                "control_plane",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def _wait_up(http: aiohttp.ClientSession, port: int) -> None:
    for _ in range(600):
        with contextlib.suppress(aiohttp.ClientError, OSError):
            async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                if response.status < 500:
                    return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"replica on port {port} did not come up")


Buckets = dict[str, dict[float, float]]
"""Histogram buckets by figure (``read_to_commit``, or a stage of it): upper bound → count."""

_HISTOGRAMS = {
    "meetbot_agent_frame_store_seconds_bucket": "read_to_commit",
    "meetbot_agent_link_stage_seconds_bucket": "stage",
}


def _parse_buckets(text: str, into: Buckets) -> None:
    """Add the link's histograms of one ``/metrics`` page to ``into`` (by figure)."""
    for line in text.splitlines():
        name, brace, rest = line.partition("{")
        figure = _HISTOGRAMS.get(name)
        if not brace or figure is None:
            continue
        labels_text, _, count = rest.rpartition("} ")
        labels = {
            key: value.strip('"')
            for key, _, value in (part.partition("=") for part in labels_text.split(","))
        }
        if figure == "stage":
            figure = labels["stage"]
        bound = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
        buckets = into.setdefault(figure, {})
        buckets[bound] = buckets.get(bound, 0.0) + float(count)


async def _store_buckets(http: aiohttp.ClientSession, ports: list[int]) -> Buckets:
    """The link's storing histograms (read → commit, and its stages) summed over replicas."""
    buckets: Buckets = {}
    for port in ports:
        with contextlib.suppress(aiohttp.ClientError, OSError):
            async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
                _parse_buckets(await response.text(), buckets)
    return buckets


def _bucket_quantile(before: dict[float, float], after: dict[float, float], q: float) -> str:
    """The bucket holding quantile ``q`` of what happened in between, as ``<=N`` ms."""
    counts = sorted((bound, after[bound] - before.get(bound, 0.0)) for bound in after)
    if not counts or counts[-1][1] <= 0:
        return "none"
    for bound, cumulative in counts:
        if cumulative >= q * counts[-1][1]:
            return f"<={bound * 1000:g}" if bound != float("inf") else f">{counts[-2][0] * 1000:g}"
    return "none"


async def _commands(
    http: aiohttp.ClientSession,
    ports: list[int],
    key: str,
    bots: list[str],
    rate: float,
    statuses: list[int],
) -> None:
    turn = itertools.count()
    while rate > 0:
        await asyncio.sleep(1 / rate)
        n = next(turn)
        port = ports[n % len(ports)]
        with contextlib.suppress(aiohttp.ClientError, OSError):
            async with http.post(
                f"http://127.0.0.1:{port}/api/v1/bots/{random.choice(bots)}/hand",
                headers={"X-API-Key": key},
            ) as response:
                statuses.append(response.status)


async def _commits(database_url: str) -> int:
    """Transactions committed in the bench's database so far (``pg_stat_database``).

    Their count per stored frame says how well the frames are batched, whatever the machine's
    load (a backend reports its counts within a second or so: a close reading).
    """
    database = create_database(database_url)
    try:
        async with database.engine.connect() as conn:
            row = (
                await conn.execute(
                    text(
                        "SELECT xact_commit FROM pg_stat_database"
                        " WHERE datname = current_database()"
                    )
                )
            ).one()
    finally:
        await database.dispose()
    return int(row[0])


async def _check(database_url: str, agents: list[SimAgent]) -> dict[str, object]:
    """Losses and duplicates, from the database once every outbox drained."""
    database = create_database(database_url)
    try:
        async with database.sessions() as session:
            receipts = set(
                (await session.execute(select(AgentFrameReceipt.frame_id))).scalars().all()
            )
            joins = await session.scalar(
                select(func.count())
                .select_from(WebhookMessage)
                .where(WebhookMessage.event_type == "participant.joined")
            )
            ended = dict(
                (
                    await session.execute(
                        select(Meeting.status_reason, func.count())
                        .where(Meeting.status != BotStatus.ACTIVE.value)
                        .group_by(Meeting.status_reason)
                    )
                ).all()
            )
    finally:
        await database.dispose()
    sent = [frame_id for agent in agents for frame_id in agent.stored_ids]
    pending = {item.frame_id for agent in agents for item in await agent.outbox.pending(0, 10**6)}
    expected_joins = sum(agent.joins for agent in agents)
    return {
        "frames_sent": len(sent),
        # Still in an outbox when the drain's time ran out: not acked, so not lost (resent).
        "still_pending": sum(1 for frame_id in sent if frame_id in pending),
        "losses": sum(1 for frame_id in sent if frame_id not in receipts | pending),
        "duplicates": max(0, int(joins or 0) - expected_joins),
        "missing_webhook_events": max(0, expected_joins - int(joins or 0)),
        # Bots no longer active afterwards, by reason (the reaper's agent_lost, above all).
        "bots_ended": {str(reason): int(count) for reason, count in ended.items()},
    }


async def _run(args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    database_url, drop = await fresh_database(args.database_url, "fleet")
    replicas: list[subprocess.Popen[bytes]] = []
    try:
        await upgrade(database_url)
        data = tmp / "data"
        key, bots = await _seed(database_url, data, args.agents)
        ports = [free_port() for _ in range(args.replicas)]
        replicas = [
            _replica(database_url, data, port, tmp / f"replica{n}.log", _cpus(args.replica_cpus))
            for n, port in enumerate(ports)
        ]
        async with aiohttp.ClientSession() as http:
            for port in ports:
                await _wait_up(http, port)
            balancer = Balancer(ports)
            server = None
            if args.replicas > 1:
                entry = free_port()
                server = await asyncio.start_server(balancer.handle, "127.0.0.1", entry)
            else:
                entry = ports[0]
            latencies: list[float] = []
            agents = [
                SimAgent(bot_id, token, f"http://127.0.0.1:{entry}", latencies)
                for bot_id, token in bots
            ]
            stalls = Stalls()
            gc.callbacks.append(stalls.on_gc)
            watching = asyncio.create_task(stalls.watch())
            answering = [asyncio.create_task(agent.answer()) for agent in agents]
            for n, agent in enumerate(agents):  # connect at most ~100 agents a second
                agent.client.start()
                if n % 20 == 19:
                    await asyncio.sleep(0.2)
            await asyncio.gather(*(a.client.connected.wait() for a in agents))
            # The thousand agents stand for a thousand machines, each with its own small heap:
            # what they hold now is frozen out of this process's collections, and the young
            # generation is collected as in a replica (control_plane.api.server), so a full
            # collection over all of them does not pause every frame in flight (Stalls).
            gc.collect()
            gc.freeze()
            _, middle, old = gc.get_threshold()
            gc.set_threshold(YOUNG_GC_THRESHOLD, middle, old)
            loop = asyncio.get_running_loop()
            await asyncio.sleep(args.warmup)
            latencies.clear()
            stalls.clear()
            store_before = {port: await _store_buckets(http, [port]) for port in ports}
            acked_before = sum(agent.outbox.acked for agent in agents)
            commits_before = await _commits(database_url)
            cpu_before = [_cpu_seconds(p.pid) for p in replicas]
            waited_before = [_waited_seconds(p.pid) for p in replicas]
            self_waited_before = _waited_seconds(os.getpid())
            self_before = _self_cpu()
            started = loop.time()
            until = started + args.seconds
            talking = [asyncio.create_task(agent.talk(until)) for agent in agents]
            statuses: list[int] = []
            live_ports = list(ports)
            commanding = asyncio.create_task(
                _commands(
                    http,
                    live_ports,
                    key,
                    [a.bot_id for a in agents],
                    args.commands_per_second,
                    statuses,
                )
            )
            killed = None
            killed_cpu = killed_waited = 0.0
            if args.replicas > 1 and args.kill_at > 0:
                await asyncio.sleep(args.kill_at)
                killed_cpu = _cpu_seconds(replicas[0].pid) - cpu_before[0]
                killed_waited = _waited_seconds(replicas[0].pid) - waited_before[0]
                replicas[0].send_signal(signal.SIGKILL)
                killed = replicas[0].pid
                balancer.backends = ports[1:]
                live_ports.remove(ports[0])
            await asyncio.gather(*talking)
            elapsed = loop.time() - started
            acked = sum(agent.outbox.acked for agent in agents) - acked_before
            store_after = await _store_buckets(http, live_ports)  # the killed one's is gone
            store_start: Buckets = {}
            for port in live_ports:
                for figure, buckets in store_before[port].items():
                    start = store_start.setdefault(figure, {})
                    for bound, count in buckets.items():
                        start[bound] = start.get(bound, 0.0) + count
            cpu = [
                killed_cpu if p.pid == killed else _cpu_seconds(p.pid) - before
                for p, before in zip(replicas, cpu_before, strict=True)
            ]
            self_cpu = _self_cpu() - self_before
            commits = await _commits(database_url) - commits_before
            waited = [
                killed_waited if p.pid == killed else _waited_seconds(p.pid) - before
                for p, before in zip(replicas, waited_before, strict=True)
            ]
            self_waited = _waited_seconds(os.getpid()) - self_waited_before
            window_latencies = list(latencies)
            stall_figures = stalls.figures()
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
            gc.callbacks.remove(stalls.on_gc)
            held = sum(1 for agent in agents if agent.client.connected.is_set())
            connections = sum(agent.client.connections for agent in agents)
            commanding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await commanding
            drained = await asyncio.gather(*(a.client.drain(60) for a in agents))
            checked = await _check(database_url, agents)
            for task in answering:
                task.cancel()
            await asyncio.gather(*answering, return_exceptions=True)
            for agent in agents:
                await agent.client.close()
                agent.outbox.close()
            if server is not None:
                server.close()
        load = Path("/proc/loadavg").read_text().split()[:3]  # noqa: ASYNC240 -- procfs
        return {
            "figure": "fleet",
            "agents": args.agents,
            "replicas": args.replicas,
            "killed_one": killed is not None,
            "seconds": round(elapsed, 1),
            "bots_held": held,
            # Connections made beyond each agent's first (reconnects after a kill or a close).
            "reconnects": connections - len(agents),
            "frames_stored_per_s": round(acked / elapsed, 1),
            "stored_ms_p50": round(percentile(window_latencies, 0.5), 1)
            if window_latencies
            else None,
            "stored_ms_p99": round(percentile(window_latencies, 0.99), 1)
            if window_latencies
            else None,
            # The control plane's part alone: frame read on the link → commit (bucket bounds),
            # and its stages: a batch's wait for frames and its transaction, then the acks.
            **{
                f"{figure}_ms_{name}": _bucket_quantile(
                    store_start.get(figure, {}), store_after.get(figure, {}), q
                )
                for figure in ("read_to_commit", "wait", "transaction", "ack")
                for name, q in (("p50", 0.5), ("p99", 0.99))
            },
            "replica_cpu_s": [round(c, 1) for c in cpu],
            "cpu_ms_per_frame_replicas": round(sum(cpu) / max(acked, 1) * 1000, 2),
            # Every transaction of the window (the bench's few included) per frame stored.
            "db_commits_per_frame": round(commits / max(acked, 1), 3),
            "agents_process_cpu_s": round(self_cpu, 1),
            **stall_figures,
            # Time runnable but not running (the machine's other work had the CPUs).
            "replica_cpu_wait_s": [round(w, 1) for w in waited],
            "agents_process_cpu_wait_s": round(self_waited, 1),
            "commands": {str(s): statuses.count(s) for s in sorted(set(statuses))},
            "drained": sum(drained),
            **checked,
            "load": load,
            "replica_cpus": args.replica_cpus or "any",
            "fleet_cpus": args.fleet_cpus or "any",
        }
    finally:
        for process in replicas:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
        await drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("MEETBOT_TEST_POSTGRES_URL", ""))
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--replicas", type=int, default=1, choices=(1, 2))
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--kill-at", type=float, default=0.0)
    parser.add_argument("--commands-per-second", type=float, default=2.0)
    parser.add_argument(
        "--replica-cpus", default="", help="CPUs the replicas run on, as taskset -c takes them"
    )
    parser.add_argument(
        "--fleet-cpus", default="", help="CPUs this process (the simulated agents) runs on"
    )
    args = parser.parse_args()
    if args.fleet_cpus:
        # Before the event loop and its threads exist: they all inherit the set.
        os.sched_setaffinity(0, _cpus(args.fleet_cpus))
    if not args.database_url.startswith("postgresql"):
        parser.error("--database-url must be a PostgreSQL URL (or set MEETBOT_TEST_POSTGRES_URL)")
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(asyncio.run(_run(args, Path(tmp)))), flush=True)


if __name__ == "__main__":
    main()
