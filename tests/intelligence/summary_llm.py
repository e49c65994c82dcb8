"""The summary tests' model: :mod:`tests.intelligence.chat_server` answering by a script.

``scripted_server(script)`` serves ``json.dumps(script(body))`` for every request (a real
OpenAI-compatible HTTP server, reached through the ``openai`` SDK by :func:`chat_of`); the
server keeps every request body and fails the next ones with ``fail_statuses``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from control_plane.intelligence.openai_chat import OpenAIChatModel
from tests.intelligence.chat_server import ChatServer, serve

Script = Callable[[dict[str, Any]], dict[str, Any]]
"""Request body → the answer object the model returns."""


@asynccontextmanager
async def scripted_server(script: Script) -> AsyncIterator[ChatServer]:
    """A chat server on loopback answering ``script(body)`` as JSON until the block ends."""
    async with serve() as server:
        server.script = lambda body: json.dumps(script(body))
        yield server


def chat_of(server: ChatServer) -> OpenAIChatModel:
    """A real OpenAI-SDK client of ``server``, named ``openai/scripted``; close it with aclose."""
    return OpenAIChatModel(
        base_url=server.base_url, api_key="test", model="scripted", request_timeout=10.0
    )


def user_text(body: dict[str, Any]) -> str:
    """The user message of a request (the numbered transcript or the parts' summaries)."""
    return str(body["messages"][-1]["content"])


def is_merge(body: dict[str, Any]) -> bool:
    """Whether the request is a reduce call (merging parts' summaries)."""
    response_format = body.get("response_format") or {}
    return (response_format.get("json_schema") or {}).get("name") == "meeting_summary_merge"
