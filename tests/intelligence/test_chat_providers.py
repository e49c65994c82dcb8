"""The OpenAI-compatible provider over real HTTP (a loopback server with fixed answers) and the
factory that builds the replica's model from settings; no model runs here."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from pydantic import SecretStr

from control_plane.intelligence.action_prompt import ANSWER_SCHEMA, SCHEMA_NAME
from control_plane.intelligence.chat import (
    ChatAnswerInvalid,
    ChatError,
    ChatMessage,
    ChatUnavailable,
)
from control_plane.intelligence.chat_wiring import (
    CHAT_MODEL,
    ChatSettingsRefused,
    chat_model_ctx,
    open_chat_model,
)
from control_plane.intelligence.detection import DetectionRequest, WindowLine, detect_actions
from control_plane.intelligence.embedded_chat import EmbeddedChatModel
from control_plane.intelligence.models import ModelUnavailable
from control_plane.intelligence.openai_chat import OpenAIChatModel
from control_plane.settings import SETTINGS, Settings
from tests.intelligence.chat_server import serve
from tests.ports import free_port

pytestmark = pytest.mark.unit

MESSAGES = [ChatMessage("system", "Answer in JSON."), ChatMessage("user", "Anything?")]
ANSWER = (
    '{"actions": [{"type": "question", "text": "who owns QA?", "owner": null, "due": null, '
    '"lines": [1]}]}'
)
WINDOW = DetectionRequest(lines=(WindowLine("seg-1", "Dana", None, 0.0, 2.0, "who owns QA?"),))


def _chat(base_url: str, request_timeout: float = 30.0) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=base_url, api_key="k", model="m", request_timeout=request_timeout
    )


async def test_schema_first_then_json_object_then_plain_and_the_mode_is_kept() -> None:
    async with serve() as server:
        server.answer = f"Here you are:\n```json\n{ANSWER}\n```"
        server.refused_formats = {"json_schema", "json_object"}
        chat = _chat(server.base_url)
        try:
            detection = await detect_actions(chat, WINDOW, max_tokens=64)
            again = await detect_actions(chat, WINDOW, max_tokens=64)
        finally:
            await chat.aclose()
    sent = [r.get("response_format", {}).get("type") for r in server.requests]
    assert sent == ["json_schema", "json_object", None, None]
    assert chat.mode == "plain"
    first = server.requests[0]
    assert first["model"] == "m" and first["temperature"] == 0 and first["max_tokens"] == 64
    assert first["response_format"]["json_schema"]["name"] == SCHEMA_NAME
    assert first["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA
    roles = [m["role"] for m in first["messages"]]
    # The system prompt, the worked examples as earlier turns, then the window.
    assert roles[0] == "system" and roles[-1] == "user"
    assert roles[1:-1] == ["user", "assistant"] * ((len(roles) - 2) // 2)
    assert [a.segment_ids for a in detection.actions] == [("seg-1",)]
    assert detection.prompt_tokens == 100 and detection.completion_tokens == 20
    assert again.actions == detection.actions


@pytest.mark.parametrize("status", [429, 500, 502, 503])
async def test_rate_limits_and_server_errors_are_transient(status: int) -> None:
    async with serve() as server:
        server.fail_statuses = [status]
        chat = _chat(server.base_url)
        try:
            with pytest.raises(ChatUnavailable, match=str(status)):
                await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
        finally:
            await chat.aclose()
    assert len(server.requests) == 1  # the SDK's own retries are off


async def test_a_refused_key_is_not_transient() -> None:
    async with serve() as server:
        server.fail_statuses = [401]
        chat = _chat(server.base_url)
        try:
            with pytest.raises(ChatError, match="401") as raised:
                await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
        finally:
            await chat.aclose()
    assert not isinstance(raised.value, ChatUnavailable)


async def test_a_request_refused_in_every_mode_is_an_error() -> None:
    async with serve() as server:
        server.answer = ANSWER
        server.fail_statuses = [400]
        chat = OpenAIChatModel(base_url=server.base_url, api_key="k", model="m", mode="plain")
        try:
            with pytest.raises(ChatError, match="rejected"):
                await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
        finally:
            await chat.aclose()


async def test_a_hung_server_and_a_closed_port_are_transient() -> None:
    async with serve() as server:
        server.delay = 1.0
        chat = _chat(server.base_url, request_timeout=0.2)
        try:
            with pytest.raises(ChatUnavailable, match="Timeout"):
                await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
        finally:
            await chat.aclose()
    closed = _chat(f"http://127.0.0.1:{free_port()}/v1")
    try:
        with pytest.raises(ChatUnavailable, match="Connection"):
            await closed.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
    finally:
        await closed.aclose()


@pytest.mark.parametrize("answer", ["no json at all", "[1, 2]", '{"actions": 5}'])
async def test_answers_that_are_not_the_object_asked_for_are_invalid(answer: str) -> None:
    async with serve() as server:
        server.answer = answer
        chat = _chat(server.base_url)
        try:
            with pytest.raises(ChatAnswerInvalid):
                await detect_actions(chat, WINDOW, max_tokens=8)
        finally:
            await chat.aclose()


async def test_tokens_are_estimated_when_the_server_reports_none() -> None:
    async with serve() as server:
        server.answer = ANSWER
        server.with_usage = False
        chat = _chat(server.base_url)
        try:
            answer = await chat.complete_json(
                MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8
            )
        finally:
            await chat.aclose()
    assert answer.prompt_tokens == len("Answer in JSON.Anything?") // 4
    assert answer.completion_tokens == len(ANSWER) // 4
    assert answer.seconds > 0


def test_the_openai_provider_needs_a_key_or_an_endpoint(tmp_path: Path) -> None:
    with pytest.raises(ChatSettingsRefused, match="MEETBOT_INTELLIGENCE_API_KEY"):
        open_chat_model(Settings(data_dir=tmp_path, intelligence_provider="openai"))
    with pytest.raises(ChatSettingsRefused, match="MEETBOT_INTELLIGENCE_MODEL"):
        open_chat_model(
            Settings(
                data_dir=tmp_path,
                intelligence_provider="openai",
                intelligence_api_key=SecretStr("sk-x"),
                intelligence_model="",
            )
        )


async def test_the_embedded_default_loads_nothing_until_used_and_reports_a_bad_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "absent.gguf"
    settings = Settings(data_dir=Path("data"), intelligence_embedded_model=str(missing))
    chat = open_chat_model(settings)
    assert isinstance(chat, EmbeddedChatModel) and chat.name == "embedded/absent"
    try:
        with pytest.raises(ModelUnavailable, match="neither a packaged model") as first:
            await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
        # Not retried: the same failure until the operator fixes it and restarts.
        with pytest.raises(ModelUnavailable) as second:
            await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
        assert second.value is first.value
    finally:
        await chat.aclose()
    with pytest.raises(ChatError, match="closed"):
        await chat.load()
    with pytest.raises(ValueError, match="absolute"):
        EmbeddedChatModel(model="x", models_dir=Path("relative"))


async def test_the_app_holds_one_model_while_it_runs(tmp_path: Path) -> None:
    async with serve() as server:
        server.answer = ANSWER
        app = web.Application()
        app[SETTINGS] = Settings(
            data_dir=tmp_path,
            intelligence_provider="openai",
            intelligence_base_url=server.base_url,
            intelligence_model="served",
        )
        context: AsyncIterator[None] = chat_model_ctx(app)
        await anext(context)
        chat = app[CHAT_MODEL]
        assert chat.name == "openai/served"
        await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
        with pytest.raises(StopAsyncIteration):
            await anext(context)
    assert server.requests[0]["model"] == "served"
    with pytest.raises(ChatError, match="closed"):  # closed with the application
        await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)


async def test_the_openai_provider_sends_the_model_a_call_names() -> None:
    async with serve() as server:
        chat = OpenAIChatModel(base_url=server.base_url, api_key="k", model="configured")
        try:
            await detect_actions(chat, WINDOW, max_tokens=8, model="gpt-4o")
            await chat.complete_json(MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8)
        finally:
            await chat.aclose()
    assert [body["model"] for body in server.requests] == ["gpt-4o", "configured"]


async def test_the_embedded_provider_refuses_another_model_before_loading(
    tmp_path: Path,
) -> None:
    # A GGUF path that does not exist: any load would fail with ModelUnavailable.
    chat = EmbeddedChatModel(model=str(tmp_path / "phi-3.gguf"), models_dir=tmp_path)
    assert chat.served_model == "phi-3" and chat.name == "embedded/phi-3"
    try:
        with pytest.raises(ChatError) as refused:
            await chat.complete_json(
                MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8, model="gpt-4o"
            )
        assert not isinstance(refused.value, ModelUnavailable)
        assert str(refused.value) == (
            "model 'gpt-4o' is not served here: the embedded provider serves 'phi-3'"
        )
        with pytest.raises(ChatError, match="not served here"):
            await detect_actions(chat, WINDOW, max_tokens=8, model="qwen2.5-coder-1.5b-instruct")
        # Its own name is served: the call goes on to load the (absent) file.
        with pytest.raises(ModelUnavailable, match="neither a packaged model"):
            await chat.complete_json(
                MESSAGES, ANSWER_SCHEMA, schema_name="a", max_tokens=8, model="phi-3"
            )
    finally:
        await chat.aclose()
    packaged = EmbeddedChatModel(model="qwen2.5-coder-0.5b-instruct", models_dir=tmp_path)
    assert packaged.served_model == "qwen2.5-coder-0.5b-instruct"
    await packaged.aclose()
