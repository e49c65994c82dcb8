"""Launch-burst benchmark: ``--bots`` ``POST /api/v1/bots`` at once, each bot launched once.

Runs the real control-plane app on a loopback port (SQLite in a temporary folder, or a fresh
database, dropped afterwards, on the PostgreSQL server of ``--database-url``) with the memory
launcher made to take ``--launch-ms`` per launch (a cloud API call or a VM start; no machine is
started), fires every creation at once, and waits until every bot has its launch handle.
Prints one JSON line: the creations' p50/p99 answer time, seconds until the last launch,
launches per bot (every one must be 1), the most launches in flight at once (never above
``--launch-concurrency``) and the load.

Usage: ``.venv/bin/python bench/launch_burst.py [--bots 200] [--launch-ms 200]
[--launch-concurrency 16] [--database-url postgresql+asyncpg://…]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp
from aiohttp import web
from sqlalchemy import func, select

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent.contracts.bot_config import BotConfig  # noqa: E402 — after the path set-up above
from bench.api import fresh_database  # noqa: E402
from bench.stats import free_port, percentile  # noqa: E402
from control_plane.app import create_app  # noqa: E402
from control_plane.auth.provisioning import (  # noqa: E402
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.db.engine import DB  # noqa: E402
from control_plane.db.migrate import upgrade  # noqa: E402
from control_plane.db.models.bot import Meeting  # noqa: E402
from control_plane.enums import Role  # noqa: E402
from control_plane.launchers.base import LaunchHandle  # noqa: E402
from control_plane.launchers.memory import MemoryLauncher  # noqa: E402
from control_plane.settings import Settings  # noqa: E402


class SlowLauncher(MemoryLauncher):
    """The memory launcher, taking ``seconds`` per launch and counting launches in flight."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.in_flight = 0
        self.most_in_flight = 0

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Wait as a real launch would, then launch as the memory launcher does."""
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.seconds)
            return await super().launch(config)
        finally:
            self.in_flight -= 1


async def _run(args: argparse.Namespace, tmp: Path) -> dict[str, object]:
    if not args.database_url:
        return await _measure(args, tmp, f"sqlite+aiosqlite:///{tmp / 'bench.db'}")
    database_url, drop = await fresh_database(args.database_url, "burst")
    try:
        return await _measure(args, tmp, database_url)
    finally:
        await drop()


async def _measure(args: argparse.Namespace, tmp: Path, database_url: str) -> dict[str, object]:
    port = free_port()
    settings = Settings(
        database_url=database_url,
        data_dir=tmp / "data",
        launcher="memory",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        rate_limit_per_second=100_000,
        rate_limit_burst=100_000,
        max_concurrent_bots=args.bots,
        launch_concurrency=args.launch_concurrency,
        # Launched bots have no agent here: keep the reaper from failing them mid-measurement.
        agent_connect_timeout_seconds=3600,
    )
    await upgrade(database_url)
    launcher = SlowLauncher(args.launch_ms / 1000)
    app = create_app(settings, launcher=launcher)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with app[DB].sessions.begin() as session:
            user = await get_or_create_user(session, "burst@example.org")
            workspace = await create_workspace(session, "Burst")
            await add_member(session, workspace, user, Role.OWNER)
            issued = await issue_key(
                session, user=user, workspace_id=workspace.id, name="burst", key_prefix="mbk"
            )
        body = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
        answers: list[float] = []
        async with aiohttp.ClientSession() as http:

            async def create() -> str:
                begun = time.perf_counter()
                async with http.post(
                    f"http://127.0.0.1:{port}/api/v1/bots",
                    json=body,
                    headers={"X-API-Key": issued.secret},
                ) as response:
                    assert response.status == 201, await response.text()
                    answers.append((time.perf_counter() - begun) * 1000)
                    return str((await response.json())["bot_id"])

            started = time.perf_counter()
            created = await asyncio.gather(*(create() for _ in range(args.bots)))
            while True:
                async with app[DB].sessions() as session:
                    waiting = await session.scalar(
                        select(func.count())
                        .select_from(Meeting)
                        .where(Meeting.bot_container_id.is_(None))
                    )
                if not waiting:
                    break
                await asyncio.sleep(0.02)
            elapsed = time.perf_counter() - started
        launched = Counter(str(config.bot_id) for config in launcher.launches)
        return {
            "figure": "launch_burst",
            "database": database_url.split(":", 1)[0],
            "bots": args.bots,
            "launch_ms": args.launch_ms,
            "launch_concurrency": args.launch_concurrency,
            "create_ms_p50": round(percentile(answers, 0.5), 1),
            "create_ms_p99": round(percentile(answers, 0.99), 1),
            "all_launched_s": round(elapsed, 2),
            "launched_once": sum(1 for bot in created if launched[bot] == 1),
            "launched_more_than_once": sum(1 for count in launched.values() if count > 1),
            "most_in_flight": launcher.most_in_flight,
            "load": Path("/proc/loadavg").read_text().split()[:3],  # noqa: ASYNC240 -- procfs
        }
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=200)
    parser.add_argument("--launch-ms", type=float, default=200.0)
    parser.add_argument("--launch-concurrency", type=int, default=16)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(asyncio.run(_run(args, Path(tmp)))), flush=True)


if __name__ == "__main__":
    main()
