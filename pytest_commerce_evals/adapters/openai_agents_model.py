"""`agents_model(client)`: an OpenAI Agents SDK `Model` answering from a chat-completions client,
so `--commerce-vacuity` drives a team's own Agents SDK agent from the plugin's scripted
`FakeClient`.

    @pytest.hookimpl(optionalhook=True)
    def pytest_commerce_evals_make_scripted_agent(config, case, backend, client):
        async def run(session, message):
            scripted = shop_agent(backend).clone(model=agents_model(client))
            result = await Runner.run(scripted, message, run_config=NO_TRACING)
            return result.new_items
        return framework_agent(run, events_from_agents_items)

(`NO_TRACING = RunConfig(tracing_disabled=True)`: a scripted run exports no traces.)

Each model call becomes one `client.chat.completions.create(model=..., messages=..., tools=...)`
request in chat-completions form (the SDK's own Chat Completions converter builds the messages
and the tool schemas, so the degenerate scripts see the user message, the tool results and the
tool names as they would from any agent), and the reply (`choices[0].message.content` and
`.tool_calls`, a `FakeClient` `Record` or an SDK `ChatCompletion`) becomes the SDK's
`ModelResponse`: a message item for the text, a function-call item per tool call, and the
reply's usage as its `usage` (a reply without usage: `Usage(requests=1)`, as the SDK's own
chat-completions model gives it). The client may be sync (`FakeClient`) or async
(`AsyncFakeClient`). `Runner.run` and `Runner.run_sync` are served; `Runner.run_streamed` is
not. Hosted tools (web search, file search) have no chat-completions form and raise the SDK's
`UserError` naming the tool. A tool that returned a dict or a list reaches the model as the SDK
writes it, `str(output)`; the request carries it as JSON, as a chat-completions agent would
send it.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from ..errors import ConfigurationError
from ..usage import tokens_of
from .core import python_literal

__all__ = ["agents_model"]


def _plain(value: Any) -> Any:
    """Messages as plain JSON data (the converter may leave iterables and models inside)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(exclude_none=True))
    if hasattr(value, "__iter__"):
        return [_plain(v) for v in value]
    return value


def _as_json(content: Any) -> Any:
    """A tool message's content; a dict or a list the SDK wrote as `str(output)` becomes JSON,
    as a chat-completions agent would send it (the degenerate scripts read IDs from JSON)."""
    value = python_literal(content)
    return json.dumps(value) if isinstance(value, (dict, list)) else content


def _read(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _output_items(reply: Any) -> list[Any]:
    """A chat-completions reply's message as the SDK's Responses output items."""
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    choices = _read(reply, "choices") or []
    if not choices:
        raise ConfigurationError(
            f"agents_model: the client's reply has no choices ({reply!r:.120}); it must read like "
            "a chat completion (choices[0].message)"
        )
    message = _read(choices[0], "message")
    items: list[Any] = []
    content = _read(message, "content")
    if content:
        items.append(
            ResponseOutputMessage(
                id="msg_scripted",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=content, annotations=[])],
            )
        )
    for call in _read(message, "tool_calls") or []:
        function = _read(call, "function")
        arguments = _read(function, "arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments or {})
        items.append(
            ResponseFunctionToolCall(
                type="function_call",
                call_id=str(_read(call, "id")),
                name=str(_read(function, "name")),
                arguments=arguments,
            )
        )
    return items


def _usage(usage_cls: Any, reported: Any) -> Any:
    """The reply's usage as the SDK's `Usage` of one request; none reported: `Usage(requests=1)`,
    as the SDK's own chat-completions model gives it (zeros the converter reports as none)."""
    inp, out, cached = tokens_of(reported)
    if inp is None and out is None:
        return usage_cls(requests=1)
    kwargs: dict[str, Any] = {}
    if cached is not None:
        from openai.types.completion_usage import PromptTokensDetails

        kwargs["input_tokens_details"] = PromptTokensDetails(cached_tokens=cached)
    return usage_cls(
        requests=1,
        input_tokens=inp or 0,
        output_tokens=out or 0,
        total_tokens=(inp or 0) + (out or 0),
        **kwargs,
    )


def agents_model(client: Any, model_name: str = "scripted") -> Any:
    """An `agents.Model` that asks `client.chat.completions.create(...)` (sync or async) for each
    response; use it with `agent.clone(model=agents_model(client))`. Needs `openai-agents`."""
    try:
        from agents import Model
        from agents.items import ModelResponse
        from agents.models.chatcmpl_converter import Converter
        from agents.usage import Usage
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ConfigurationError(
            "agents_model needs the OpenAI Agents SDK (pip install 'openai-agents', or the "
            f"[frameworks] extra of pytest-commerce-evals); importing it failed: {exc}"
        ) from exc

    class ScriptedChatModel(Model):
        """Each response from one chat-completions request to the scripted client."""

        def __init__(self) -> None:
            self.client = client
            self.model_name = model_name

        def request(self, system_instructions, input, tools, handoffs) -> dict[str, Any]:
            messages = _plain(Converter.items_to_messages(input))
            for message in messages:
                if message.get("role") == "tool":
                    message["content"] = _as_json(message.get("content"))
            if system_instructions:
                messages.insert(0, {"role": "system", "content": system_instructions})
            schemas = [Converter.tool_to_openai(tool) for tool in tools or []]
            schemas += [Converter.convert_handoff_tool(handoff) for handoff in handoffs or []]
            request: dict[str, Any] = {"model": self.model_name, "messages": messages}
            if schemas:
                request["tools"] = _plain(schemas)
            return request

        async def get_response(
            self,
            system_instructions,
            input,
            model_settings,
            tools,
            output_schema,
            handoffs,
            tracing,
            *,
            previous_response_id=None,
            conversation_id=None,
            prompt=None,
            **_: Any,
        ):
            request = self.request(system_instructions, input, tools, handoffs)
            reply = self.client.chat.completions.create(**request)
            if inspect.isawaitable(reply):
                reply = await reply
            return ModelResponse(
                output=_output_items(reply),
                usage=_usage(Usage, _read(reply, "usage")),
                response_id=_read(reply, "id"),
            )

        async def stream_response(self, *args: Any, **kwargs: Any):
            raise ConfigurationError(
                "agents_model serves Runner.run and Runner.run_sync; Runner.run_streamed is not "
                "scripted: run the scripted agent with Runner.run"
            )
            yield  # pragma: no cover - makes this an async generator, as the SDK expects

    return ScriptedChatModel()
