"""pydantic-ai: a run's message history as events, and a model that lets the vacuity check drive a
pydantic-ai agent.

    result = await agent.run(message, message_history=history)
    events = events_from_pydantic_ai(result.new_messages())

How the parts read (by their `part_kind`, or their class name, so this module imports without
pydantic-ai; a typed subclass of a tool part reads as its base):
- `ToolCallPart` (and a provider's `NativeToolCallPart`) is a `ToolCall` (`args` a JSON string
  or a dict);
- `ToolReturnPart` (and `NativeToolReturnPart`) is the call's `ToolResult`, by its `outcome`:
  `success` is ok (unless `ConvertOptions.classify` says blocked); `failed` (the tool raised
  `ToolFailed`), `retried` (the tool raised `ModelRetry`, or its arguments failed validation) and
  `interrupted` (no result was produced) are `error`, with the outcome and the content as the
  reason; `denied` (an approval was refused) is `blocked` with reason `approval: <content>`;
- the deprecated `RetryPromptPart` with a `tool_name` is that call's `error` result (its content
  as the reason); one without a tool answers no call and is skipped, as is `RetryFeedbackPart`
  (the framework's feedback on unusable output, not something the agent did);
- a call gets one result: a second answer to an already answered call is dropped (pydantic-ai
  itself may report a call twice: a retry prompt, then the retried return); a return for a
  call the messages do not hold is refused, and a call without an id, or a second call with
  the same id, is a call of its own (`core.EventBuilder`'s id rules);
- a call waiting for approval (`requires_approval`, the run's output a `DeferredToolRequests`)
  is `blocked` with `core.PENDING_APPROVAL` when the run's `output` is passed:
  `events_from_pydantic_ai(result.new_messages(), output=result.output)`;
- `TextPart` is `Text`; user and system prompt parts, instructions, thinking and file parts are
  skipped (they are the input or the model's private reasoning, not what it did).
- a structured `output_type` arrives through an output tool (`final_result` by default), whose
  call and return read like any other tool's (a case's `max_tool_calls` counts it);
- each `ModelResponse`'s `usage` (`input_tokens`, `output_tokens`, `cache_read_tokens`),
  `model_name` and `provider_url` (the server it came from, which prices it) is reported to the
  running trial as one agent call (`core.report_usage`), once however often the trial converts
  it; a response whose usage pydantic-ai did not measure
  (`unmeasured_requests`, or the all-zero `RequestUsage()` of a response without usage) is not
  recorded.

A tool that raises any other exception makes pydantic-ai raise it out of `agent.run`: there is
no part to convert. `PydanticAIAgent` runs every turn with the capability
`pydantic_ai_agent.tool_failures()`, which makes it a `ToolFailed` (a failed call, the model told
`<type>: <message>`); a hand-wired agent can pass the same capability to its `agent.run`.

`pydantic_ai_model(client)` is a pydantic-ai `FunctionModel` answering from a scripted
`FakeClient` (the vacuity check's degenerate models): in the
`pytest_commerce_evals_make_scripted_agent` hook, run the team's own agent under
`agent.override(model=pydantic_ai_model(client))`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable
from typing import Any

from ..events import Event
from ..usage import tokens_of
from .core import ConvertOptions, EventBuilder, converter
from .usage_report import report_usage

__all__ = ["events_from_pydantic_ai", "pydantic_ai_model"]

_CALLS = {"tool-call", "builtin-tool-call"}
_RETURNS = {"tool-return", "builtin-tool-return"}
_BY_CLASS = {
    "ToolCallPart": "tool-call",
    "NativeToolCallPart": "builtin-tool-call",
    "ToolReturnPart": "tool-return",
    "NativeToolReturnPart": "builtin-tool-return",
    "RetryPromptPart": "retry-prompt",
    "RetryFeedbackPart": "retry-feedback",
    "TextPart": "text",
    "UserPromptPart": "user-prompt",
    "SystemPromptPart": "system-prompt",
}


def _report(message: Any) -> None:
    """Report a `ModelResponse`'s usage; a request, or a response without usage, reports none."""
    kind = getattr(message, "kind", None)
    if kind != "response" and not (kind is None and type(message).__name__ == "ModelResponse"):
        return
    usage = getattr(message, "usage", None)
    if usage is None or getattr(usage, "unmeasured_requests", None):
        return
    inp, out, cached = tokens_of(usage)
    if not inp and not out:  # RequestUsage(): pydantic-ai's default for a response without usage
        return
    model = getattr(message, "model_name", None)
    report_usage(
        message,
        model=model,
        input_tokens=inp,
        output_tokens=out,
        cached_tokens=cached,
        server=getattr(message, "provider_url", None),  # where the response came from
        key=(
            "pydantic-ai",
            getattr(message, "provider_response_id", None),
            getattr(message, "timestamp", None),
        ),
    )


def _kind(part: Any) -> str | None:
    """A part's `part_kind` (typed subclasses keep their base's), else read off its class name."""
    kind = getattr(part, "part_kind", None)
    return kind if isinstance(kind, str) else _BY_CLASS.get(type(part).__name__)


def _parts(messages: Iterable[Any]) -> Iterable[Any]:
    for message in messages:
        yield from getattr(message, "parts", None) or ()


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, default=str)
    except (TypeError, ValueError):
        return str(content)


