"""Call ids read one way in every converter and live format (docs/adapters.md, "Call ids"):
a call without an id is numbered `#<n>`, a second call with the same id is `<id>#<k>`, a result
answers the earliest open call with its id, and a result that answers no call is refused."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_commerce_evals.adapters.core import ConversionError, EventBuilder
from pytest_commerce_evals.adapters.langchain import events_from_langchain
from pytest_commerce_evals.adapters.openai_agents import events_from_agents_items
from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages
from pytest_commerce_evals.adapters.openai_responses import events_from_responses_items
from pytest_commerce_evals.adapters.pydantic_ai import events_from_pydantic_ai
from pytest_commerce_evals.events import ToolCall, ToolResult
from pytest_commerce_evals.live.reading import read_capture

# -- one script, written in each framework's messages ------------------------------------------
# ("call", id, tool) and ("result", id, tool-or-None: the name the result message carries)


def chat(ops: list[tuple]) -> list[Any]:
    out: list[Any] = []
    for op, call_id, name in ops:
        if op == "call":
            fn = {"name": name, "arguments": json.dumps({"n": len(out)})}
            out.append({"role": "assistant", "tool_calls": [{"id": call_id, "function": fn}]})
        else:
            message = {"role": "tool", "tool_call_id": call_id, "content": '{"ok": true}'}
            out.append({**message, **({"name": name} if name else {})})
    return out


def responses(ops: list[tuple]) -> list[Any]:
    out: list[Any] = []
    for op, call_id, name in ops:
        if op == "call":
            args = json.dumps({"n": len(out)})
            out.append(
                {"type": "function_call", "call_id": call_id, "name": name, "arguments": args}
            )
        else:
            out.append({"type": "function_call_output", "call_id": call_id, "output": "{}"})
    return out


def agents_items(ops: list[tuple]) -> list[Any]:
    """The run items' shape (`ToolCallItem`, `ToolCallOutputItem`), read by attribute."""
    out: list[Any] = []
    for op, call_id, name in ops:
        if op == "call":
            raw = SimpleNamespace(call_id=call_id, name=name, arguments=json.dumps({"n": len(out)}))
            out.append(SimpleNamespace(type="tool_call_item", raw_item=raw))
        else:
            raw = {"call_id": call_id, "output": "{}", "type": "function_call_output"}
            out.append(SimpleNamespace(type="tool_call_output_item", raw_item=raw, output="{}"))
    return out


def agents_dicts(ops: list[tuple]) -> list[Any]:
    return responses(ops)  # `to_input_list()` items are the Responses API's


def langchain(ops: list[tuple]) -> list[Any]:
    pytest.importorskip("langchain_core", reason="langchain-core is in the [langchain] extra")
    from langchain_core.messages import AIMessage, ToolMessage

    out: list[Any] = []
    for op, call_id, name in ops:
        if op == "call":
            call = {"id": call_id, "name": name, "args": {"n": len(out)}}
            out.append(AIMessage(content="", tool_calls=[call]))
        else:
            out.append(ToolMessage(content="{}", tool_call_id=call_id or "", name=name))
    return out


def pydantic_ai(ops: list[tuple]) -> list[Any]:
    pytest.importorskip("pydantic_ai", reason="pydantic-ai is in the [pydantic-ai] extra")
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

    out: list[Any] = []
    for op, call_id, name in ops:
        if op == "call":
            part = ToolCallPart(name, {"n": len(out)}, tool_call_id=call_id)
            out.append(ModelResponse(parts=[part]))
        else:
            out.append(ModelRequest(parts=[ToolReturnPart(name, "{}", tool_call_id=call_id)]))
    return out


CONVERTERS = {
    "chat": (chat, events_from_chat_messages),
    "responses": (responses, events_from_responses_items),
    "agents-items": (agents_items, events_from_agents_items),
    "agents-dicts": (agents_dicts, events_from_agents_items),
    "langchain": (langchain, events_from_langchain),
    "pydantic-ai": (pydantic_ai, events_from_pydantic_ai),
}


def convert(kind: str, ops: list[tuple]) -> list[Any]:
    build, fn = CONVERTERS[kind]
    return fn(build(ops))


def calls(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.call_id, e.name) for e in events if isinstance(e, ToolCall)]


def answered(events: list[Any]) -> list[tuple[str, str | None]]:
    return [(e.call_id, e.name) for e in events if isinstance(e, ToolResult)]


# -- the rules, per converter ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", CONVERTERS)
def test_calls_without_an_id_are_each_kept_and_numbered(kind):
    events = convert(kind, [("call", None, "search_products"), ("call", "", "add_to_cart")])
    assert calls(events) == [("#1", "search_products"), ("#2", "add_to_cart")]
    assert answered(events) == []  # made, no result came back


@pytest.mark.parametrize("kind", CONVERTERS)
def test_a_second_call_with_the_same_id_is_its_own_call_and_results_answer_in_order(kind):
    ops = [
        ("call", "c1", "search_products"),
        ("result", "c1", "search_products"),
        ("call", "c1", "add_to_cart"),
        ("result", "c1", "add_to_cart"),
    ]
    events = convert(kind, ops)
    assert calls(events) == [("c1", "search_products"), ("c1#2", "add_to_cart")]
    assert answered(events) == [("c1", "search_products"), ("c1#2", "add_to_cart")]


