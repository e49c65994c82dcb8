"""Agent-link benchmark: frames stored per second, ack latency, and live-command round trips.

Runs the real control-plane app on a loopback port with a fresh SQLite database (or the
``--database-url`` given, e.g. PostgreSQL), launches ``--bots`` bots through the app's launch
hook (memory launcher), and connects one WebSocket agent per bot speaking the link protocol.
Prints one JSON line per figure:

* ``agent_link_frames_per_second`` — every agent sends ``--frames`` transcript segments as
  fast as the link takes them; each is stored (with its receipt) and acked; frames acked per
  second over all agents, and the p50/p99 send → ack latency;
* ``agent_command_round_trip_ms`` — p50/p99 of ``POST /api/v1/bots/{id}/hand`` answered 202:
  HTTP request → command over the link → the agent's ``command_result`` → response.

Usage: ``.venv/bin/python bench/agent_link.py [--bots 20] [--frames 200] [--commands 200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from aiohttp import web

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent.contracts.bot_config import BotSettings  # noqa: E402
from agent.contracts.link import (  # noqa: E402 — after the path set-up above
    Ack,
    Command,
    CommandResult,
    Register,
    Segment,
    StatusEvent,
    TranscriptSegmentEvent,
    parse_control_plane_frame,
)
from agent.contracts.status import BotStatus  # noqa: E402
from bench.stats import free_port, percentile  # noqa: E402 — after the path set-up above
from control_plane.app import create_app  # noqa: E402
from control_plane.auth.provisioning import (  # noqa: E402
    add_member,
    create_workspace,
    get_or_create_user,
    issue_key,
)
from control_plane.bots.config_builder import CONFIG_BUILDER  # noqa: E402
from control_plane.db.engine import DB  # noqa: E402
from control_plane.db.migrate import upgrade  # noqa: E402
from control_plane.db.models.bot import Meeting  # noqa: E402
from control_plane.enums import Role  # noqa: E402
from control_plane.launchers.memory import MemoryLauncher  # noqa: E402
from control_plane.settings import Settings  # noqa: E402


class Agent:
    """One link: sends frames, records ack times, answers every command at once."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.sent: dict[str, float] = {}
        self.acked: dict[str, float] = {}
        self.all_acked = asyncio.Event()
        self.expected = 0

    async def read(self) -> None:
        async for message in self.ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            frame = parse_control_plane_frame(message.data)
            if isinstance(frame, Ack):
                self.acked[frame.ref_id] = time.perf_counter()
                if self.expected and len(self.acked) >= self.expected:
                    self.all_acked.set()
            elif isinstance(frame, Command):
                result = CommandResult(ref_id=frame.id, ok=True)
                await self.ws.send_str(result.model_dump_json())

    async def send(self, text: str, frame_id: str) -> None:
        self.sent[frame_id] = time.perf_counter()
        await self.ws.send_str(text)


async def _bots(app: web.Application, count: int) -> tuple[str, list[tuple[str, str]]]:
    async with app[DB].sessions.begin() as session:
        user = await get_or_create_user(session, "bench@example.org")
        workspace = await create_workspace(session, "Bench")
        await add_member(session, workspace, user, Role.OWNER)
        issued = await issue_key(
            session, user=user, workspace_id=workspace.id, name="bench", key_prefix="mbk"
        )
        meetings = [
            Meeting(
                workspace_id=workspace.id,
                platform="google_meet",
                native_meeting_id="abc-defg-hij",
                constructed_meeting_url="https://meet.google.com/abc-defg-hij",
                status=BotStatus.REQUESTED.value,
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


async def _run(database_url: str, bots: int, frames: int, commands: int, data: Path) -> None:
    port = free_port()
    settings = Settings(
        database_url=database_url,
        data_dir=data,
        launcher="memory",
        port=port,
        public_url=f"http://127.0.0.1:{port}",
        rate_limit_per_second=100_000,
        rate_limit_burst=100_000,
        # The bench's agents send no heartbeats: keep the reaper out of the measurement.
        heartbeat_timeout_seconds=3600,
    )
    await upgrade(database_url)
    app = create_app(settings, launcher=MemoryLauncher())
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    base = f"http://127.0.0.1:{port}"
    try:
        key, launched = await _bots(app, bots)
        async with aiohttp.ClientSession() as http:
            agents: list[Agent] = []
            readers = []
            for bot_id, token in launched:
                ws = await http.ws_connect(
                    f"{base}/internal/v1/agents/{bot_id}",
                    headers={"Authorization": f"Bearer {token}"},
                )
                agent = Agent(ws)
                agent.expected = 3
                agents.append(agent)
                readers.append(asyncio.create_task(agent.read()))
                for setup in (
                    Register(agent_version="bench"),
                    StatusEvent(status=BotStatus.JOINING, status_reason="join_started"),
                    StatusEvent(status=BotStatus.ACTIVE, status_reason="joined"),
                ):
                    await agent.send(setup.model_dump_json(), setup.id)
            await asyncio.gather(*(a.all_acked.wait() for a in agents))

            now = datetime.now(UTC)
            batches = []
            for agent in agents:
                agent.expected = 3 + frames
                agent.all_acked.clear()
                batch = []
                for n in range(frames):
                    segment = Segment(
                        id=f"s{n}",
                        start=n,
                        end=n + 1.0,
                        absolute_start_time=now,
                        absolute_end_time=now,
                        text="the quick brown fox jumps over the lazy dog",
                    )
                    frame = TranscriptSegmentEvent(segment=segment)
                    batch.append((frame.model_dump_json(), frame.id))
                batches.append(batch)
            started = time.perf_counter()

            async def pump(agent: Agent, batch: list[tuple[str, str]]) -> None:
                for text, frame_id in batch:
                    await agent.send(text, frame_id)
                await agent.all_acked.wait()

            await asyncio.gather(*(pump(a, b) for a, b in zip(agents, batches, strict=True)))
            elapsed = time.perf_counter() - started
            latencies = [
                (a.acked[f] - a.sent[f]) * 1000
                for a, b in zip(agents, batches, strict=True)
                for _, f in b
            ]
            print(
                json.dumps(
                    {
                        "figure": "agent_link_frames_per_second",
                        "database": database_url.split(":", 1)[0],
                        "bots": bots,
                        "frames": bots * frames,
                        "value": round(bots * frames / elapsed, 1),
                        "ack_ms_p50": round(percentile(latencies, 0.5), 2),
                        "ack_ms_p99": round(percentile(latencies, 0.99), 2),
                    }
                ),
                flush=True,
            )

            round_trips = []
            for n in range(commands):
                bot_id = launched[n % len(launched)][0]
                begun = time.perf_counter()
                async with http.post(
                    f"{base}/api/v1/bots/{bot_id}/hand", headers={"X-API-Key": key}
                ) as response:
                    assert response.status == 202, await response.text()
                round_trips.append((time.perf_counter() - begun) * 1000)
            print(
                json.dumps(
                    {
                        "figure": "agent_command_round_trip_ms",
                        "database": database_url.split(":", 1)[0],
                        "commands": commands,
                        "p50": round(percentile(round_trips, 0.5), 2),
                        "p99": round(percentile(round_trips, 0.99), 2),
                        "mean": round(statistics.fmean(round_trips), 2),
                    }
                ),
                flush=True,
            )
            for agent in agents:
                await agent.ws.close()
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=20)
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        asyncio.run(_run(url, args.bots, args.frames, args.commands, Path(tmp) / "data"))


if __name__ == "__main__":
    main()
