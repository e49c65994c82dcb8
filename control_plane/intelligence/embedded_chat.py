"""The ``embedded`` provider: one GGUF model per replica, run in-process by ``xllamacpp``.

xllamacpp embeds llama.cpp's HTTP server without the HTTP: it takes OpenAI chat-completions
request bodies as dicts and answers them with the server's own scheduler. The model is opened
with ``slots`` parallel sequences and continuous batching, so the windows of several meetings
decode together in one batch instead of queueing behind one lock; each call holds one thread
of this provider's pool (``slots`` threads) while llama.cpp works, the GIL released. Answers are
constrained to the caller's JSON schema by llama.cpp's grammar engine (``response_format:
json_schema`` is turned into a grammar).

The model loads lazily, on the first call, in a thread of the pool: a replica that never
analyses a meeting never spends the memory (~0.6 GB for the default) or the one-time join of
its packaged parts, ``meetbot serve`` starts at once, and the event loop never blocks. Calls
that arrive while it loads wait for it. A load that failed (missing package, wrong digest,
unwritable data directory) is not retried: every call raises the same :class:`ModelUnavailable`
until the operator fixes the cause and restarts the replica.

Threads: llama.cpp's workers spin while they wait, so on a host whose cores are busy more
threads can be slower; measured on the 2-core machine of this project (see
docs/architecture.md, "the embedded model") and set by ``MEETBOT_INTELLIGENCE_EMBEDDED_THREADS``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from control_plane.action_prompts.service import embedded_model_name
from control_plane.intelligence.chat import (
    ChatAnswer,
    ChatError,
    ChatMessage,
)
from control_plane.intelligence.completions import chat_answer, request_messages, schema_format
from control_plane.intelligence.models import ModelUnavailable, resolve_model

log = logging.getLogger(__name__)


def _count(usage: Mapping[str, Any], field: str) -> int | None:
    """llama.cpp's token count ``field`` of ``usage``; None (to be estimated) when absent or 0."""
    value = usage.get(field)
    return int(value) if value else None


def _open_server(path: Path, *, threads: int, slots: int, context_tokens: int) -> Any:
    """An xllamacpp server over the GGUF at ``path`` (blocking, seconds)."""
    try:
        # Imported on use: the openai provider and the bot image need no llama.cpp.
        import xllamacpp  # type: ignore[import-untyped]  # ships no type hints
    except ModuleNotFoundError as exc:
        raise ModelUnavailable(
            "the embedded provider needs the 'xllamacpp' package (pip install "
            "'meetbot[intelligence]')"
        ) from exc
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    # llama.cpp splits n_ctx evenly over the slots: each slot gets context_tokens.
    params.n_ctx = context_tokens * slots
    params.n_parallel = slots
    params.cont_batching = True
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.sampling.temp = 0
    params.sampling.top_k = 1
    params.warmup = False
    params.verbosity = -1
    try:
        return xllamacpp.Server(params)
    except Exception as exc:  # the binding raises plain RuntimeError/ValueError
        raise ModelUnavailable(f"embedded model {path} did not load: {exc}") from exc