@pytest.mark.parametrize("kind", CONVERTERS)
def test_parallel_calls_sharing_an_id_are_answered_first_come_first_served(kind):
    ops = [
        ("call", "call_0", "search_products"),
        ("call", "call_0", "check_stock"),
        ("result", "call_0", None),
        ("result", "call_0", None),
    ]
    if kind == "pydantic-ai":  # its returns always name their tool
        ops = [
            *ops[:2],
            ("result", "call_0", "search_products"),
            ("result", "call_0", "check_stock"),
        ]
    events = convert(kind, ops)
    assert answered(events) == [("call_0", "search_products"), ("call_0#2", "check_stock")]


@pytest.mark.parametrize("kind", [k for k in CONVERTERS if k != "pydantic-ai"])
def test_a_result_naming_no_tool_for_an_unknown_call_is_refused_naming_the_item(kind):
    ops = [("call", "c1", "search_products"), ("result", "c1", None), ("result", "zz", None)]
    with pytest.raises(ConversionError, match=r"item 2 .*'zz', which no call of the turn has"):
        convert(kind, ops)


@pytest.mark.parametrize("kind", ["chat", "langchain", "pydantic-ai"])
def test_a_named_result_of_an_earlier_turns_call_is_kept_under_its_name(kind):
    events = convert(kind, [("result", "old", "get_order")])
    assert answered(events) == [("old", "get_order")]
    assert calls(events) == []


@pytest.mark.parametrize("kind", [k for k in CONVERTERS if k != "pydantic-ai"])
def test_a_second_result_for_one_call_is_refused(kind):
    ops = [("call", "c1", "add_to_cart"), ("result", "c1", None), ("result", "c1", None)]
    with pytest.raises(ConversionError, match=r"item 2 .*a second result for call 'c1'"):
        convert(kind, ops)


def test_pydantic_ai_drops_its_own_second_report_of_an_answered_call():
    ops = [
        ("call", "c1", "add_to_cart"),
        ("result", "c1", "add_to_cart"),
        ("result", "c1", "add_to_cart"),
    ]
    assert answered(convert("pydantic-ai", ops)) == [("c1", "add_to_cart")]


@pytest.mark.parametrize("kind", ["chat", "responses", "agents-dicts"])
def test_a_result_without_an_id_is_refused(kind):
    ops = [("call", "c1", "add_to_cart"), ("result", None, None)]
    with pytest.raises(ConversionError, match="without a call id"):
        convert(kind, ops)


@pytest.mark.parametrize("kind", CONVERTERS)
def test_a_call_without_a_tool_name_is_refused(kind):
    if kind == "langchain":  # an AIMessage refuses one itself; its dict form does not
        messages = [{"type": "ai", "data": {"content": "", "tool_calls": [{"id": "c1"}]}}]
    else:
        messages = CONVERTERS[kind][0]([("call", "c1", None)])
    with pytest.raises(ConversionError, match="item 0 .*without a tool name"):
        CONVERTERS[kind][1](messages)


def test_the_agents_sdk_reads_a_repeated_item_of_one_open_call_once():
    ops = [("call", "c1", "add_to_cart")]
    items = agents_items(ops) + agents_items(ops)  # the same raw item passed twice
    items[1].raw_item = items[0].raw_item
    assert calls(events_from_agents_items(items)) == [("c1", "add_to_cart")]


def test_the_builder_never_invents_none_or_empty_ids():
    builder = EventBuilder()
    ids = [builder.call(given, "t").call_id for given in (None, "", "  ", "#1", None)]
    assert ids == ["#1", "#2", "#3", "#1#2", "#5"]
    assert len(set(ids)) == len(ids)


# -- the live formats: the same rules, a bad conversation left out with the reason ---------------


def openai_line(messages: list[dict], cid: str = "c-1") -> str:
    return json.dumps({"conversation_id": cid, "messages": messages})


def read_openai(tmp_path, *lines: str):
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return read_capture([path], format="openai")


def test_an_openai_log_keeps_a_second_call_sharing_an_id(tmp_path):
    ops = [
        ("call", "c1", "search_products"),
        ("result", "c1", None),
        ("call", "c1", "add_to_cart"),
        ("result", "c1", None),
    ]
    capture = read_openai(tmp_path, openai_line([{"role": "user", "content": "hi"}, *chat(ops)]))
    [conv] = capture.conversations
    events = conv.turns[0].events
    assert calls(events) == [("c1", "search_products"), ("c1#2", "add_to_cart")]
    assert answered(events) == [("c1", "search_products"), ("c1#2", "add_to_cart")]


def test_an_openai_log_numbers_calls_without_an_id(tmp_path):
    ops = [("call", None, "search_products"), ("call", None, "add_to_cart")]
    capture = read_openai(tmp_path, openai_line([{"role": "user", "content": "hi"}, *chat(ops)]))
    [conv] = capture.conversations
    assert calls(conv.turns[0].events) == [("#1", "search_products"), ("#2", "add_to_cart")]


@pytest.mark.parametrize(
    ("ops", "says"),
    [
        ([("call", "c1", "t"), ("result", "c1", None), ("result", "c1", None)], "a second result"),
        ([("call", "c1", "t"), ("result", "zz", None)], "'zz', which no call of the turn has"),
    ],
)
def test_an_openai_log_conversation_with_a_result_answering_no_call_is_left_out(
    tmp_path, ops, says
):
    good = openai_line([{"role": "user", "content": "hi"}], cid="good")
    bad = openai_line([{"role": "user", "content": "hi"}, *chat(ops)], cid="bad")
    capture = read_openai(tmp_path, bad, good)
    assert [c.conversation_id for c in capture.conversations] == ["good"]
    [problem] = capture.problems
    assert says in str(problem) and "left out of the sample" in str(problem)
