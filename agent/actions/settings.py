"""Settings of action detection on the agent host (environment prefix ``MEETBOT_ACTIONS_``).

Whether a bot detects actions at all is per bot (``BotSettings.enable_actions``); these
settings say how: which provider, which endpoint or local model, and the per-bot windowing and
budget. Build one object in the entry point and pass it down; nothing else reads the
environment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class ActionSettings(BaseSettings):
    """How actions are detected (environment prefix ``MEETBOT_ACTIONS_``).

    Durations are seconds; budgets are per bot.

    Attributes:
        provider: ``local`` (a GGUF model run in-process by xllamacpp) or ``openai`` (any
            OpenAI-compatible ``/v1/chat/completions`` endpoint: OpenAI, Azure, Ollama, vLLM,
            a llama.cpp server).
        llm_base_url: Base URL of the OpenAI-compatible API, e.g. ``http://127.0.0.1:8080/v1``;
            empty uses the SDK's default (api.openai.com).
        llm_api_key: Bearer key of that API (any non-empty string for servers without auth).
        llm_model: Model name sent with each request; a bot's ``ActionPrompt.model`` wins.
        llm_connect_timeout_seconds: Time allowed to connect to the API.
        llm_request_timeout_seconds: Time allowed for one whole call (either provider).
        local_model: Name of a packaged model (:data:`agent.actions.local_models.LOCAL_MODELS`)
            or a path to a GGUF file.
        local_threads: CPU threads of the local model. 1 by default: on a host whose cores
            are busy (whisper, Chromium) llama.cpp's spinning threads thrash; measured here with
            a loaded 2-core machine, 1 thread generated 5.4 tokens/s and 2 threads 1.7.
        local_context_tokens: Context window of the local model.
        models_dir: Where packaged models are assembled once (shared with whisper's cache).
        max_output_tokens: Longest answer asked for.
        window_pause_seconds: Silence (no new completed segment) that closes a window.
        window_max_speech_seconds: Speech that closes a window even without a pause.
        calls_per_minute: Budget of detector calls per bot per rolling minute.
        tokens_per_minute: Budget of prompt + completion tokens per bot per rolling minute.
        queue_size: Segments buffered for the detector; beyond it the oldest are dropped.
        max_attempts: Tries of one window on transient errors (timeouts, 5xx) before giving up.
        retry_base_seconds: First backoff; doubles per try up to ``retry_max_seconds``.
        retry_max_seconds: Longest backoff.
        dedupe_similarity: Normalised-text similarity (0-1) at which an action of the same
            type counts as already reported.
    """

    model_config = SettingsConfigDict(env_prefix="MEETBOT_ACTIONS_", frozen=True, extra="ignore")

    provider: Literal["local", "openai"] = "local"

    llm_base_url: str = ""
    llm_api_key: SecretStr = SecretStr("")
    llm_model: str = "gpt-4o-mini"
    llm_connect_timeout_seconds: float = Field(default=5.0, gt=0)
    llm_request_timeout_seconds: float = Field(default=120.0, gt=0)

    local_model: str = "qwen2.5-coder-0.5b-instruct"
    local_threads: int = Field(default=1, ge=1, le=64)
    local_context_tokens: int = Field(default=4096, ge=512, le=131072)
    models_dir: Path = Path("./data/models")

    max_output_tokens: int = Field(default=384, ge=32, le=8192)
    window_pause_seconds: float = Field(default=4.0, gt=0)
    window_max_speech_seconds: float = Field(default=30.0, gt=0)
    calls_per_minute: int = Field(default=6, ge=1)
    tokens_per_minute: int = Field(default=20_000, ge=256)
    queue_size: int = Field(default=512, ge=1)
    max_attempts: int = Field(default=3, ge=1, le=10)
    retry_base_seconds: float = Field(default=1.0, gt=0)
    retry_max_seconds: float = Field(default=30.0, gt=0)
    dedupe_similarity: float = Field(default=0.8, gt=0, le=1)
