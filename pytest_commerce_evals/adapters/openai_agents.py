"""OpenAI Agents SDK (`openai-agents`, import name `agents`): a run's items as the event stream.

    result = await Runner.run(agent, message)
    events = events_from_agents_items(result.new_items)

What is read:
- `ToolCallItem` (its `raw_item` a function call: `call_id`, `name`, `arguments`) → `ToolCall`;
- `ToolCallOutputItem` (`output`, the call's `call_id` in `raw_item`) → `ToolResult`;
- `MessageOutputItem` → `Text` (its `output_text` parts, and a refusal's text);
- a handoff is a function call the model made (`transfer_to_<agent>`): `HandoffCallItem` and
  `HandoffOutputItem` read as a tool call and its result, as they do in `to_input_list()`;
- `ToolApprovalItem` (a tool with `needs_approval`: the run stops, the item is in `new_items`
  and in `result.interruptions`) → the call and a `blocked` result with the gate `approval`
  (`core.PENDING_APPROVAL`, the reason every converter gives a call waiting for a person), so
  `gate_blocked: [name]` grades it (once, however often the item is passed); when the turn's
  items go on to the call's own output (approved and run, or refused), that output replaces it;
- call ids follow `core.EventBuilder`'s rules: a call without an id, or a second call with the
  same id, is a call of its own; a result that answers no call is refused;
- reasoning items, MCP listings and anything else carry no event and are skipped.

**Usage.** The run items carry no token counts; the run's responses do. Pass them, and each
response's `usage` (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`) is
reported to the running trial as one agent call, once however often the trial converts it (a run
resumed after an approval repeats the earlier responses in its `raw_responses`):

    return TurnMessages(result.new_items, context=result.context_wrapper,
                        responses=result.raw_responses, model="gpt-4.1-mini")

The SDK's responses do not name their model: `model` is the one the agent runs on (else the
calls have none, and no price). A response whose usage is all zeros (`Usage(requests=1)`, what
the SDK gives a response without usage) is not recorded.

The same run as plain dicts (`result.to_input_list()`, sliced to this turn's items) reads the
same: `function_call`, `function_call_output` and assistant `message` items; user, system and
developer messages are the turn's input and are skipped. A tool returning a dict or a list
reaches these items as the SDK writes it, `str(output)`; that text is read back as the value it
shows (`ast.literal_eval`: literals only, nothing runs), so it grades as the run items do.

**A failing tool.** A `function_tool` that raises does not fail the run: the SDK hands the model
a string instead, by default exactly `"An error occurred while running the tool. Please try
again."` (no exception text, so nothing private reaches the model), and a timed-out tool gets
`"Tool '<name>' timed out after <n> seconds."`. Both are recognised here and become
`ToolResult(status="error")`. To see *which* error it was, set the tool's failure function to
`failure_error_function()` from this module: its output starts with `TOOL_FAILURE_MARKER` and
the rest (`ValueError: no such product`) becomes the result's `reason`. A custom failure function
or `RunConfig.tool_error_formatter` of your own writes other text: mark it with the same prefix,
or tell it apart with `ConvertOptions(classify=...)` returning `("error", reason)`.

The SDK is imported lazily: this module imports without it. `agents_model(client)` (from
`openai_agents_model`, re-exported here) drives an Agents SDK agent from the plugin's scripted
`FakeClient`, for `--commerce-vacuity`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..events import Event
from ..usage import tokens_of
from .core import ConvertOptions, EventBuilder, converter, python_literal
from .openai_agents_model import agents_model
from .usage_report import report_usage

__all__ = [
    "SDK_FAILURE_MESSAGE",
    "TOOL_FAILURE_MARKER",
    "agents_model",
    "events_from_agents_items",
    "failure_error_function",
    "python_literal",
    "tool_failure_reason",
]

SDK_FAILURE_MESSAGE = "An error occurred while running the tool."
"""How the SDK's default failure function's text starts (0.24 adds `" Please try again."`;
earlier releases appended the error)."""

TOOL_FAILURE_MARKER = "Tool failed:"
"""The prefix `failure_error_function()` writes, and the converter reads as a failed call."""

_TIMEOUT = re.compile(r"^Tool '[^']*' timed out after [0-9.e+-]+ seconds\.$")


def failure_error_function(*, include_error: bool = True) -> Any:
    """A failure function for `function_tool(..., failure_error_function=...)` whose text the
    converter reads as a failed call: `"Tool failed: ValueError: no such product"`. With
    `include_error=False` the model sees only `"Tool failed: the tool raised ValueError."`
    (the exception's message kept out of the model's context, as the SDK's default does)."""

    def mark(context: Any, error: Exception) -> str:
        kind = type(error).__name__
        if include_error:
            detail = str(error)
            return (
                f"{TOOL_FAILURE_MARKER} {kind}: {detail}"
                if detail
                else f"{TOOL_FAILURE_MARKER} {kind}"
            )
        return f"{TOOL_FAILURE_MARKER} the tool raised {kind}."

    return mark


def tool_failure_reason(output: Any) -> str | None:
    """The failure a tool output reports (the SDK's default failure or timeout text, or the
    marker of `failure_error_function()`), or None for an ordinary output."""
    if not isinstance(output, str):
        return None
    text = output.strip()
    if text.startswith(TOOL_FAILURE_MARKER):
        return text[len(TOOL_FAILURE_MARKER) :].strip() or text
    if text.startswith(SDK_FAILURE_MESSAGE) or _TIMEOUT.match(text):
        return text
    return None


APPROVAL_REJECTED_MESSAGE = "Tool execution was not approved."
"""What the SDK (0.24, `agents.tool.DEFAULT_APPROVAL_REJECTION_MESSAGE`) writes as the output of
a call a person refused to approve: read as `blocked` (`approval: ...`), as pydantic-ai's denied
calls are."""


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _output_text(output: Any) -> Any:
    """A `function_call_output`'s output: a string, or a list of content parts (their text)."""
    if isinstance(output, list):
        texts = [_get(part, "text") for part in output]
        return "".join(t for t in texts if isinstance(t, str))
    return output


def _message_text(content: Any) -> str:
    """An assistant message's text: a string, or its `output_text`/`text` and refusal parts."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content or []:
        if isinstance(part, str):
            parts.append(part)
            continue
        text = _get(part, "text")
        if not isinstance(text, str):
            text = _get(part, "refusal")
        if isinstance(text, str):
            parts.append(text)
    return "".join(parts)


class _Reader:
    """Reads run items and input dicts into one `EventBuilder`: a call the items repeat (the
    same id, tool and arguments while it has no result, as an approval item repeats its call)
    is read once; any other call is a call of its own (`EventBuilder`'s id rules)."""

    def __init__(self, options: ConvertOptions | None, context: Any = None) -> None:
        self.builder = EventBuilder(options)
        self.seen: dict[str, tuple[str, str, Any]] = {}  # given id -> (own id, name, arguments)
        self.context = context

    def call(self, raw: Any, name: str | None = None) -> str:
        given = _get(raw, "call_id") or _get(raw, "id")
        kind = _get(raw, "type")
        # a hosted tool's call (web_search_call, computer_call, ...) is named by its type
        name = name or _get(raw, "name") or (kind if kind != "function_call" else None)
        arguments = _get(raw, "arguments")
        key = str(given) if given not in (None, "") else None
        if key is not None and key in self.seen:
            own, seen_name, seen_arguments = self.seen[key]
            opened = self.builder.next_open(key)
            if (seen_name, seen_arguments) == (name, arguments) and opened and opened[0] == own:
                return own  # the same call, passed again
        event = self.builder.call(given, name, arguments)
        if key is not None:
            self.seen[key] = (event.call_id, event.name, arguments)  # the name call() checked
        return event.call_id

    def refused(self, call_id: str, name: str | None) -> bool:
        """Whether the run's context says a person refused this call, whatever rejection
        message it was given (`state.reject(item, rejection_message=...)`)."""
        check = getattr(self.context, "is_tool_approved", None)
        return callable(check) and name is not None and check(name, call_id) is False

    def result(self, call_id: Any, output: Any) -> None:
        opened = self.builder.next_open(call_id)
        name = opened[1] if opened else None
        value = _output_text(output)
        if self.refused(str(call_id), name) or (
            isinstance(value, str) and value.strip() == APPROVAL_REJECTED_MESSAGE
        ):
            # the SDK's output for a call a person refused to approve
            text = value.strip() if isinstance(value, str) else str(value)
            self.builder.result(call_id, value, blocked=f"approval: {text}")
            return
        reason = tool_failure_reason(value)
        self.builder.result(call_id, value, error=reason)

    def approval(self, item: Any) -> None:
        raw = _get(item, "raw_item")
        name = _get(item, "tool_name") or _get(raw, "name")
        self.builder.wait(self.call(raw, name))

    def run_item(self, item: Any) -> None:
        kind = _get(item, "type")
        raw = _get(item, "raw_item")
        if kind in ("tool_call_item", "handoff_call_item"):
            self.call(raw, _get(item, "tool_name", None) if kind == "tool_call_item" else None)
        elif kind == "tool_call_output_item":
            self.result(_get(raw, "call_id") or _get(item, "call_id"), _get(item, "output"))
        elif kind == "handoff_output_item":
            self.result(_get(raw, "call_id"), python_literal(_get(raw, "output")))
        elif kind == "message_output_item":
            self.builder.text(_message_text(_get(raw, "content")))
        elif kind == "tool_approval_item":
            self.approval(item)

    def input_item(self, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        if kind == "function_call":
            self.call(item)
        elif kind == "function_call_output":
            self.result(item.get("call_id"), python_literal(_output_text(item.get("output"))))
        elif kind in ("message", None) and item.get("role") == "assistant":
            self.builder.text(_message_text(item.get("content")))


def _report(response: Any, model: str | None) -> None:
    """Report one `ModelResponse`'s usage (all zeros: the SDK's usage of a response without
    one, not reported)."""
    inp, out, cached = tokens_of(_get(response, "usage"))
    if not inp and not out:
        return
    response_id, request_id = _get(response, "response_id"), _get(response, "request_id")
    report_usage(
        response,
        model=model or _get(response, "model") or _get(response, "model_name"),
        input_tokens=inp,
        output_tokens=out,
        cached_tokens=cached,
        key=("agents", response_id, request_id) if response_id or request_id else None,
    )


@converter
def events_from_agents_items(
    items: Iterable[Any],
    *,
    options: ConvertOptions | None = None,
    context: Any = None,
    responses: Iterable[Any] | None = None,
    model: str | None = None,
) -> list[Event]:
    """One turn's events from an Agents SDK run: `result.new_items` (run items), or the same
    turn as `to_input_list()` dicts. Pure: no model call, no import of the SDK.

    `context` is the run's `result.context_wrapper`: with it a call a person refused is
    `blocked` whatever rejection message it was given; without it only the SDK's default
    rejection text is recognised. `responses` is the run's `result.raw_responses`: each one's
    usage is reported to the trial as an agent call of `model` (see the module's docstring)."""
    reader = _Reader(options, context)
    for item in items:
        if isinstance(item, Mapping) and "raw_item" not in item:
            reader.input_item(item)
        else:
            reader.run_item(item)
    for response in responses or ():
        _report(response, model)
    return reader.builder.finish()