@converter
def events_from_pydantic_ai(
    messages: Iterable[Any], *, options: ConvertOptions | None = None, output: Any = None
) -> list[Event]:
    """The events of a pydantic-ai message list (`ModelRequest`/`ModelResponse`, e.g.
    `result.new_messages()`), in order. See the module docstring for how each part reads.

    `output` is the run's `result.output`: when it is a `DeferredToolRequests`, each call in its
    `approvals` waits for a person and is `blocked` (`core.PENDING_APPROVAL`), as the other
    converters read a pending approval; without it such a call is a call with no result."""
    builder = EventBuilder(options)

    def answer(call_id: Any, name: str | None, content: Any, **status: str) -> None:
        if builder.was_called(call_id) and not builder.is_open(call_id):
            return  # the same call reported twice (e.g. a retry prompt and a retried return)
        builder.result(call_id, content, name=name, **status)

    for message in messages:
        _report(message)
    for part in _parts(messages):
        kind = _kind(part)
        if kind in _CALLS:
            builder.call(part.tool_call_id, part.tool_name, part.args)
        elif kind in _RETURNS:
            call_id, name = part.tool_call_id, part.tool_name
            outcome = getattr(part, "outcome", "success") or "success"
            text = _content_text(part.content)
            if outcome == "success":
                answer(call_id, name, part.content)
            elif outcome == "denied":
                answer(call_id, name, part.content, blocked=f"approval: {text}")
            else:  # failed, retried, interrupted, or an outcome added later: never a success
                answer(call_id, name, part.content, error=f"{outcome}: {text}")
        elif kind == "retry-prompt":
            if getattr(part, "tool_name", None):
                text = _content_text(part.content)
                answer(part.tool_call_id, part.tool_name, part.content, error=f"retried: {text}")
        elif kind == "text":
            builder.text(part.content)
    for call in getattr(output, "approvals", None) or ():
        builder.wait(getattr(call, "tool_call_id", None))
    return builder.finish()


def _chat_messages(messages: Iterable[Any], instructions: str | None) -> list[dict[str, Any]]:
    """A pydantic-ai history as chat-completions messages, the shape a `FakeClient` script
    reads (`request["messages"]`)."""
    out: list[dict[str, Any]] = []
    if instructions:
        out.append({"role": "system", "content": instructions})
    for message in messages:
        calls: list[dict[str, Any]] = []
        texts: list[str] = []
        for part in getattr(message, "parts", None) or ():
            kind = _kind(part)
            if kind == "system-prompt":
                out.append({"role": "system", "content": _content_text(part.content)})
            elif kind in ("user-prompt", "retry-feedback") or (
                kind == "retry-prompt" and not getattr(part, "tool_name", None)
            ):
                content = part.content
                if isinstance(content, list) and kind == "user-prompt":
                    content = " ".join(c for c in content if isinstance(c, str))
                out.append({"role": "user", "content": _content_text(content)})
            elif kind in _RETURNS or kind == "retry-prompt":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(part.tool_call_id),
                        "content": _content_text(part.content),
                    }
                )
            elif kind in _CALLS:
                args = part.args
                calls.append(
                    {
                        "id": str(part.tool_call_id),
                        "type": "function",
                        "function": {
                            "name": part.tool_name,
                            "arguments": args if isinstance(args, str) else json.dumps(args or {}),
                        },
                    }
                )
            elif kind == "text":
                texts.append(part.content)
        if calls or texts:
            reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                reply["tool_calls"] = calls
            out.append(reply)
    return out


def _chat_tools(info: Any) -> list[dict[str, Any]]:
    tools = list(getattr(info, "function_tools", None) or ())
    tools += list(getattr(info, "output_tools", None) or ())
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description or "",
                "parameters": t.parameters_json_schema,
            },
        }
        for t in tools
    ]


def _request_usage(completion: Any) -> Any:
    """The completion's usage as pydantic-ai's `RequestUsage`; none reported: an unmeasured
    request (so pydantic-ai does not estimate tokens for it, and the converter reports none)."""
    from pydantic_ai.usage import RequestUsage

    inp, out, cached = tokens_of(getattr(completion, "usage", None))
    if inp is None and out is None:
        try:
            return RequestUsage(unmeasured_requests=1)
        except TypeError:
            # a pydantic-ai without `unmeasured_requests`: a detail so that its FunctionModel
            # does not estimate tokens for it (it does for a usage without values); no tokens,
            # so the converter reports none
            return RequestUsage(details={"commerce_evals_not_reported": 1})
    return RequestUsage(
        input_tokens=inp or 0, output_tokens=out or 0, cache_read_tokens=cached or 0
    )


def pydantic_ai_model(client: Any, model: str = "scripted") -> Any:
    """A pydantic-ai `FunctionModel` whose every reply comes from `client` (a `FakeClient` or
    anything with `chat.completions.create(model=, messages=, tools=)` returning a chat
    completion, sync or async): the request is the history as chat-completions messages and the
    agent's tools; the reply's `content` becomes a `TextPart`, each of its `tool_calls` a
    `ToolCallPart`. Needs pydantic-ai (the `[frameworks]` extra).

        @pytest.hookimpl
        def pytest_commerce_evals_make_scripted_agent(config, case, backend, client):
            return make_my_agent(backend, model=pydantic_ai_model(client))
    """
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    async def reply(messages: list[Any], info: Any) -> Any:
        request: dict[str, Any] = {
            "model": model,
            "messages": _chat_messages(messages, getattr(info, "instructions", None)),
        }
        tools = _chat_tools(info)
        if tools:
            request["tools"] = tools
        completion = client.chat.completions.create(**request)
        if inspect.isawaitable(completion):
            completion = await completion
        message = completion.choices[0].message
        parts: list[Any] = []
        if message.content:
            parts.append(TextPart(content=message.content))
        for call in message.tool_calls or ():
            parts.append(
                ToolCallPart(
                    tool_name=call.function.name,
                    args=call.function.arguments or "{}",
                    tool_call_id=call.id,
                )
            )
        if not parts:
            parts.append(TextPart(content=""))
        return ModelResponse(parts=parts, model_name=model, usage=_request_usage(completion))

    return FunctionModel(reply, model_name=model)
