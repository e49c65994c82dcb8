"""The ``local`` provider: a GGUF model run in this process by ``xllamacpp``.

xllamacpp embeds llama.cpp's server and takes OpenAI chat-completions request bodies as dicts;
the answer is constrained to :data:`agent.actions.prompt.ANSWER_SCHEMA` by its grammar engine.
Calls are blocking, so each runs in a worker thread; a lock keeps one generation at a time.
The model file comes from :func:`agent.actions.local_models.resolve_local_model`.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from agent.actions.errors import DetectorError
from agent.actions.model import Detection, DetectionRequest
from agent.actions.prompt import build_messages, estimate_tokens, parse_answer, response_format

log = logging.getLogger(__name__)


class LocalActionDetector:
    """Detector over an in-process llama.cpp model.

    Build it with :meth:`load` (loading takes seconds and runs in a thread).
    """

    def __init__(self, server: Any, model_name: str, max_output_tokens: int) -> None:
        self._server: Any = server
        self._model_name = model_name
        self._max_tokens = max_output_tokens
        self._lock = asyncio.Lock()

    @classmethod
    def open_blocking(
        cls,
        model_path: Path,
        *,
        model_name: str,
        threads: int = 1,
        context_tokens: int = 4096,
        max_output_tokens: int = 384,
    ) -> LocalActionDetector:
        """Load ``model_path`` (GGUF) into an embedded llama.cpp server (blocking, seconds).

        Raises:
            DetectorError: xllamacpp is not installed or the model does not load.
        """
        try:
            # Imported on use: with actions off or the openai provider, no llama.cpp.
            import xllamacpp  # type: ignore[import-untyped]  # ships no type hints
        except ModuleNotFoundError as exc:
            raise DetectorError("the local provider needs the 'xllamacpp' package") from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(model_path)
        params.n_ctx = context_tokens
        params.n_predict = max_output_tokens
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.sampling.temp = 0
        params.sampling.top_k = 1
        params.warmup = False
        params.verbosity = -1
        try:
            server = xllamacpp.Server(params)
        except Exception as exc:  # the binding raises plain RuntimeError/ValueError
            raise DetectorError(f"local model {model_path} did not load: {exc}") from exc
        log.info("local action model loaded", extra={"model": model_name, "threads": threads})
        return cls(server, model_name, max_output_tokens)

    @classmethod
    async def load(
        cls,
        model_path: Path,
        *,
        model_name: str,
        threads: int = 1,
        context_tokens: int = 4096,
        max_output_tokens: int = 384,
    ) -> LocalActionDetector:
        """:meth:`open_blocking` in a worker thread."""
        return await asyncio.to_thread(
            cls.open_blocking,
            model_path,
            model_name=model_name,
            threads=threads,
            context_tokens=context_tokens,
            max_output_tokens=max_output_tokens,
        )

    @property
    def name(self) -> str:
        """``local/{model}``."""
        return f"local/{self._model_name}"

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Run one OpenAI chat-completions request body through the model (blocking).

        Used by :meth:`detect` and by anything that serves this model over HTTP (tests,
        benchmarks). Returns the OpenAI-shaped response dict, or ``{"error": …}``.
        """
        result: dict[str, Any] = self._server.handle_chat_completions(body)
        return result

    async def detect(self, request: DetectionRequest) -> Detection:
        """One constrained generation for ``request`` (see :class:`ActionDetector`)."""
        messages = build_messages(request)
        body = {
            "messages": messages,
            "max_tokens": self._max_tokens,
            "temperature": 0,
            "response_format": response_format("json_schema"),
        }
        async with self._lock:
            if self._server is None:
                raise DetectorError("local detector is closed")
            result = await asyncio.to_thread(self.complete, body)
        if "error" in result:
            raise DetectorError(f"local model failed: {result['error']}")
        try:
            content = str(result["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError) as exc:
            raise DetectorError(f"local model answered without a message: {result!r:.200}") from exc
        actions, dropped = parse_answer(content, request)
        usage = result.get("usage") or {}
        prompt_tokens = int(
            usage.get("prompt_tokens") or estimate_tokens("".join(m["content"] for m in messages))
        )
        completion_tokens = int(usage.get("completion_tokens") or estimate_tokens(content))
        return Detection(tuple(actions), prompt_tokens, completion_tokens, dropped)

    async def aclose(self) -> None:
        """Free the model (waits for a generation in progress); later calls fail."""
        async with self._lock:
            self._server = None
