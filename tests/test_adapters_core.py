"""The converters' shared rules: arguments, outputs, failures, the classifier, the UI convention,
and the agent made of a function returning a framework's new messages."""

import asyncio

from pytest_commerce_evals.adapters.core import (
    ConvertOptions,
    EventBuilder,
    framework_agent,
    parse_arguments,
)
from pytest_commerce_evals.events import Text, ToolCall, ToolResult, Ui


def test_arguments_read_from_json_text_or_a_mapping_and_nothing_is_guessed():
    assert parse_arguments('{"query": "shoes"}') == {"query": "shoes"}
    assert parse_arguments({"query": "shoes"}) == {"query": "shoes"}
    assert parse_arguments("") == {} and parse_arguments(None) == {}
    assert parse_arguments("[1, 2]") == {"_raw": "[1, 2]"}
    assert parse_arguments("not json") == {"_raw": "not json"}


def test_a_failed_tool_is_an_error_and_an_ok_output_is_parsed():
    b = EventBuilder()
    b.call("c1", "search_products", '{"query": "x"}')
    ok = b.result("c1", '{"products": []}')
    b.call("c2", "add_to_cart", {"product_id": "p"})
    failed = b.result("c2", "no such product", error="ToolError: no such product")
    assert (ok.status, ok.name, ok.result) == ("ok", "search_products", {"products": []})
    assert (failed.status, failed.reason, failed.name) == (
        "error",
        "ToolError: no such product",
        "add_to_cart",
    )


def test_the_classifier_marks_an_output_blocked_with_its_gate():
    def gates(name, output):
        if name == "apply_changes" and isinstance(output, dict) and output.get("needs_approval"):
            return ("blocked", "approval: a person approves staged changes")
        return None

    b = EventBuilder(ConvertOptions(classify=gates))
    b.call("c1", "apply_changes", {})
    blocked = b.result("c1", {"needs_approval": True})
    b.call("c2", "apply_changes", {})
    fine = b.result("c2", {"applied": 1})
    assert (blocked.status, blocked.reason) == (
        "blocked",
        "approval: a person approves staged changes",
    )
    assert fine.status == "ok"


def test_a_presentation_call_shows_its_component_once_its_result_is_ok():
    b = EventBuilder()
    b.call("c1", "present_suggestions", {"component": "product_carousel", "product_ids": ["a"]})
    b.result("c1", "shown")
    b.call("c2", "present_suggestions", {"component": "product_card", "product_ids": ["b"]})
    b.result("c2", "boom", error="failed")  # a failed presentation shows nothing
    b.call("c3", "present_suggestions", {"component": "comparison_table"})  # no result at all
    events = b.finish()
    uis = [e for e in events if isinstance(e, Ui)]
    assert [u.component for u in uis] == ["product_carousel", "comparison_table"]
    assert uis[0].payload == {"product_ids": ["a"]}


def test_presentation_tools_are_configurable():
    options = ConvertOptions(ui_tools={"show_cart": "cart_summary"})
    b = EventBuilder(options)
    b.call("c1", "show_cart", {"note": "x"})
    b.result("c1", "ok")
    b.call("c2", "present_suggestions", {"component": "product_card"})
    b.result("c2", "ok")
    assert [e.component for e in b.finish() if isinstance(e, Ui)] == ["cart_summary"]


def _convert(messages, *, options):
    b = EventBuilder(options)
    for m in messages:
        b.text(m)
    return b.finish()


def test_the_agent_converts_what_the_function_returns_sync_or_async():
    agent = framework_agent(lambda session, message: [f"echo {message}"], _convert)
    assert agent.run_turn(None, "hi") == [Text(text="echo hi")]

    async def run(session, message):
        return [f"async {message}"]

    pending = framework_agent(run, _convert).run_turn(None, "hi")
    assert asyncio.run(pending) == [Text(text="async hi")]
    assert isinstance(EventBuilder().call("c", "t"), ToolCall)
    assert ToolResult(call_id="c").status == "ok"
