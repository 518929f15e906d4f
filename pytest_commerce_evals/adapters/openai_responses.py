"""The OpenAI Responses API: output items (`response.output`) and the input items an agent sends
back (`function_call_output`) as the plugin's events.

    from pytest_commerce_evals.adapters.openai_responses import events_from_responses_items

    events = events_from_responses_items(items[start:])   # this turn's new items

Each item may be a dict or the SDK's `openai.types.responses` object (`ResponseFunctionToolCall`,
`ResponseOutputMessage`, `ResponseReasoningItem`, ...); a whole `Response` reads as its
`output`, and its `usage` (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`)
is reported to the running trial as one agent call of its `model` (once however often the trial
converts it; items alone carry no usage and report none). Fields are read by key or attribute
alike. How each item reads, by its `type`:

- `function_call` (`call_id`, `name`, `arguments`) is a `ToolCall`; `custom_tool_call`
  (`call_id`, `name`, `input`) too, its input kept under `_raw`;
- `function_call_output` / `custom_tool_call_output` (`call_id`, `output`: text, or content
  parts whose text is joined) is the `ToolResult` of that call. The API has no field saying a
  tool failed, so a failure is read by convention: the item has a true `is_error` or
  `status: "error"`, or its output is a JSON object with a non-empty `"error"` key
  (`{"error": "ValueError: no such product"}`); such a result is `status="error"` with that
  reason. Any other output is ok, unless the options' classifier marks it `blocked` (or
  `error`);
- a `message` from the assistant: its `output_text` parts and `refusal` parts are `Text`;
  messages from `user`, `system` and `developer` (the input, with or without `type`) are skipped;
- `reasoning` items (the model's thinking, not something the agent did) are skipped, and so are
  the calls of tools OpenAI runs itself (`web_search_call`, `file_search_call`, ...),
  `item_reference` and every other type: the graders read the agent's own tools.

A call to a presentation tool is also a `Ui` event (see `ConvertOptions.ui_tools`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..events import Event
from ._openai import failure, field, parts_text, report_response, tool_output
from .core import ConvertOptions, EventBuilder, converter

__all__ = ["events_from_responses_items"]

_CALLS = ("function_call", "custom_tool_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _items(items: Iterable[Any]) -> Iterable[tuple[int, Any]]:
    index = 0
    for item in items:
        output = field(item, "output")
        if field(item, "object") == "response" and isinstance(output, list):
            report_response(item, "responses")
            for inner in output:
                yield index, inner
                index += 1
        else:
            yield index, item
            index += 1


@converter
def events_from_responses_items(
    items: Iterable[Any], *, options: ConvertOptions | None = None
) -> list[Event]:
    """The events of Responses API items, in order (see the module's docstring)."""
    builder = EventBuilder(options)
    for index, item in _items(items):
        kind = field(item, "type")
        role = field(item, "role")
        if kind is None and role is None:
            raise ValueError(
                f"events_from_responses_items: item {index} is a {type(item).__name__} with "
                "neither a type nor a role; expected a Responses API item (a dict or the SDK's "
                "object) such as function_call, function_call_output or message"
            )
        if kind == "function_call":
            builder.call(field(item, "call_id"), field(item, "name"), field(item, "arguments"))
        elif kind == "custom_tool_call":
            raw = {"_raw": field(item, "input")}
            builder.call(field(item, "call_id"), field(item, "name"), raw)
        elif kind in _OUTPUTS:
            output = tool_output(field(item, "output"))
            builder.result(
                field(item, "call_id"),
                output,
                name=field(item, "name"),
                error=failure(item, output),
            )
        elif (kind == "message" or kind is None) and role == "assistant":
            _message(builder, field(item, "content"))
    return builder.finish()


def _message(builder: EventBuilder, content: Any) -> None:
    if content is None or isinstance(content, str):
        builder.text(content)
        return
    for part in content:
        kind = field(part, "type")
        if kind == "refusal":
            builder.text(field(part, "refusal"))
        else:
            builder.text(parts_text([part]))
