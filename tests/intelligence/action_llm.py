"""A real OpenAI-compatible HTTP server answering action detection by keyword rules.

``POST /v1/chat/completions`` reads the numbered window of the detection prompt ("Transcript
lines:" then ``[n] Speaker: text``) and answers in the OpenAI response shape with JSON of the
detection schema: a line containing "I'll" or "I will" is an action item owned by its speaker,
"we decided" a decision, a line ending in "?" a question (each citing its own line); the meeting
summary's calls are answered by the same rules (:func:`summary_answer`). It keeps every
request, counts the answers it gave per window (the window's text), and can hold answers back
(``hold``: requests wait until released or their client hangs up, as a model busy with other
work) or fail the next requests with HTTP statuses.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from control_plane.intelligence.openai_chat import OpenAIChatModel
from tests.ports import free_port

_NUMBERED = re.compile(r"^\[(\d+)\] ([^:]+): (.*)$")


def window_of(body: dict[str, Any]) -> str:
    """The numbered window of a detection request (its last user message after "Transcript
    lines:"; the user messages before it are the prompt's worked examples)."""
    user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    return str(user).split("Transcript lines:\n", 1)[1]


def keyword_answer(window: str) -> dict[str, Any]:
    """The detection answer the keyword rules give for ``window``."""
    actions = []
    for raw in window.splitlines():
        found = _NUMBERED.match(raw.strip())
        if found is None:
            continue
        number, speaker, text = int(found[1]), found[2], found[3].strip()
        if "I'll" in text or "I will" in text:
            kind, owner = "action_item", speaker
        elif "we decided" in text.lower():
            kind, owner = "decision", None
        elif text.endswith("?"):
            kind, owner = "question", None
        else:
            continue
        actions.append({"type": kind, "text": text, "owner": owner, "due": None, "lines": [number]})
    return {"actions": actions}


SUMMARY_SCHEMAS = frozenset({"meeting_summary", "meeting_summary_merge"})
"""``json_schema`` names of the meeting summary's calls (docs/api.md 2.14)."""


def schema_name(body: dict[str, Any]) -> str | None:
    """The ``json_schema`` name a request asks for, or None."""
    response_format = body.get("response_format") or {}
    name = (response_format.get("json_schema") or {}).get("name")
    return str(name) if name else None


def summary_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The meeting summary's answer by the same keyword rules.

    A part (numbered lines as the user message): its decisions and action items as
    :func:`keyword_answer` finds them (owners left to the control plane's grounding), and a
    summary naming how many lines it read. A merge: the parts' summaries joined.
    """
    user = str(next(m["content"] for m in body["messages"] if m["role"] == "user"))
    if schema_name(body) == "meeting_summary_merge":
        return {"summary": " ".join(user.split())}
    found = keyword_answer(user)["actions"]
    return {
        "summary": f"A meeting of {len(user.splitlines())} lines.",
        "decisions": [
            {"text": a["text"], "lines": a["lines"]} for a in found if a["type"] == "decision"
        ],
        "action_items": [
            {"text": a["text"], "owner": None, "due": None, "lines": a["lines"]}
            for a in found
            if a["type"] == "action_item"
        ],
    }


class ActionServer:
    """State of one server.

    Attributes:
        requests: Bodies received, in order.
        answered: Answers given, per window text.
        fail_statuses: Statuses to answer the next requests with (one consumed a request).
        models: When not empty, the only models served: a request naming another is answered
            404 ``model_not_found``, as OpenAI answers an unknown model.
        hold: While set, requests wait (see :meth:`release`).
        waiting: Requests waiting now.
        unheard: Held requests not answered because their client was gone (:meth:`forget_held`).
        base_url: ``http://127.0.0.1:<port>/v1`` once serving.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answered: Counter[str] = Counter()
        self.fail_statuses: list[int] = []
        self.models: set[str] = set()
        self.hold = False
        self.waiting = 0
        self.unheard = 0
        self._generation = 0
        self._released = asyncio.Event()
        self.base_url = ""

    def forget_held(self) -> None:
        """The clients of the requests held now are gone: they will not be answered."""
        self._generation += 1

    def release(self) -> None:
        """Let held requests (and later ones) be answered."""
        self.hold = False
        self._released.set()

    async def handle(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        self.requests.append(body)
        if self.fail_statuses:
            status = self.fail_statuses.pop(0)
            return web.json_response({"error": {"message": f"scripted {status}"}}, status=status)
        if self.models and body.get("model") not in self.models:
            error = {
                "message": f"The model `{body.get('model')}` does not exist",
                "type": "invalid_request_error",
                "code": "model_not_found",
            }
            return web.json_response({"error": error}, status=404)
        if self.hold:
            generation = self._generation
            self.waiting += 1
            try:
                await self._released.wait()
            finally:
                self.waiting -= 1
            if generation < self._generation:
                # Held when its client was killed (:meth:`forget_held`): nobody gets this.
                self.unheard += 1
                return web.json_response({"error": {"message": "client gone"}}, status=503)
        if schema_name(body) in SUMMARY_SCHEMAS:
            content = json.dumps(summary_answer(body))
        else:
            window = window_of(body)
            self.answered[window] += 1
            content = json.dumps(keyword_answer(window))
        return web.json_response(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "keywords"),
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

    def chat(self, request_timeout: float = 30.0) -> OpenAIChatModel:
        """A real OpenAI-SDK client of this server (close it with ``aclose``)."""
        return OpenAIChatModel(
            base_url=self.base_url,
            api_key="test",
            model="keywords",
            request_timeout=request_timeout,
        )


@asynccontextmanager
async def serve_actions() -> AsyncIterator[ActionServer]:
    """Run an :class:`ActionServer` on a free loopback port."""
    server = ActionServer()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    server.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield server
    finally:
        server.release()
        await runner.cleanup()
