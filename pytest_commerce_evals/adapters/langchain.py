"""LangChain / LangGraph messages turned into the plugin's event stream.

    from pytest_commerce_evals.adapters.langchain import events_from_langchain

    out = graph.invoke({"messages": [*history, HumanMessage(message)]})
    events = events_from_langchain(out["messages"][len(history):])

What reads how:
- `AIMessage.content` is a `Text` (a string, or the text blocks of a list of content blocks;
  reasoning, image and tool-use blocks are not reply text), emitted before the message's calls;
- each of `AIMessage.tool_calls` (`id`, `name`, `args`) is a `ToolCall`;
- each of `AIMessage.invalid_tool_calls` (arguments the model wrote that did not parse) is a
  `ToolCall` (its arguments kept under `_raw`) followed by a failed `ToolResult`: no tool ran,
  and the turn must not read as if one had;
- a `ToolMessage` is the `ToolResult` of its `tool_call_id`; `status="error"` (what LangGraph's
  `ToolNode(handle_tool_errors=...)` writes when a tool raises) is `status="error"` with the
  message's content as the reason, whatever the content says;
- call ids follow `core.EventBuilder`'s rules: a call without an id (some providers give
  none), or a second call with the same id, is a call of its own; a `ToolMessage` that answers
  no call of the messages is refused;
- a run stopped at an `interrupt()` (a human-in-the-loop approval) leaves its calls without a
  result: pass `interrupts=out.get("__interrupt__")` and they are `blocked` with
  `core.PENDING_APPROVAL`, as the other converters read a pending approval; the ids of the
  calls a person refused (`refused=[...]`) make their `ToolMessage` `blocked`, whatever it says;
- a streamed chunk (`AIMessageChunk`, `ToolMessageChunk`) reads as its message;
- human, system and other messages (`HumanMessage`, `SystemMessage`, `RemoveMessage`, the
  legacy `FunctionMessage`, `ChatMessage`) are not events and are skipped, so the slice of a
  graph's `messages` state added in a turn (the user's message included) converts as it is.

Each `AIMessage`'s `usage_metadata` (`input_tokens`, `output_tokens`,
`input_token_details.cache_read`) is reported to the running trial as one agent call of the
model its `response_metadata` names (`model_name`, else `model`), once however often the trial
converts it; a message without `usage_metadata` (not reported) records nothing.

The dict form `messages_to_dict` writes (`{"type": "ai", "data": {...}}`) reads the same.
LangChain is not imported here: messages are read by their attributes, so this module imports
without the `[frameworks]` extra. `langchain_chat_model(client)` (which does import
`langchain_core`) drives a team's graph from the plugin's scripted `FakeClient`, for the
vacuity check.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..events import Event
from ..usage import tokens_of
from .core import ConvertOptions, EventBuilder, converter
from .usage_report import report_usage

__all__ = ["events_from_langchain", "langchain_chat_model"]

_SKIPPED = {"human", "system", "remove", "function", "chat", "developer"}


def _kind_and_fields(message: Any, index: int) -> tuple[str, Mapping[str, Any] | Any]:
    """The message's type (`ai`, `tool`, ...) and what its fields are read from."""
    if isinstance(message, Mapping):
        data = message.get("data")
        kind = message.get("type")
        if isinstance(kind, str) and isinstance(data, Mapping):
            return kind, data
    else:
        kind = getattr(message, "type", None)
        if isinstance(kind, str) and hasattr(message, "content"):
            # a streamed chunk reads as its message: AIMessageChunk is ai, ToolMessageChunk tool
            if kind.endswith("MessageChunk"):
                kind = kind.removesuffix("MessageChunk").lower()
            return kind, message
    raise TypeError(
        f"events_from_langchain: item {index + 1} is {type(message).__name__} {message!r:.80}; "
        f"expected a LangChain message (AIMessage, ToolMessage, HumanMessage, ...) or its "
        f"messages_to_dict form {{'type': 'ai', 'data': {{...}}}}"
    )


def _get(fields: Any, name: str, default: Any = None) -> Any:
    if isinstance(fields, Mapping):
        value = fields.get(name, default)
    else:
        value = getattr(fields, name, default)
    return default if value is None else value


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a list of blocks."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text") or ""))
    return "".join(parts)


def _output(content: Any) -> Any:
    """A tool message's content as the tool's output: a string (JSON parsed by the builder),
    the joined text of text blocks, or the blocks as they are when none is text."""
    if isinstance(content, str):
        return content
    text = _text(content)
    return text if text else content


def _model_name(fields: Any) -> Any:
    metadata = _get(fields, "response_metadata", {})
    if not isinstance(metadata, Mapping):
        return None
    return metadata.get("model_name") or metadata.get("model") or metadata.get("model_id")


def _report(message: Any, fields: Any) -> None:
    """Report an AI message's `usage_metadata`; None (not reported) reports nothing."""
    usage = _get(fields, "usage_metadata")
    if not usage:
        return
    message_id = _get(fields, "id")
    report_usage(
        message,
        usage=usage,
        model=_model_name(fields),
        key=("langchain", message_id) if isinstance(message_id, str) and message_id else None,
    )


