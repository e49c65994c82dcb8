"""A real OpenAI-compatible HTTP server whose answers a test scripts, for the summary tests.

``POST /v1/chat/completions`` answers each request with ``script(body)`` as the assistant
message (JSON text), with a ``usage`` block, in the OpenAI response shape; ``fail_statuses``
makes the next requests fail with those HTTP statuses instead. Every request body is kept, so a
test can count calls (zero for a bot without ``enable_actions``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from control_plane.intelligence.openai_chat import OpenAIChatModel
from tests.ports import free_port

Script = Callable[[dict[str, Any]], dict[str, Any]]
"""Request body → the answer object the model returns."""


class ScriptedServer:
    """The server's state: its script, the statuses to fail with next, the requests seen."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.fail_statuses: list[int] = []
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        self.requests.append(body)
        if self.fail_statuses:
            status = self.fail_statuses.pop(0)
            return web.json_response({"error": {"message": f"scripted {status}"}}, status=status)
        content = json.dumps(self.script(body))
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content},
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140},
            }
        )

    def chat(self) -> OpenAIChatModel:
        """A real OpenAI-SDK client of this server (close it with ``aclose``)."""
        return OpenAIChatModel(
            base_url=self.base_url, api_key="test", model="scripted", request_timeout=10.0
        )


@asynccontextmanager
async def scripted_server(script: Script) -> AsyncIterator[ScriptedServer]:
    """Serve ``script`` on a free loopback port until the block ends."""
    server = ScriptedServer(script)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    server.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield server
    finally:
        await runner.cleanup()


def user_text(body: dict[str, Any]) -> str:
    """The user message of a request (the numbered transcript or the parts' summaries)."""
    return str(body["messages"][-1]["content"])


def is_merge(body: dict[str, Any]) -> bool:
    """Whether the request is a reduce call (merging parts' summaries)."""
    response_format = body.get("response_format") or {}
    name = (response_format.get("json_schema") or {}).get("name")
    return name == "meeting_summary_merge" or user_text(body).startswith("Part 1:")
