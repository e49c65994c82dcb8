"""A real OpenAI-compatible HTTP server for tests: ``POST /v1/chat/completions``.

Requests are answered by the real local model (the ``local`` provider's xllamacpp server,
which takes OpenAI request bodies as they are). The test can make the server slow, fail with
an HTTP status for the next requests, or reject ``response_format: json_schema`` with 400 as
servers without structured output do; it counts every request it receives.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from agent.actions.local_provider import LocalActionDetector
from tests.ports import free_port


class ChatServer:
    """State and behaviour of one server.

    Attributes:
        requests: Bodies received, in order.
        fail_statuses: Statuses to answer the next requests with (consumed one a request).
        delay: Seconds to hang before answering 504 (longer than the client's timeout).
        reject_json_schema: Answer 400 to ``response_format.type == "json_schema"``.
        answer: When set, the assistant message of every answer (a fixed model, for tests of
            what surrounds the model), in the OpenAI response shape.
    """

    def __init__(self, model: LocalActionDetector | None) -> None:
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.fail_statuses: list[int] = []
        self.delay = 0.0
        self.reject_json_schema = False
        self.answer: str | None = None
        self._lock = asyncio.Lock()
        self.base_url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        self.requests.append(body)
        if self.delay:
            # A hung upstream: the client gives up first; this answer reaches nobody and
            # must not consume the statuses or the model meant for later requests.
            await asyncio.sleep(self.delay)
            return web.json_response({"error": {"message": "upstream timed out"}}, status=504)
        if self.fail_statuses:
            status = self.fail_statuses.pop(0)
            error = {"error": {"message": "injected", "code": status}}
            return web.json_response(error, status=status)
        response_format = body.get("response_format") or {}
        if self.reject_json_schema and response_format.get("type") == "json_schema":
            return web.json_response(
                {"error": {"message": "response_format json_schema not supported"}}, status=400
            )
        if self.answer is not None:
            return web.json_response(_completion(self.answer))
        if self.model is None:
            return web.json_response({"error": {"message": "no model"}}, status=503)
        async with self._lock:
            result = await asyncio.to_thread(self.model.complete, body)
        if "error" in result:
            return web.json_response(result, status=500)
        return web.json_response(result)


def _completion(content: str) -> dict[str, Any]:
    """An OpenAI chat-completions response carrying ``content``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "fixed",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


@asynccontextmanager
async def serve(model: LocalActionDetector | None) -> AsyncIterator[ChatServer]:
    """Run a :class:`ChatServer` on a free loopback port; ``base_url`` ends in ``/v1``."""
    server = ChatServer(model)
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
