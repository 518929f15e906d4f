"""OpenAI chat completions: a message list (the `messages` an agent sends and the assistant
messages it gets back) as the plugin's events.

    from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages

    events = events_from_chat_messages(history[start:])   # this turn's new messages

Each message may be a dict, the SDK's `ChatCompletionMessage`, the plugin's `Record` reply
message, or a whole `ChatCompletion` (its first choice's message is read); fields are read by
key or attribute alike. A whole `ChatCompletion` (a dict, the SDK's object or a `Record`) with a
`usage` is also reported to the running trial as one agent call of its `model` (once however
often the trial converts it); a bare message carries no usage and reports none. How each message
reads:

- `system`, `developer` and `user` messages are the input, not what the agent did: skipped;
- an `assistant` message's `content` (a string, or its text parts joined) and `refusal` are
  `Text`; each of its `tool_calls` is a `ToolCall` (`id`, `function.name`, `function.arguments`
  as a JSON string or a mapping; a custom tool's `custom.input` is kept under `_raw`);
- a `tool` message (`tool_call_id`, `content`) is the `ToolResult` of that call, named after it.
  Chat completions have no field saying a tool failed, so a failure is read by convention: the
  message has a true `is_error` or `status: "error"`, or its content is a JSON object with a
  non-empty `"error"` key (`{"error": "ValueError: no such product"}`); such a result is
  `status="error"` with that reason. Any other output is ok, unless the options' classifier
  marks it `blocked` (or `error`);
- the deprecated `function` role (the `functions` API, with no call IDs) is refused with an
  error: agents on that API pass `tools` instead.

A call to a presentation tool is also a `Ui` event (see `ConvertOptions.ui_tools`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..events import Event
from ._openai import failure, field, parts_text, report_response, tool_output
from .core import ConvertOptions, EventBuilder, converter

__all__ = ["events_from_chat_messages", "tool_failure", "tool_output"]


def tool_failure(message: Any, output: Any) -> str | None:
    """Why a `tool` message (or a message part) says its call failed, or None: the convention
    above, on the output as the converter reads it (a list of text parts joined). Live logs in
    the OpenAI format and the tool results of GenAI spans are read by the same rule."""
    return failure(message, tool_output(output))


_INPUT_ROLES = ("system", "developer", "user")
_ROLES = (*_INPUT_ROLES, "assistant", "tool")


def _message(item: Any) -> Any:
    choices = field(item, "choices")
    if choices:
        report_response(item, "chat")
        return field(choices[0], "message")
    return item


@converter
def events_from_chat_messages(
    messages: Iterable[Any],
    *,
    options: ConvertOptions | None = None,
    waiting: Iterable[str] = (),
    refused: Iterable[str] = (),
) -> list[Event]:
    """The events of a chat-completions message list, in order (see the module's docstring).

    `waiting` holds the ids of calls a person has not decided on when the turn ends (`blocked`,
    `core.PENDING_APPROVAL`); `refused` the ids of calls a person refused, whose `tool` message
    reads `blocked` (`approval: <content>`), as in the other converters."""
    builder = EventBuilder(options)
    refusals = {str(i) for i in refused}
    for index, item in enumerate(messages):
        message = _message(item)
        role = field(message, "role")
        if role in _INPUT_ROLES:
            continue
        if role == "assistant":
            _assistant(builder, message)
        elif role == "tool":
            content = tool_output(field(message, "content"))
            call_id = field(message, "tool_call_id")
            if call_id is not None and str(call_id) in refusals:
                text = content if isinstance(content, str) else json.dumps(content)
                builder.result(
                    call_id, content, name=field(message, "name"), blocked=f"approval: {text}"
                )
                continue
            builder.result(
                call_id,
                content,
                name=field(message, "name"),
                error=failure(message, content),
            )
        elif role == "function":
            raise ValueError(
                f"events_from_chat_messages: message {index} has the deprecated role 'function' "
                "(the functions API, without call IDs); only tool calls (`tools`, role 'tool') "
                "are converted"
            )
        else:
            found = f"role {role!r}" if role else f"a {type(item).__name__} with no role"
            raise ValueError(
                f"events_from_chat_messages: message {index} has {found}; expected a chat "
                f"message (a dict or the SDK's message object) with role one of {', '.join(_ROLES)}"
            )
    for call_id in waiting:
        builder.wait(call_id)
    return builder.finish()


def _assistant(builder: EventBuilder, message: Any) -> None:
    builder.text(parts_text(field(message, "content")))
    builder.text(field(message, "refusal"))
    for call in field(message, "tool_calls") or []:
        function = field(call, "function")
        if function is not None:
            builder.call(field(call, "id"), field(function, "name"), field(function, "arguments"))
        else:
            custom = field(call, "custom")
            builder.call(field(call, "id"), field(custom, "name"), {"_raw": field(custom, "input")})
