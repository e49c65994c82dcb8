"""One demo run: start everything, send the bot, watch it, summarise, stop what was started.

Order of events (each step's failure ends the run with a :class:`DemoError` naming the step):

1. the scenario's audio is prepared and the testmeeting server starts (in this process: the
   summary reads its ground-truth timeline);
2. the webhook receiver starts on loopback;
3. ``meetbot admin bootstrap`` creates the workspace and key; ``meetbot serve`` starts with
   SQLite in the data folder and the agent's Chromium pointed at the simulator;
4. through the public API: the webhook endpoint is registered and its secret fetched, the bot
   is launched, its stream subscribed and followed until a final status;
5. the control plane's record, the status webhooks and the stored transcript are awaited;
6. the summary is printed (and written as JSON); with ``keep_running`` everything stays up
   until Ctrl-C; then everything started is stopped in reverse order.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from rich.console import Console
from rich.markup import escape

from agent.contracts.status import FINAL_STATUSES
from meetbot.demo.client import ApiClient, StreamEvent, read_stream
from meetbot.demo.display import LiveView
from meetbot.demo.errors import DemoError
from meetbot.demo.report import (
    DemoSummary,
    SegmentOut,
    StatusChange,
    WebhookOut,
    build_turns,
    group_turns,
    percentile,
    speaker_words,
)
from meetbot.demo.scenario import MEETING_IDS, PASSCODES, DemoScenario
from meetbot.demo.services import ControlPlane, bootstrap, control_plane_env, free_port
from meetbot.demo.webhooks import WebhookReceiver
from testmeeting import TestMeetingServer
from testmeeting.errors import ScenarioError

DEMO_EMAIL = "demo@example.com"
BOT_NAME = "meetbot"
# The simulator's Zoom skin does not check on-behalf-of tokens; the API requires one for Zoom.
DEMO_ZOOM_OBF_TOKEN = "demo-obf-token-for-the-local-simulator"  # noqa: S105 -- not a secret

SUBSCRIBE_WAIT_S = 120.0
"""How long the bot may take from launch to a registered stream (agent start, Chromium)."""
RECORD_WAIT_S = 30.0
"""How long the control plane's record may lag the stream's final status."""
WEBHOOK_WAIT_S = 20.0
"""How long the last status webhook may take after the final status."""


@dataclass(slots=True)
class Observed:
    """What the demo saw of the bot.

    Attributes:
        statuses: ``(status, reason, API timestamp, time.monotonic())`` in arrival order.
        finals: Final segments by id with their arrival epoch (the first final wins).
        stored_segments: Segments the control plane returned for the meeting.
        last_event_id: The newest SSE event id read (to resume the stream).
        stream_url: The stream URL subscribe returned (the control plane's relay).
    """

    statuses: list[tuple[str, str | None, str, float]] = field(default_factory=list)
    finals: dict[str, tuple[dict[str, Any], float, float]] = field(default_factory=dict)
    stored_segments: int | None = None
    last_event_id: int = 0
    stream_url: str | None = None

    def final_status(self) -> str | None:
        """The last status seen, when it is final."""
        if self.statuses and self.statuses[-1][0] in FINAL_STATUSES:
            return self.statuses[-1][0]
        return None


@dataclass(frozen=True, slots=True)
class DemoOptions:
    """How to run the demo (see ``meetbot demo --help``)."""

    platform: str
    data_dir: Path
    speech_dir: Path | None
    keep_running: bool
    timeout_s: float
    record: bool = False
    language: str | None = None


class DemoRun:
    """Runs the demo once; :meth:`run` returns the summary (``summary.ok`` says success).

    Args:
        options: Run options.
        demo: The prepared scenario.
        console: Where to print.
    """

    def __init__(self, options: DemoOptions, demo: DemoScenario, console: Console) -> None:
        self.options = options
        self.demo = demo
        self.console = console
        self.observed = Observed()
        self.server: TestMeetingServer | None = None
        self.receiver = WebhookReceiver()
        self.control_plane: ControlPlane | None = None
        self.api_key: str | None = None
        self.bot: dict[str, Any] = {}
        self.started = time.monotonic()
        self.launched = self.started

    # ---- the run --------------------------------------------------------------------

    async def run(self, report: Callable[[DemoSummary], None]) -> DemoSummary:
        """Run every step, hand the summary to ``report``, then stop everything.

        With ``keep_running``, wait for cancellation before stopping. Failures of the steps go into
        the summary; nothing is raised for them.
        """
        error: str | None = None
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(self.options.timeout_s):
                    await self._steps(stack)
            except DemoError as exc:
                error = str(exc)
            except aiohttp.ClientError as exc:
                error = f"the control plane stopped answering: {exc!r}"
            except TimeoutError:
                error = (
                    f"the demo did not finish within {self.options.timeout_s:.0f} s "
                    f"(last status: {self._last_status()})"
                )
            summary = self.summarise(error)
            report(summary)
            if self.options.keep_running and self.control_plane is not None:
                self._print_keep_running()
                await asyncio.Event().wait()  # until Ctrl-C / SIGTERM cancels the run
        return summary

    async def _steps(self, stack: contextlib.AsyncExitStack) -> None:
        server = TestMeetingServer(self.demo.scenario, port=0, speech_dir=self.options.speech_dir)
        self.server = server
        stack.push_async_callback(server.stop)
        await stack.enter_async_context(self.receiver)
        port = free_port()
        data_dir = self.options.data_dir
        self._note(f"control plane: bootstrapping a workspace in {data_dir}")
        # The simulator prepares its audio while the workspace is created: both take seconds.
        boot_env = control_plane_env(data_dir, port, [])
        try:
            async with asyncio.TaskGroup() as group:
                key = group.create_task(bootstrap(boot_env, DEMO_EMAIL))
                group.create_task(server.start())
        except* (DemoError, ScenarioError, OSError) as failed:
            raise DemoError(str(failed.exceptions[0])) from failed
        self.api_key = key.result()
        env = control_plane_env(data_dir, port, server.browser_args())
        control_plane = ControlPlane(data_dir, env, port)
        self.control_plane = control_plane
        stack.push_async_callback(control_plane.stop)
        await control_plane.start()
        self._note(f"control plane: {control_plane.url} (log {control_plane.log_path})")
        session = await stack.enter_async_context(aiohttp.ClientSession())
        api = ApiClient(session, control_plane.url, self.api_key)
        await self._register_webhook(api)
        await self._launch(api)
        await self._follow(api, session)
        await self._await_record(api)
        await self._await_webhooks()
        meeting_id = self.bot.get("id")
        transcript = await api.request("GET", f"/api/v1/meetings/{meeting_id}/transcript")
        self.observed.stored_segments = len(transcript.get("segments", []))

    async def _register_webhook(self, api: ApiClient) -> None:
        keys = await api.request("GET", "/api/v1/api-keys")
        workspace_id = keys[0]["workspace_id"]
        base = f"/api/v1/workspaces/{workspace_id}/webhooks"
        endpoint = await api.request(
            "POST", base, {"url": self.receiver.url, "description": "meetbot demo receiver"}
        )
        secret = await api.request("GET", f"{base}/{endpoint['id']}/secret")
        self.receiver.set_secret(secret["key"])
        self._note(f"webhooks: endpoint {endpoint['id']} → {self.receiver.url}")

    def meeting_url(self) -> str:
        """The real-shaped URL of the demo room (resolved to the simulator by Chromium)."""
        assert self.server is not None  # noqa: S101 -- called after the server started
        platform = self.options.platform
        return self.server.meeting_url(platform, MEETING_IDS[platform], PASSCODES.get(platform))

    async def _launch(self, api: ApiClient) -> None:
        body: dict[str, Any] = {
            "platform": self.options.platform,
            "meeting_url": self.meeting_url(),
            "bot_name": BOT_NAME,
        }
        if self.options.record:
            body["recording_enabled"] = True
        if self.options.language:
            body["language"] = self.options.language
        if self.options.platform == "zoom":
            body["zoom_obf_token"] = DEMO_ZOOM_OBF_TOKEN
        self._note(f"launching a bot into {body['meeting_url']}")
        self.launched = time.monotonic()
        self.bot = await api.request("POST", "/api/v1/bots", body)
        self.observed.statuses.append(
            (
                self.bot["status"],
                self.bot.get("status_reason"),
                self.bot["created_at"],
                self.launched,
            )
        )

    async def _follow(self, api: ApiClient, session: aiohttp.ClientSession) -> None:
        bot_id = str(self.bot["bot_id"])
        view = LiveView(self.console, self.launched, self.options.platform)
        view.status(self.bot["status"], self.bot.get("status_reason"), self.launched)
        with view:
            subscription = await api.subscribe(bot_id, time.monotonic() + SUBSCRIBE_WAIT_S)
            self.observed.stream_url = subscription["url"]
            while self.observed.final_status() is None:
                stream = read_stream(
                    session, subscription["url"], subscription["token"], self.observed.last_event_id
                )
                try:
                    async with contextlib.aclosing(stream) as events:
                        async for event in events:
                            self._on_event(event, view)
                            if self.observed.final_status() is not None:
                                break
                except (aiohttp.ClientError, TimeoutError) as exc:
                    if self.observed.final_status() is not None:
                        break
                    raise DemoError(f"the bot's event stream failed: {exc!r}") from exc
                if self.observed.final_status() is None:
                    # The stream closed early (agent restart, token expiry): resume after the
                    # last event with a fresh token.
                    subscription = await api.subscribe(bot_id, time.monotonic() + 30.0)

    def _on_event(self, event: StreamEvent, view: LiveView) -> None:
        now = time.monotonic()
        self.observed.last_event_id = max(self.observed.last_event_id, event.id)
        if event.event == "bot_status":
            status = str(event.data.get("status"))
            reason = event.data.get("status_reason")
            self.observed.statuses.append((status, reason, str(event.data.get("timestamp")), now))
            view.status(status, reason, now)
        elif event.event == "transcript_segment":
            if event.data.get("completed", True):
                self.observed.finals.setdefault(
                    str(event.data["id"]), (event.data, event.received_at, now)
                )
            view.segment(event.data, now)
        elif event.event == "participant_update":
            view.participants(event.data, now)

    async def _await_record(self, api: ApiClient) -> None:
        bot_id = self.bot["bot_id"]
        deadline = time.monotonic() + RECORD_WAIT_S
        while True:
            record = await api.request("GET", f"/api/v1/bots/{bot_id}")
            if record["status"] in FINAL_STATUSES:
                self.bot = record
                return
            if time.monotonic() >= deadline:
                raise DemoError(
                    f"the control plane still says {record['status']!r} {RECORD_WAIT_S:.0f} s "
                    "after the bot's stream reported its final status"
                )
            await asyncio.sleep(0.5)

    async def _await_webhooks(self) -> None:
        bot_id = str(self.bot["bot_id"])
        final = self.bot["status"]
        deadline = time.monotonic() + WEBHOOK_WAIT_S
        while time.monotonic() < deadline:
            if any(c.get("status") == final for c in self.receiver.status_changes(bot_id)):
                return
            await asyncio.sleep(0.25)

    # ---- the summary ----------------------------------------------------------------

    def _last_status(self) -> str:
        return self.observed.statuses[-1][0] if self.observed.statuses else "none"

    def summarise(self, error: str | None) -> DemoSummary:
        """Build the summary from what was observed; ``error`` is the failure, if any."""
        speech = []
        if self.server is not None:
            platform = self.options.platform
            timeline = self.server.timeline(platform, MEETING_IDS[platform])
            speech = [event for event in timeline if event.type == "speech"]
        finals = sorted(self.observed.finals.values(), key=lambda item: item[1])
        starts = self.demo.voiced_starts or (0.0,) * len(self.demo.voiced_ends)
        spans = tuple(zip(starts, self.demo.voiced_ends, strict=True))
        right, said = speaker_words([s for s, _, _ in finals], speech, spans)
        grouped, ends = group_turns(speech, self.demo.voiced_ends, starts)
        turns, wer, words = build_turns([(s, arrived) for s, arrived, _ in finals], grouped, ends)
        latencies = [t.latency_s for t in turns if t.latency_s is not None]
        bot_id = str(self.bot["bot_id"]) if self.bot else None
        changes = self.receiver.status_changes(bot_id) if bot_id else []
        meeting_id = self.bot.get("id") if self.bot else None
        final_status = self.bot.get("status") if self.bot else None
        if error is None:
            error = self._judge(final_status, len(finals), len(changes))
        return DemoSummary(
            ok=error is None,
            error=error,
            platform=self.options.platform,
            speech_source=self.demo.source.value,
            speech_seconds=round(self.demo.speech_seconds, 3),
            bot_id=bot_id,
            meeting_id=meeting_id,
            statuses=[
                StatusChange(
                    status=status,
                    status_reason=reason,
                    at=at,
                    elapsed_s=round(t - self.launched, 3),
                )
                for status, reason, at, t in self.observed.statuses
            ],
            final_status=final_status,
            final_reason=self.bot.get("status_reason") if self.bot else None,
            segments=[
                SegmentOut(
                    id=str(s["id"]),
                    speaker=s.get("speaker"),
                    text=str(s.get("text", "")),
                    start=float(s.get("start", 0.0)),
                    end=float(s.get("end", 0.0)),
                    arrived_elapsed_s=round(t - self.launched, 3),
                )
                for s, _, t in finals
            ],
            turns=turns,
            wer=wer,
            reference_words=words,
            latency_p50_s=percentile(latencies, 50),
            latency_p95_s=percentile(latencies, 95),
            speaker_words_right=right,
            speaker_words_total=said,
            webhooks=WebhookOut(
                verified=len(self.receiver.verified()),
                rejected=self.receiver.rejected,
                by_type=self.receiver.counts_by_type(),
                status_changes=[str(c.get("status")) for c in changes],
            ),
            transcript_url=self._transcript_url(),
            stream_url=self.observed.stream_url,
            stored_segments=self.observed.stored_segments,
            elapsed_s=round(time.monotonic() - self.started, 3),
            # Latency depends on what else the CPUs do; the figure says how busy they were.
            load_average_1m=os.getloadavg()[0],
        )

    @staticmethod
    def _judge(final_status: str | None, finals: int, status_hooks: int) -> str | None:
        if final_status != "completed":
            return f"the bot ended {final_status!r}, not 'completed'"
        if finals == 0:
            return "the bot completed but transcribed nothing"
        if status_hooks == 0:
            return "no signed bot.status_changed webhook arrived"
        return None

    def _transcript_url(self) -> str | None:
        if self.control_plane is None or not self.bot:
            return None
        return f"{self.control_plane.url}/api/v1/meetings/{self.bot['id']}/transcript?format=txt"

    def _print_keep_running(self) -> None:
        assert self.control_plane is not None  # noqa: S101 -- checked by the caller
        base = self.control_plane.url
        key = self.api_key or "<key>"
        bot_id = self.bot.get("bot_id", "<bot_id>")
        lines = [
            "Everything stays up until Ctrl-C:",
            f"  control plane   {base}   (API key: {key})",
            f"  OpenAPI         {base}/api/v1/openapi.json",
            f"  test meeting    {self.server.http_url if self.server else '-'}/api/rooms",
            f"  data folder     {self.options.data_dir}",
            "Try:",
            f"  curl -s -H 'X-API-Key: {key}' {base}/api/v1/bots/{bot_id}",
            f"  curl -s -H 'X-API-Key: {key}' '{self._transcript_url()}'",
            f"  curl -s -H 'X-API-Key: {key}' {base}/api/v1/meetings",
        ]
        self.console.print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)

    def _note(self, message: str) -> None:
        self.console.print(f"[dim]{escape(message)}[/dim]", highlight=False)
