"""The language-model seam: messages and a JSON schema in, the parsed JSON answer out.

Every use of a language model in the control plane (live action detection, the summary at
the end of a meeting) goes through one :class:`ChatModel`, shared by all meetings of the
replica. Implementations own the transport and the constrained decoding; callers own the
prompt, the schema, budgets, retries and what the answer means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable


class ChatError(Exception):
    """A call failed for a reason a retry will not fix (bad request, refused key)."""


class ChatUnavailable(ChatError):
    """A transient failure (timeout, connection refused, 429, 5xx); the same call may succeed."""


class ChatAnswerInvalid(ChatError):
    """The model's answer is not JSON of the schema asked for."""


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the conversation sent to the model.

    Attributes:
        role: ``system``, ``user`` or ``assistant``.
        content: The message text.
    """

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """What one call returned.

    Attributes:
        content: The answer parsed as JSON (an object; it matched the schema's structure when
            the provider could constrain decoding to it, callers validate it anyway).
        prompt_tokens: Tokens of the request (the server's count, else an estimate).
        completion_tokens: Tokens of the answer (the server's count, else an estimate).
        seconds: Wall-clock seconds the call took, queueing in the provider included.
    """

    content: Mapping[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


@runtime_checkable
class ChatModel(Protocol):
    """A chat-completions model that answers in JSON constrained to a schema.

    Implementations may serve several calls at once (an embedded model batches them in
    slots); each call is independent.
    """

    @property
    def name(self) -> str:
        """``provider/model`` for logs, metrics and benchmarks."""
        ...

    async def complete_json(
        self,
        messages: Sequence[ChatMessage],
        schema: Mapping[str, Any],
        *,
        schema_name: str,
        max_tokens: int,
        model: str | None = None,
    ) -> ChatAnswer:
        """Answer ``messages`` with one JSON object matching ``schema``.

        Args:
            messages: The conversation, system message first.
            schema: JSON schema of the answer (``type: object`` at the root).
            schema_name: A short ``[a-z_]+`` name of the schema (OpenAI's ``json_schema.name``).
            max_tokens: Longest answer, in tokens.
            model: The model to answer (an action prompt's ``model``); None for the model the
                provider was configured with. A provider that serves only one model refuses
                any other name with :class:`ChatError` before doing any work.

        Raises:
            ChatUnavailable: A transient failure; the same call may succeed later.
            ChatAnswerInvalid: The answer is not a JSON object.
            ChatError: Any other failure of the call, including a ``model`` the provider
                does not serve.
        """
        ...

    async def aclose(self) -> None:
        """Release the client or the model; no call may follow."""
        ...
