"""Scheduler benchmark: how fast due bots are claimed and handed to the launcher.

Seeds ``--bots`` scheduled bots that are all due, then runs ``--loops`` scheduler loops (each
with its own engine, as separate replicas would) against the same database with in-memory
launchers, until every bot has a launch handle. Prints one JSON line per database:

``{"bench": "scheduler_launches", "db", "bots", "loops", "batch_size", "seconds",
"launches_per_second", "per_loop": [...], "duplicates"}`` — ``duplicates`` must be 0.

SQLite runs in a temporary folder; PostgreSQL runs when ``--postgres-url`` (or
``MEETBOT_TEST_POSTGRES_URL``) names a server, in a database created and dropped here.

Usage: ``.venv/bin/python bench/scheduler.py [--bots 2000] [--loops 4] [--batch-size 50]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from control_plane.auth.provisioning import add_member, create_workspace, get_or_create_user
from control_plane.bots.config_builder import BotConfigBuilder
from control_plane.bots.scheduler import Scheduler
from control_plane.db.engine import Database, create_database
from control_plane.db.migrate import upgrade
from control_plane.db.models.bot import Meeting
from control_plane.enums import Role
from control_plane.launchers.memory import MemoryLauncher


async def _seed(database: Database, count: int) -> None:
    now = datetime.now(UTC)
    async with database.sessions.begin() as session:
        user = await get_or_create_user(session, "bench@example.org")
        workspace = await create_workspace(session, "Bench")
        await add_member(session, workspace, user, Role.OWNER)
        await session.execute(
            insert(Meeting),
            [
                {
                    "bot_id": uuid.uuid4(),
                    "workspace_id": workspace.id,
                    "platform": "google_meet",
                    "native_meeting_id": "abc-defg-hij",
                    "constructed_meeting_url": "https://meet.google.com/abc-defg-hij",
                    "status": "scheduled",
                    "settings": {},
                    "scheduled_start_at": now - timedelta(seconds=1),
                    "join_offset_seconds": 0,
                    "launch_at": now - timedelta(seconds=1),
                    "participants": [],
                    "redacted": False,
                    "created_at": now,
                    "updated_at": now,
                }
                for _ in range(count)
            ],
        )


async def _left(database: Database) -> int:
    async with database.sessions() as session:
        left = await session.scalar(
            select(func.count()).select_from(Meeting).where(Meeting.bot_container_id.is_(None))
        )
    return int(left or 0)


async def run(url: str, dialect: str, bots: int, loops: int, batch_size: int) -> dict[str, object]:
    """Seed, launch everything, and return the figures."""
    await upgrade(url)
    seeder = create_database(url)
    await _seed(seeder, bots)
    databases = [create_database(url, pool_size=3) for _ in range(loops)]
    launchers = [MemoryLauncher() for _ in range(loops)]
    schedulers = [
        Scheduler(
            database=db,
            launcher=launcher,
            config_builder=BotConfigBuilder(db, control_plane_url="http://bench"),
            interval=0.01,
            batch_size=batch_size,
        )
        for db, launcher in zip(databases, launchers, strict=True)
    ]
    started = time.perf_counter()
    tasks = [asyncio.create_task(s.run()) for s in schedulers]
    while await _left(seeder):  # noqa: ASYNC110 - polls the database; no event to await
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - started
    for scheduler in schedulers:
        scheduler.stop()
    await asyncio.gather(*tasks)
    for db in [*databases, seeder]:
        await db.dispose()
    launched = [config.bot_id for launcher in launchers for config in launcher.launches]
    return {
        "bench": "scheduler_launches",
        "db": dialect,
        "bots": bots,
        "loops": loops,
        "batch_size": batch_size,
        "seconds": round(elapsed, 3),
        "launches_per_second": round(bots / elapsed, 1),
        "per_loop": [len(launcher.launches) for launcher in launchers],
        "duplicates": len(launched) - len(set(launched)),
    }


async def _admin(server: str, statement: str) -> None:
    engine = create_async_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            await conn.exec_driver_sql(statement)
    finally:
        await engine.dispose()


async def main_async(args: argparse.Namespace) -> None:
    """Run on SQLite, then on PostgreSQL when a server is given."""
    with tempfile.TemporaryDirectory(prefix="meetbot-bench-") as folder:
        url = f"sqlite+aiosqlite:///{Path(folder) / 'bench.db'}"
        print(json.dumps(await run(url, "sqlite", args.bots, args.loops, args.batch_size)))
    server = args.postgres_url or os.environ.get("MEETBOT_TEST_POSTGRES_URL", "")
    if not server:
        return
    name = f"meetbot_bench_{uuid.uuid4().hex[:10]}"
    await _admin(server, f'CREATE DATABASE "{name}"')
    try:
        url = make_url(server).set(database=name).render_as_string(hide_password=False)
        print(json.dumps(await run(url, "postgresql", args.bots, args.loops, args.batch_size)))
    finally:
        await _admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bots", type=int, default=2000)
    parser.add_argument("--loops", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--postgres-url", default="")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
