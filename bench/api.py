"""API throughput and latency at scale: bot creation and filtered meeting lists.

The real control-plane app (memory launcher) serves from its own process on loopback, over a
database seeded with ``--meetings`` (default 100,000) meetings of one workspace; this process
drives it with ``--concurrency`` concurrent HTTP clients and prints one JSON line per figure:

* ``api_create_bot`` — ``POST /api/v1/bots`` (google_meet, a fresh meeting id each): requests/s,
  p50/p99 latency in ms;
* ``api_list_meetings`` — ``GET /api/v1/meetings`` with one filter set per line (status;
  date window; name substring; bot_id; status + date window + offset): requests/s, p50/p99.
* ``api_mixed`` — ``--creators`` (8) clients creating bots while ``--listers`` (8) clients list
  ``GET /api/v1/meetings?limit=50`` as fast as they can, until ``--mixed-requests`` creations
  are done: one line for the creations and one for the lists (requests/s, p50/p99; the server
  CPU figure is per request of either kind). Goal (issue 18): creates ≥ 100/s with
  p99 ≤ 250 ms on SQLite, the same or better on PostgreSQL. The server reads the other
  ``MEETBOT_*`` settings from the environment: ``MEETBOT_LIST_CONCURRENCY=1000`` runs it as
  before the list gate (control_plane/api/list_gate.py), for pairs back to back.

Every line also carries ``server_cpu_ms_per_request``: CPU time (user + system) the server
process spent per request during that run. Unlike wall time it hardly depends on what else
the machine is doing, so it is the figure to compare across optimisations on a shared box.
``client_cpu_ms_per_request`` is this driver's own share: client and server share the
machine's cores, so req/s can never exceed cores / (server + client CPU per request).

Both on SQLite (a fresh file) and on PostgreSQL when ``--postgres-url`` (or
``MEETBOT_TEST_POSTGRES_URL``) names a server; a throwaway database is created there and
dropped after. Goals (issue 2): ≥ 500 creations/s in one process; list p99 ≤ 20 ms.

Usage: ``.venv/bin/python bench/api.py [--meetings 100000] [--requests 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg  # type: ignore[import-untyped]  # no stubs; only connect/execute used
import psutil
from aiohttp import web
from sqlalchemy import insert, text
from sqlalchemy.engine import make_url

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent.contracts.bot_config import BotSettings  # noqa: E402 — after the path set-up above
from bench.stats import percentile  # noqa: E402 — after the path set-up above
from control_plane.app import create_app  # noqa: E402
from control_plane.auth.provisioning import bootstrap  # noqa: E402
from control_plane.db.engine import create_database  # noqa: E402
from control_plane.db.migrate import upgrade  # noqa: E402
from control_plane.db.models.bot import Meeting  # noqa: E402
from control_plane.launchers.memory import MemoryLauncher  # noqa: E402
from control_plane.settings import Settings  # noqa: E402

STATUSES = (
    ["completed"] * 70 + ["failed"] * 10 + ["cancelled"] * 5 + ["active"] * 5 + ["requested"] * 10
)
NAMES = ["Weekly sync", "Standup", "Design review", "Customer call", "Retro", "1:1", "Planning"]
SEED_DAYS = 100
BATCH = 5_000


async def _seed(url: str, meetings: int) -> tuple[str, list[str]]:
    """Migrate, create the workspace and its key, insert ``meetings`` meetings.

    Returns:
        The API key and a sample of bot ids (for the ``bot_id`` filter).
    """
    await upgrade(url)
    database = create_database(url)
    rng = random.Random(7)
    now = datetime.now(UTC)
    settings_json = BotSettings().model_dump(mode="json")
    sample: list[str] = []
    try:
        async with database.sessions.begin() as session:
            workspace, _, issued = await bootstrap(
                session, email="bench@example.org", workspace_name="Bench", key_prefix="mbk"
            )
            workspace_id, user_id, key = workspace.id, issued.key.user_id, issued.secret
        for start in range(0, meetings, BATCH):
            rows: list[dict[str, Any]] = []
            for i in range(start, min(start + BATCH, meetings)):
                created = now - timedelta(seconds=rng.uniform(60, SEED_DAYS * 86_400))
                status = rng.choice(STATUSES)
                bot_id = uuid.uuid4()
                if i % 997 == 0:
                    sample.append(str(bot_id))
                native = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10))
                native = f"{native[:3]}-{native[3:7]}-{native[7:]}"
                rows.append(
                    {
                        "bot_id": bot_id,
                        "workspace_id": workspace_id,
                        "user_id": user_id,
                        "platform": "google_meet",
                        "native_meeting_id": native,
                        "constructed_meeting_url": f"https://meet.google.com/{native}",
                        "status": status,
                        "status_reason": "left_alone" if status == "completed" else None,
                        "settings": settings_json,
                        "join_offset_seconds": 0,
                        "name": f"{rng.choice(NAMES)} #{i}",
                        "participants": ["Ada", "Grace"],
                        "redacted": False,
                        "start_time": created if status != "requested" else None,
                        "created_at": created,
                        "updated_at": created,
                    }
                )
            async with database.sessions.begin() as session:
                await session.execute(insert(Meeting), rows)
        if database.dialect == "postgresql":
            # What autovacuum would do shortly after a bulk load; the planner needs the stats.
            async with database.engine.connect() as conn:
                await conn.execute(text("ANALYZE meetings"))
    finally:
        await database.dispose()
    return key, sample


def _serve(url: str, data_dir: str, ready: Any) -> None:
    """Child process: run the app on an ephemeral loopback port until terminated."""

    async def main() -> None:
        settings = Settings(
            database_url=url,
            data_dir=Path(data_dir),
            launcher="memory",
            rate_limit_per_second=1e9,
            rate_limit_burst=10**9,
            max_concurrent_bots=10**9,
            log_level="WARNING",
        )
        launcher = MemoryLauncher()
        runner = web.AppRunner(create_app(settings, launcher=launcher), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ready.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


async def _drive(
    total: int,
    concurrency: int,
    call: Callable[[int], Awaitable[None]],
    server: psutil.Process,
) -> tuple[float, list[float], float, float]:
    """Run ``call(i)`` for i < total with ``concurrency`` workers.

    Returns:
        Elapsed wall seconds, per-request latencies in ms, and the server's and this client's
        CPU ms per request.
    """
    latencies: list[float] = []
    counter = iter(range(total))

    async def worker() -> None:
        for i in counter:
            started = time.perf_counter()
            await call(i)
            latencies.append((time.perf_counter() - started) * 1000)

    cpu_before = _cpu_seconds(server)
    client_before = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    count = max(1, len(latencies))
    cpu_ms = (_cpu_seconds(server) - cpu_before) * 1000 / count
    client_ms = (time.process_time() - client_before) * 1000 / count
    return elapsed, latencies, cpu_ms, client_ms


def _figure(
    name: str,
    db: str,
    elapsed: float,
    latencies: list[float],
    cpu_ms: tuple[float, float],
    **extra: Any,
) -> None:
    print(
        json.dumps(
            {
                "bench": name,
                "db": db,
                **extra,
                "requests": len(latencies),
                "requests_per_s": round(len(latencies) / elapsed, 1),
                "p50_ms": round(statistics.median(latencies), 2),
                "p99_ms": round(percentile(latencies, 0.99), 2),
                "server_cpu_ms_per_request": round(cpu_ms[0], 2),
                "client_cpu_ms_per_request": round(cpu_ms[1], 2),
            }
        ),
        flush=True,
    )


async def _measure(db: str, url: str, args: argparse.Namespace, data_dir: str) -> None:
    key, sample = await _seed(url, args.meetings)
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Queue()
    server = ctx.Process(target=_serve, args=(url, data_dir, ready), daemon=True)
    server.start()
    try:
        port = ready.get(timeout=120)
        assert server.pid is not None
        process = psutil.Process(server.pid)
        print(json.dumps({"bench": "api", "db": db, "server_pid": server.pid}), flush=True)
        base = f"http://127.0.0.1:{port}"
        headers = {"X-API-Key": key}
        connector = aiohttp.TCPConnector(limit=max(*args.concurrency, args.creators + args.listers))
        async with aiohttp.ClientSession(base, connector=connector, headers=headers) as http:

            async def get(path: str) -> None:
                async with http.get(path) as response:
                    await response.read()
                    assert response.status == 200, response.status

            for _ in range(50):  # warm-up: connections, caches, JIT-free but lazy imports
                await get("/api/v1/meetings?limit=50")

            window_to = datetime.now(UTC) - timedelta(days=30)
            window_from = window_to - timedelta(days=1)
            iso = "%Y-%m-%dT%H:%M:%SZ"
            filters = {
                "status": "status=failed&limit=50",
                "date_window": f"date_from={window_from:{iso}}&date_to={window_to:{iso}}&limit=50",
                "name": "name=design%20rev&limit=50",
                "bot_id": None,
                "status_date_offset": (
                    f"status=completed&date_from={window_from - timedelta(days=10):{iso}}"
                    f"&date_to={window_to:{iso}}&limit=50&offset=100"
                ),
            }
            for concurrency in [] if args.mixed_only else args.concurrency:
                for label, query in filters.items():

                    async def list_call(i: int, query: str | None = query) -> None:
                        q = query if query is not None else f"bot_id={sample[i % len(sample)]}"
                        await get(f"/api/v1/meetings?{q}")

                    elapsed, latencies, cpu_ms, client_ms = await _drive(
                        args.list_requests, concurrency, list_call, process
                    )
                    _figure(
                        "api_list_meetings",
                        db,
                        elapsed,
                        latencies,
                        (cpu_ms, client_ms),
                        filter=label,
                        meetings=args.meetings,
                        concurrency=concurrency,
                    )

            run = "".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4))

            async def create_call(i: int) -> None:
                letters = "".join("abcdefghijklmnopqrstuvwxyz"[int(c, 16)] for c in f"{i:06x}")
                body = {
                    "platform": "google_meet",
                    "native_meeting_id": f"{run[:3]}-{letters[:4]}-{letters[4:]}{run[3]}",
                    "bot_name": "Bench",
                }
                async with http.post("/api/v1/bots", json=body) as response:
                    await response.read()
                    assert response.status == 201, (response.status, await response.text())

            offset = 0
            for concurrency in [] if args.mixed_only else args.concurrency:

                async def create_at(i: int, offset: int = offset) -> None:
                    await create_call(offset + i)

                elapsed, latencies, cpu_ms, client_ms = await _drive(
                    args.requests, concurrency, create_at, process
                )
                offset += args.requests
                _figure(
                    "api_create_bot",
                    db,
                    elapsed,
                    latencies,
                    (cpu_ms, client_ms),
                    meetings=args.meetings,
                    concurrency=concurrency,
                )

            if args.mixed_requests:
                await _mixed(db, http, create_call, offset, args, process)
    finally:
        server.terminate()
        server.join(timeout=30)


async def _mixed(
    db: str,
    http: aiohttp.ClientSession,
    create_call: Callable[[int], Awaitable[None]],
    offset: int,
    args: argparse.Namespace,
    server: psutil.Process,
) -> None:
    """Creators and listers at once: print one figure for each kind (see the docstring)."""
    creates: list[float] = []
    lists: list[float] = []
    counter = iter(range(args.mixed_requests))
    done = asyncio.Event()

    async def creator() -> None:
        for i in counter:
            started = time.perf_counter()
            await create_call(offset + i)
            creates.append((time.perf_counter() - started) * 1000)

    async def lister() -> None:
        while not done.is_set():
            started = time.perf_counter()
            async with http.get("/api/v1/meetings?limit=50") as response:
                await response.read()
                assert response.status == 200, response.status
            lists.append((time.perf_counter() - started) * 1000)

    cpu_before = _cpu_seconds(server)
    client_before = time.process_time()
    started = time.perf_counter()
    listers = [asyncio.create_task(lister()) for _ in range(args.listers)]
    try:
        await asyncio.gather(*(creator() for _ in range(args.creators)))
    finally:
        done.set()
        await asyncio.gather(*listers)
    elapsed = time.perf_counter() - started
    count = max(1, len(creates) + len(lists))
    cpu_ms = (_cpu_seconds(server) - cpu_before) * 1000 / count
    client_ms = (time.process_time() - client_before) * 1000 / count
    load = os.getloadavg()[0]
    for kind, latencies in (("create", creates), ("list", lists)):
        _figure(
            "api_mixed",
            db,
            elapsed,
            latencies,
            (cpu_ms, client_ms),
            kind=kind,
            creators=args.creators,
            listers=args.listers,
            meetings=args.meetings,
            load_1m=round(load, 2),
        )


async def fresh_database(
    server_url: str, prefix: str = "meetbot_bench"
) -> tuple[str, Callable[[], Awaitable[None]]]:
    """A fresh database on the server of ``server_url``; returns its URL and its dropper."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = make_url(server_url).set(drivername="postgresql")
    dsn = admin.render_as_string(hide_password=False)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()

    async def drop() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    return make_url(server_url).set(database=name).render_as_string(hide_password=False), drop


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--meetings", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=2_000, help="bot creations")
    parser.add_argument("--list-requests", type=int, default=500, help="lists per filter")
    parser.add_argument(
        "--concurrency",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[1, 16],
        help="comma-separated client counts, each measured (default 1,16)",
    )
    parser.add_argument("--postgres-url", default=os.environ.get("MEETBOT_TEST_POSTGRES_URL", ""))
    parser.add_argument("--only", choices=["sqlite", "postgresql"], default=None)
    parser.add_argument(
        "--mixed-requests", type=int, default=1_000, help="creations of the mixed run (0: skip)"
    )
    parser.add_argument("--mixed-only", action="store_true", help="run only the mixed run")
    parser.add_argument("--creators", type=int, default=8, help="creating clients (mixed run)")
    parser.add_argument("--listers", type=int, default=8, help="listing clients (mixed run)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="meetbot-bench-api-") as tmp:
        if args.only in (None, "sqlite"):
            url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
            await _measure("sqlite", url, args, tmp)
        if args.only in (None, "postgresql"):
            if not args.postgres_url:
                print(json.dumps({"bench": "api", "db": "postgresql", "skipped": "no server"}))
                return
            url, drop = await fresh_database(args.postgres_url)
            try:
                await _measure("postgresql", url, args, tmp)
            finally:
                await drop()


if __name__ == "__main__":
    asyncio.run(main())
