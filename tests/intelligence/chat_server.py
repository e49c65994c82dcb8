"""A real OpenAI-compatible HTTP server for the provider tests: ``POST /v1/chat/completions``.

Requests are answered with a fixed assistant message (or one a script makes of the request), in
the OpenAI response shape. The test
can make the server hang, fail the next requests with HTTP statuses, leave ``usage`` out, or
refuse ``response_format`` types with 400 as servers without structured output do; it keeps
every request body it receives.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from tests.ports import free_port


class ChatServer:
    """State and behaviour of one server.

    Attributes:
        requests: Bodies received, in order.
        fail_statuses: Statuses to answer the next requests with (consumed one a request).
        delay: Seconds to hang before answering 504 (longer than the client's timeout).
        refused_formats: ``response_format.type`` values answered with 400.
        answer: The assistant message of every answer.
        script: When set, the assistant message is ``script(body)`` instead (a model whose
            answer depends on the request, e.g. a summary's parts and their merge).
        with_usage: Whether answers carry ``usage`` (servers that omit it exist).
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_statuses: list[int] = []
        self.delay = 0.0
        self.refused_formats: set[str] = set()
        self.answer = '{"actions": []}'
        self.script: Callable[[dict[str, Any]], str] | None = None
        self.with_usage = True
        self.base_url = ""

    async def handle(self, request: web.Request) -> web.Response:
        """Answer one chat-completions request."""
        body: dict[str, Any] = await request.json()
        self.requests.append(body)
        if self.delay:
            # A hung upstream: the client gives up first.
            await asyncio.sleep(self.delay)
            return web.json_response({"error": {"message": "upstream timed out"}}, status=504)
        if self.fail_statuses:
            status = self.fail_statuses.pop(0)
            return web.json_response({"error": {"message": "injected"}}, status=status)
        response_format = body.get("response_format") or {}
        if response_format.get("type") in self.refused_formats:
            message = f"response_format {response_format['type']} not supported"
            return web.json_response({"error": {"message": message}}, status=400)
        content = self.answer if self.script is None else self.script(body)
        return web.json_response(self._completion(content, 100, 20))

    def _completion(self, content: str, prompt: int, completion: int) -> dict[str, Any]:
        """An OpenAI chat-completions response carrying ``content``."""
        response: dict[str, Any] = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        if self.with_usage:
            response["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return response


@asynccontextmanager
async def serve() -> AsyncIterator[ChatServer]:
    """Run a :class:`ChatServer` on a free loopback port; ``base_url`` ends in ``/v1``."""
    server = ChatServer()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    server.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield server
    finally:
        await runner.cleanup()
