"""Every converter and both live formats take anything: property tests. Whatever a framework's
messages (or a log line, or an OTLP document) hold, a converter ends as events or as a
`ConversionError` (a glue error naming the converter and the item), and a live reader as
conversations and located problems; never another exception. The events keep the call-id rules
(docs/adapters.md, "Call ids"): no two calls share an id, no call gets two results.

The default run spends a bounded budget (`COMMERCE_FUZZ_EXAMPLES` examples per property, 200
unless set); docs/fuzzing.md says how to run a long campaign.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_commerce_evals.adapters.core import ConversionError
from pytest_commerce_evals.adapters.langchain import events_from_langchain
from pytest_commerce_evals.adapters.openai_agents import events_from_agents_items
from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages
from pytest_commerce_evals.adapters.openai_responses import events_from_responses_items
from pytest_commerce_evals.adapters.pydantic_ai import events_from_pydantic_ai
from pytest_commerce_evals.events import ToolCall, ToolResult
from pytest_commerce_evals.live.reading import read_capture

EXAMPLES = int(os.environ.get("COMMERCE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

WORDS = [
    "", " ", "c1", "c2", "call_0", "None", "search_products", "add_to_cart", "assistant", "tool",
    "user", "system", "ai", "human", "function", "function_call", "function_call_output",
    "message", "tool_call_item", "tool_call_output_item", "tool_approval_item", "error",
    "tool-call", "tool-return", "retry-prompt", "text", "denied", "failed", "{", "{}",
    '{"error": "boom"}', '{"a": 1}', "[1]", "output_text", "refusal",
]  # fmt: skip
KEYS = [
    "role", "content", "tool_calls", "tool_call_id", "name", "id", "function", "arguments",
    "type", "call_id", "output", "refusal", "status", "is_error", "data", "args",
    "invalid_tool_calls", "raw_item", "parts", "input", "custom", "choices", "message", "text",
    "object", "tool_name", "error",
]  # fmt: skip
SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-2, 3)
    | st.floats(allow_nan=True)
    | st.sampled_from(WORDS)
    | st.text(max_size=6)
)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=24,
)
MESSAGES = st.lists(JSON, max_size=6) | JSON


def _part(kind, call_id, name, content, outcome):
    return SimpleNamespace(
        part_kind=kind, tool_call_id=call_id, tool_name=name, args=content, content=content,
        outcome=outcome,
    )  # fmt: skip


PYDANTIC_AI = st.lists(
    st.builds(
        lambda parts: SimpleNamespace(parts=parts),
        st.lists(
            st.builds(
                _part,
                st.sampled_from(["tool-call", "tool-return", "retry-prompt", "text", "x", None]),
                st.sampled_from([None, "", "c1", "c2", 3]),
                st.sampled_from([None, "", "search_products", "add_to_cart"]),
                SCALAR,
                st.sampled_from([None, "success", "denied", "failed", "retried", "x"]),
            ),
            max_size=3,
        ),
    ),
    max_size=4,
)

CONVERTERS = {
    "chat": events_from_chat_messages,
    "responses": events_from_responses_items,
    "agents": events_from_agents_items,
    "langchain": events_from_langchain,
}


def _keeps_the_id_rules(events: list[Any]) -> None:
    calls = Counter(e.call_id for e in events if isinstance(e, ToolCall))
    results = Counter(e.call_id for e in events if isinstance(e, ToolResult))
    assert all(n == 1 for n in calls.values()), calls
    assert all(n == 1 for n in results.values()), results
    assert not any(not i.strip() for i in calls), calls  # never an empty id


def _converts_or_refuses(convert, messages: Any) -> None:
    try:
        events = convert(messages)
    except ConversionError as exc:
        assert str(exc).startswith(convert.__name__), str(exc)
        return
    _keeps_the_id_rules(events)


@pytest.mark.parametrize("name", CONVERTERS)
@FUZZ
@given(messages=MESSAGES)
def test_any_messages_are_events_or_a_conversion_error(name, messages):
    _converts_or_refuses(CONVERTERS[name], messages)


@FUZZ
@given(messages=PYDANTIC_AI)
def test_any_pydantic_ai_parts_are_events_or_a_conversion_error(messages):
    _converts_or_refuses(events_from_pydantic_ai, messages)


# -- the live formats --------------------------------------------------------------------------


def _read(tmp_path, name: str, text: str, format: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    capture = read_capture([path], format=format)
    for conversation in capture.conversations:
        for turn in conversation.turns:
            _keeps_the_id_rules(turn.events)
    for problem in capture.problems:
        assert problem.path and problem.line >= 1
    return capture


OPENAI_LINE = st.fixed_dictionaries(
    {"conversation_id": st.sampled_from(["c-1", "c-2", 7, "", None])},
    optional={
        "messages": st.lists(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "assistant", "tool", "system", "x", 5])},
                optional={k: JSON for k in ("content", "tool_calls", "tool_call_id", "name")},
            ),
            max_size=6,
        )
        | JSON,
        "metadata": JSON,
        "created": SCALAR,
        "timestamp": SCALAR,
    },
)


@FUZZ
@given(lines=st.lists(OPENAI_LINE | JSON, min_size=1, max_size=4))
def test_any_openai_log_reads_to_conversations_and_located_problems(tmp_path, lines):
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    _read(tmp_path, "log.jsonl", text, "openai")


ATTRIBUTE_KEYS = [
    "gen_ai.conversation.id", "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.tool.call.result", "gen_ai.tool.call.arguments", "gen_ai.input.messages",
    "gen_ai.output.messages",
]  # fmt: skip
ANY_VALUE = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.sampled_from(WORDS) | st.text(max_size=6)),
    st.builds(lambda v: {"intValue": v}, st.sampled_from(["1", "x", 2])),
    st.builds(
        lambda v: {"stringValue": json.dumps(v)},
        st.lists(
            st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "assistant", "tool"])},
                optional={"parts": JSON, "content": JSON, "tool_calls": JSON},
            ),
            max_size=3,
        ),
    ),
    JSON,
)
SPAN = st.fixed_dictionaries(
    {
        "traceId": st.sampled_from(["t1", "t2"]),
        "startTimeUnixNano": st.sampled_from(["1", "2", "3", "x", 5, -1]),
    },
    optional={
        "name": SCALAR,
        "attributes": st.lists(
            st.fixed_dictionaries({"key": st.sampled_from(ATTRIBUTE_KEYS), "value": ANY_VALUE}),
            max_size=6,
        )
        | JSON,
        "status": JSON | st.sampled_from([{"code": 2}, "ERROR"]),
        "events": JSON,
    },
)
OTLP = st.builds(
    lambda spans, shape: (
        {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
        if shape
        else {"resourceSpans": spans}
    ),
    st.lists(SPAN | JSON, max_size=6),
    st.booleans(),
)


@FUZZ
@given(document=OTLP, per_line=st.booleans())
def test_any_otlp_document_reads_to_conversations_and_located_problems(
    tmp_path, document, per_line
):
    text = json.dumps(document) + "\n" if per_line else json.dumps(document, indent=1)
    _read(tmp_path, "trace.json", text, "otel")
