"""Stream-relay benchmark: agent stream event → SSE client latency through the control plane.

Runs the real control-plane app on loopback (SQLite, or ``--database-url`` PostgreSQL; with
``--replicas 2`` a second replica on the same database serves the clients, so every event
crosses LISTEN/NOTIFY), launches ``--bots`` bots, links one real agent link client
(``agent.link.client.LinkClient`` with its stream log) per bot to the first replica and opens
one SSE client per bot on ``GET /api/v1/bots/{bot_id}/stream``. Each agent logs ``--rate``
events a second of ``--bytes`` bytes (a partial transcript segment's size) for ``--seconds``.
Prints one JSON line: events delivered, p50/p95/p99/max latency from the agent's log append to
the client's read, CPU seconds and the load average. Agents, replicas and clients share this
one process (and its event loop), so the figures include their contention.

Usage: ``.venv/bin/python bench/stream_relay.py [--bots 50] [--rate 2] [--seconds 15]
[--bytes 400] [--database-url postgresql+asyncpg://… --replicas 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import aiohttp
from aiohttp import web

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent.contracts.bot_config import BotSettings  # noqa: E402 — after the path set-up above
from agent.contracts.link import Register  # noqa: E402
from agent.contracts.status import BotStatus  # noqa: E402
from agent.link.client import LinkClient, LinkTiming, agent_link_url  # noqa: E402
from agent.link.outbox import Outbox  # noqa: E402
from agent.sse.log import EventLog  # noqa: E402
from bench.stats import free_port, percentile  # noqa: E402
from control_plane.agent_hub.keys import STREAM_SIGNER  # noqa: E402
from control_plane.app import create_app  # noqa: E402
from control_plane.auth.provisioning import create_workspace  # noqa: E402
from control_plane.bots.config_builder import CONFIG_BUILDER  # noqa: E402
from control_plane.bots.stream import stream_path  # noqa: E402
from control_plane.db.engine import DB  # noqa: E402
from control_plane.db.migrate import upgrade  # noqa: E402
from control_plane.db.models.bot import Meeting  # noqa: E402
from control_plane.launchers.memory import MemoryLauncher  # noqa: E402
from control_plane.settings import Settings  # noqa: E402


async def _serve(settings: Settings) -> tuple[web.Application, web.AppRunner]:
    app = create_app(settings, launcher=MemoryLauncher())
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", settings.port).start()
    return app, runner


async def _bots(app: web.Application, count: int) -> list[tuple[uuid.UUID, str]]:
    async with app[DB].sessions.begin() as session:
        workspace = await create_workspace(session, "Bench")
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
        bots.append((meeting.bot_id, config.agent_token))
    return bots


def _register(log: EventLog) -> Callable[[], Register]:
    return lambda: Register(agent_version="bench", stream_seq=log.last_id)


async def _read(
    http: aiohttp.ClientSession, url: str, token: str, latencies: list[float], stop: asyncio.Event
) -> int:
    received = 0
    async with http.get(url, headers={"Authorization": f"Bearer {token}"}) as response:
        assert response.status == 200, await response.text()
        while not stop.is_set():
            raw = await response.content.readline()
            if not raw:
                break
            line = raw.decode()
            if line.startswith("data: "):
                sent = json.loads(line[6:])["sent"]
                latencies.append((time.perf_counter() - sent) * 1000)
                received += 1
    return received


async def _run(args: argparse.Namespace, tmp: Path) -> None:
    database_url = args.database_url or f"sqlite+aiosqlite:///{tmp / 'bench.db'}"
    await upgrade(database_url)
    replicas = []
    for _ in range(args.replicas):
        port = free_port()
        settings = Settings(
            database_url=database_url,
            data_dir=tmp / "data",
            launcher="memory",
            port=port,
            public_url=f"http://127.0.0.1:{port}",
            heartbeat_timeout_seconds=3600,
            agent_connect_timeout_seconds=3600,
            stream_ping_seconds=15,
        )
        replicas.append(await _serve(settings))
    holder, reader_app = replicas[0][0], replicas[-1][0]
    bots = await _bots(holder, args.bots)
    base_a = f"http://127.0.0.1:{replicas[0][1].addresses[0][1]}"
    base_b = f"http://127.0.0.1:{replicas[-1][1].addresses[0][1]}"
    signer = reader_app[STREAM_SIGNER]
    logs: list[EventLog] = []
    links: list[LinkClient] = []
    for number, (bot_id, token) in enumerate(bots):
        log = EventLog()
        link = LinkClient(
            agent_link_url(base_a, str(bot_id)),
            token,
            Outbox(tmp / "outboxes" / f"{number}.sqlite3"),
            register=_register(log),
            timing=LinkTiming(heartbeat_interval=5.0),
            stream=log,
        )
        link.start()
        logs.append(log)
        links.append(link)
    await asyncio.gather(*(asyncio.wait_for(link.connected.wait(), 30) for link in links))
    latencies: list[float] = []
    stop = asyncio.Event()
    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as http:
        readers = [
            asyncio.create_task(
                _read(
                    http,
                    base_b + stream_path(bot_id),
                    signer.mint(bot_id, 3600).token,
                    latencies,
                    stop,
                )
            )
            for bot_id, _ in bots
        ]
        await asyncio.sleep(2.0)  # every client subscribed (and, across replicas, fed)
        text = "x" * args.bytes

        async def speak(log: EventLog) -> int:
            count = 0
            interval = 1.0 / args.rate
            deadline = time.perf_counter() + args.seconds
            while time.perf_counter() < deadline:
                payload = {"id": f"s{count}", "text": text, "sent": time.perf_counter()}
                await log.append("transcript_segment", payload)
                count += 1
                await asyncio.sleep(interval)
            return count

        started = time.perf_counter()
        sent = sum(await asyncio.gather(*(speak(log) for log in logs)))
        await asyncio.sleep(2.0)  # the last events arrive
        elapsed = time.perf_counter() - started
        stop.set()
        for log in logs:
            await log.close()
        for link in links:
            await link.finish_stream(10.0)
        received = sum(await asyncio.gather(*readers))
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    for link in links:
        await link.close()
    for _, runner in replicas:
        await runner.cleanup()
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    print(
        json.dumps(
            {
                "figure": "stream_relay_latency_ms",
                "database": database_url.split(":", 1)[0],
                "replicas": args.replicas,
                "across_replicas": args.replicas > 1,
                "bots": args.bots,
                "events_per_second": round(sent / args.seconds, 1),
                "event_bytes": args.bytes,
                "sent": sent,
                "received": received,
                "p50": round(percentile(latencies, 0.5), 2),
                "p95": round(percentile(latencies, 0.95), 2),
                "p99": round(percentile(latencies, 0.99), 2),
                "max": round(max(latencies, default=0.0), 2),
                "cpu_s": round(cpu, 1),
                "wall_s": round(elapsed, 1),
                "loadavg_1m": round(os.getloadavg()[0], 2),
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=50)
    parser.add_argument("--rate", type=float, default=2.0)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--bytes", type=int, default=400)
    parser.add_argument("--replicas", type=int, default=1, choices=(1, 2))
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    if args.replicas > 1 and not args.database_url.startswith("postgresql"):
        parser.error("--replicas 2 needs a PostgreSQL --database-url")
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(args, Path(tmp)))


if __name__ == "__main__":
    main()