class EmbeddedChatModel:
    """A :class:`~control_plane.intelligence.chat.ChatModel` over an in-process llama.cpp.

    It serves exactly one model, whose name is :attr:`served_model`; a call naming another
    is refused.

    Args:
        model: A packaged model name (:data:`.models.PACKAGED_MODELS`) or a GGUF path.
        models_dir: Absolute folder where split packaged models are joined once.
        threads: CPU threads of llama.cpp (generation and prompt processing).
        slots: Sequences decoded at once (calls beyond them wait for a free one).
        context_tokens: Context of each slot (prompt plus answer), in tokens.
    """

    def __init__(
        self,
        *,
        model: str,
        models_dir: Path,
        threads: int = 1,
        slots: int = 4,
        context_tokens: int = 2048,
    ) -> None:
        if not models_dir.is_absolute():
            raise ValueError(f"models_dir must be absolute, got {models_dir}")
        if threads < 1 or slots < 1 or context_tokens < 256:
            raise ValueError("threads and slots must be at least 1, context_tokens at least 256")
        self._model = model
        self._models_dir = models_dir
        self._threads = threads
        self._slots = slots
        self._context_tokens = context_tokens
        self._pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="embedded-llm")
        self._server: Any = None
        self._loading: Future[None] | None = None
        self._closed = False

    @property
    def name(self) -> str:
        """``embedded/{served_model}``."""
        return f"embedded/{self.served_model}"

    @property
    def served_model(self) -> str:
        """The one model served (``control_plane.action_prompts.service.embedded_model_name``).

        The packaged model's name, or the GGUF file's name without ``.gguf`` when the provider
        was configured with a path.
        """
        return embedded_model_name(self._model)

    @property
    def slots(self) -> int:
        """Sequences decoded at once."""
        return self._slots

    def _load_blocking(self) -> None:
        try:
            path = resolve_model(self._model, self._models_dir)
        except OSError as exc:
            raise ModelUnavailable(f"embedded model could not be prepared: {exc}") from exc
        started = time.monotonic()
        self._server = _open_server(
            path, threads=self._threads, slots=self._slots, context_tokens=self._context_tokens
        )
        log.info(
            "embedded language model loaded",
            extra={
                "model": self.name,
                "path": str(path),
                "threads": self._threads,
                "slots": self._slots,
                "seconds": round(time.monotonic() - started, 2),
            },
        )

    async def load(self) -> None:
        """Load the model if it is not loaded yet (in a pool thread); idempotent.

        Calls do this themselves; a benchmark or a warm-up may call it first.

        Raises:
            ModelUnavailable: The model cannot be prepared or loaded (also on every later call).
            ChatError: The provider is closed.
        """
        if self._closed:
            raise ChatError("embedded model is closed")
        if self._loading is None:
            self._loading = self._pool.submit(self._load_blocking)
        # Shielded: a caller cancelled while waiting leaves the load running for the others.
        await asyncio.shield(asyncio.wrap_future(self._loading))

    def _complete_blocking(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._server.handle_chat_completions(body)
        return result

    async def complete_json(
        self,
        messages: Sequence[ChatMessage],
        schema: Mapping[str, Any],
        *,
        schema_name: str,
        max_tokens: int,
        model: str | None = None,
    ) -> ChatAnswer:
        """One grammar-constrained generation (see :meth:`ChatModel.complete_json`).

        ``seconds`` counts from this call: the wait for the model's load and for a free slot
        are included. ``model`` may be None or :attr:`served_model`; another name is refused
        before anything is loaded.

        Raises:
            ModelUnavailable: The model cannot be loaded.
            ChatAnswerInvalid: The answer is not a JSON object (cut by ``max_tokens``).
            ChatError: ``model`` names a model not served here, llama.cpp refused or failed the
                request (e.g. the prompt exceeds a slot's context), or the provider is closed.
        """
        if model is not None and model != self.served_model:
            raise ChatError(
                f"model {model!r} is not served here: the embedded provider serves "
                f"{self.served_model!r}"
            )
        started = time.monotonic()
        await self.load()
        body = {
            "messages": request_messages(messages),
            "max_tokens": max_tokens,
            "temperature": 0,
            "response_format": schema_format(schema, schema_name),
        }
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._pool, self._complete_blocking, body)
        except RuntimeError as exc:
            # The pool refuses new work once aclose began; llama.cpp raises RuntimeError too.
            raise ChatError(f"embedded model failed: {exc}") from exc
        seconds = time.monotonic() - started
        if "error" in result:
            raise ChatError(f"embedded model refused the request: {result['error']!r:.300}")
        try:
            content = str(result["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError) as exc:
            raise ChatError(f"embedded model answered without a message: {result!r:.200}") from exc
        usage = result.get("usage") or {}
        return chat_answer(
            content,
            messages,
            seconds,
            prompt_tokens=_count(usage, "prompt_tokens"),
            completion_tokens=_count(usage, "completion_tokens"),
        )

    async def aclose(self) -> None:
        """Wait for the load and the generations in progress, then free the model."""
        self._closed = True
        if self._loading is not None:
            await asyncio.gather(asyncio.wrap_future(self._loading), return_exceptions=True)
        # Waits for generations already running; queued ones run first (they are short).
        await asyncio.to_thread(self._pool.shutdown, wait=True)
        self._server = None