@converter
def events_from_langchain(
    messages: Iterable[Any],
    *,
    options: ConvertOptions | None = None,
    interrupts: Any = None,
    refused: Iterable[str] = (),
) -> list[Event]:
    """The events of LangChain messages (`BaseMessage`s or their `messages_to_dict` form), in
    order: the new messages of one turn, e.g. what a LangGraph run added to its `messages`.

    `interrupts` is what the run stopped at (`out.get("__interrupt__")` of `graph.invoke`, or
    `graph.get_state(config).interrupts`): when there is one, every call still without a result
    waits for a person and is `blocked` (`core.PENDING_APPROVAL`), as the other converters read
    a pending approval; without it such a call is a call with no result. `refused` holds the
    ids of calls a person refused: their `ToolMessage` is `blocked` (`approval: <content>`)
    whatever its text or status, as a refusal reads in pydantic-ai and the Agents SDK."""
    builder = EventBuilder(options)
    refusals = {str(i) for i in refused}
    for index, message in enumerate(messages):
        kind, fields = _kind_and_fields(message, index)
        if kind == "ai":
            _report(message, fields)
            builder.text(_text(_get(fields, "content", "")))
            for call in _get(fields, "tool_calls", []):
                builder.call(_get(call, "id"), _get(call, "name"), _get(call, "args"))
            for bad in _get(fields, "invalid_tool_calls", []):
                name = _get(bad, "name") or "(no tool name)"
                call = builder.call(_get(bad, "id"), name, _get(bad, "args"))
                why = _get(bad, "error") or "its arguments could not be parsed"
                builder.result(call.call_id, None, error=f"invalid tool call: {why}")
        elif kind == "tool":
            content = _output(_get(fields, "content", ""))
            failed = _get(fields, "status", "success") == "error"
            reason = content if isinstance(content, str) else json.dumps(content, default=str)
            call_id = _get(fields, "tool_call_id")
            if str(call_id) in refusals:
                builder.result(
                    call_id, content, name=_get(fields, "name"), blocked=f"approval: {reason}"
                )
                continue
            builder.result(
                call_id,
                content,
                name=_get(fields, "name"),
                error=(reason or "the tool failed") if failed else None,
            )
        elif kind not in _SKIPPED:
            raise TypeError(
                f"events_from_langchain: item {index + 1} is a message of type {kind!r}; "
                f"expected ai, tool, or one of the skipped types ({', '.join(sorted(_SKIPPED))})"
            )
    if interrupts:
        builder.wait_all()
    return builder.finish()


# -- the vacuity check: a LangChain chat model answering from a scripted client ---------------

_MODEL_CLASS: Any = None


def _openai_tool_call(call: Any) -> dict[str, Any]:
    function = call["function"] if isinstance(call, Mapping) else call.function
    get = function.get if isinstance(function, Mapping) else lambda k: getattr(function, k)
    call_id = call["id"] if isinstance(call, Mapping) else call.id
    raw = get("arguments") or "{}"
    try:
        args = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except ValueError:
        return {"type": "invalid_tool_call", "id": call_id, "name": get("name"), "args": raw}
    return {"type": "tool_call", "id": call_id, "name": get("name"), "args": args}


def _usage_metadata(usage: Any) -> dict[str, Any] | None:
    """A completion's usage as LangChain's `usage_metadata`; None when it reports no tokens."""
    inp, out, cached = tokens_of(usage)
    if inp is None or out is None:
        return None
    metadata: dict[str, Any] = {
        "input_tokens": inp,
        "output_tokens": out,
        "total_tokens": inp + out,
    }
    if cached is not None:
        metadata["input_token_details"] = {"cache_read": cached}
    return metadata


def _model_class() -> Any:
    global _MODEL_CLASS
    if _MODEL_CLASS is not None:
        return _MODEL_CLASS
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, convert_to_openai_messages
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class ScriptedChatModel(BaseChatModel):
        """A LangChain chat model whose every answer comes from `client.chat.completions
        .create(...)` (the plugin's `FakeClient`), given the conversation and the bound tools
        in the OpenAI chat format the scripts read."""

        client: Any
        model: str = "scripted"

        @property
        def _llm_type(self) -> str:
            return "commerce-evals-scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            request: dict[str, Any] = {
                "model": self.model,
                "messages": convert_to_openai_messages(messages),
            }
            if kwargs.get("tools"):
                request["tools"] = kwargs["tools"]
            completion = self.client.chat.completions.create(**request)
            reply = completion.choices[0].message
            calls = [_openai_tool_call(c) for c in (reply.tool_calls or [])]
            message = AIMessage(
                content=reply.content or "",
                tool_calls=[c for c in calls if c["type"] == "tool_call"],
                invalid_tool_calls=[c for c in calls if c["type"] == "invalid_tool_call"],
                usage_metadata=_usage_metadata(getattr(completion, "usage", None)),
                response_metadata={"model_name": getattr(completion, "model", None) or self.model},
            )
            return ChatResult(generations=[ChatGeneration(message=message)])

    _MODEL_CLASS = ScriptedChatModel
    return _MODEL_CLASS


def langchain_chat_model(client: Any, model: str = "scripted") -> Any:
    """A LangChain `BaseChatModel` answering from `client` (the `FakeClient` the plugin hands
    `pytest_commerce_evals_make_scripted_agent`): build your graph with it in place of your chat
    model and the vacuity check drives your own graph, tools and guardrails. `bind_tools` works
    (the tools reach the script in the OpenAI format); a reply's usage becomes the message's
    `usage_metadata`, its model `response_metadata["model_name"]`. Needs `langchain-core`."""
    return _model_class()(client=client, model=model)
