"""What the two OpenAI shapes share: reading a field of a dict or an SDK object alike, the text of
content parts, and the convention by which a tool's output says it failed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .core import parse_output
from .usage_report import report_usage

TEXT_PARTS = ("text", "output_text", "input_text")
"""Content part types whose `text` is read (chat `text`, Responses `output_text`/`input_text`)."""


def field(item: Any, name: str) -> Any:
    """`item[name]` for a mapping, `item.name` for anything else (the SDK's pydantic models,
    the plugin's `Record` replies); None when absent."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def plain(value: Any) -> Any:
    """An SDK object as plain data (its `model_dump()`), anything else as it is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping):
        return dump()
    return value


def parts_text(content: Any) -> str | None:
    """The text of message content: a string as it is; a list of parts joined from the parts
    with a text type (other parts, e.g. images, are not text); None when there is none."""
    if content is None or isinstance(content, str):
        return content
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif field(part, "type") in TEXT_PARTS and isinstance(field(part, "text"), str):
            texts.append(field(part, "text"))
    return "".join(texts) if texts else None


def tool_output(content: Any) -> Any:
    """A tool's output as the builder takes it: text as it is (a list of text parts joined); a
    list holding no text part (an image, a file) as plain data."""
    if isinstance(content, list | tuple):
        text = parts_text(content)
        return text if text is not None else [plain(p) for p in content]
    return plain(content)


def _truthy(value: Any) -> bool:
    return value not in (None, False, "", {}, [])


def failure(item: Any, output: Any) -> str | None:
    """Why the tool failed, or None when its output reads as a success. A tool output says it
    failed, by convention, in one of three ways (checked in this order):

    1. the message/item has a true `is_error` field (as MCP tool results and some agents add);
    2. the message/item has `status: "error"` (as LangChain's tool messages have);
    3. the output is a JSON object with an `"error"` key whose value is not empty
       (not null, false, "", {} or []): `{"error": "ValueError: no such product"}`.

    The reason is the `error` value (text as it is, anything else as JSON), else the output's
    text, else "the tool reported an error"."""
    output = parse_output(output)
    flagged = _truthy(field(item, "is_error")) or field(item, "status") == "error"
    error = output.get("error") if isinstance(output, Mapping) else None
    if not flagged and not _truthy(error):
        return None
    if _truthy(error):
        return error if isinstance(error, str) else json.dumps(error, default=str)
    if isinstance(output, str) and output:
        return output
    if _truthy(output):
        return json.dumps(output, default=str)
    return "the tool reported an error"


def report_response(response: Any, kind: str) -> None:
    """Report the `usage` and `model` of a whole chat completion or Responses API `Response`
    the converter was given (a message or an item alone carries none: nothing is reported)."""
    usage = field(response, "usage")
    if usage is None:
        return
    response_id = field(response, "id")
    created = field(response, "created")
    if created is None:
        created = field(response, "created_at")
    report_usage(
        response,
        usage=usage,
        model=field(response, "model"),
        key=(kind, response_id, created) if isinstance(response_id, str) and response_id else None,
    )
