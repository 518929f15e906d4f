"""The converters' shared rules: arguments, outputs, failures, the classifier, the UI convention,
and the agent made of a function returning a framework's new messages."""

import asyncio
import textwrap

import pytest

from pytest_commerce_evals.adapters.core import (
    ConversionError,
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


# -- a converter that cannot read its input: a glue error, never the agent's failure ----------


def _chat():
    from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages

    return events_from_chat_messages


def _responses():
    from pytest_commerce_evals.adapters.openai_responses import events_from_responses_items

    return events_from_responses_items


DEEP = "[" * 5000


@pytest.mark.parametrize(
    ("convert", "messages", "says"),
    [
        (_chat, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": 5}],
         "events_from_chat_messages could not read item 1 ({'role': 'assistant', 'content': 5}): "
         "TypeError"),
        (_chat, [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"arguments": "{}"}}]}],
         "events_from_chat_messages could not read item 0 "),
        (_chat, 5, "events_from_chat_messages takes a list of messages; found 5"),
        (_responses, [{"type": "function_call", "call_id": 5, "name": None, "arguments": "{}"}],
         "events_from_responses_items could not read item 0 "),
    ],
)  # fmt: skip
def test_a_converter_names_itself_and_the_item_it_cannot_read(convert, messages, says):
    with pytest.raises(ConversionError) as info:
        convert()(messages)
    assert str(info.value).startswith(says), str(info.value)


def test_a_conversion_the_agent_did_not_cause_ends_the_trial_as_a_glue_error(pytester):
    pytester.makeconftest(
        textwrap.dedent("""
        from pytest_commerce_evals import Snapshot
        from pytest_commerce_evals.adapters.core import framework_agent
        from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages

        class Backend:
            def load_state(self, state):
                pass

            def snapshot(self):
                return Snapshot()

        def pytest_commerce_evals_make_backend(config, case):
            return Backend()

        def pytest_commerce_evals_make_agent(config, case, backend):
            def run(session, message):
                return [{"role": "assistant", "content": 5}]  # not what the SDK returns
            return framework_agent(run, events_from_chat_messages)
        """)
    )
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "chat.yaml").write_text(
        "id: chat-001-hello\npriority: low\ndifficulty: easy\nturns: [hi]\n"
        "expected: {reply_includes: [hello]}\n"
    )
    result = pytester.runpytest("cases", "--commerce-store=none", "--commerce-no-judge")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*commerce-evals glue error (not counted against the agent): "
            "events_from_chat_messages could not read item 0 (*'content': 5}): TypeError*"
        ]
    )
    assert "the agent raised" not in result.stdout.str()


def test_arguments_nested_past_pythons_limit_are_kept_as_their_text():
    [call, *_] = _chat()(
        [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": DEEP}}]}]
    )  # fmt: skip
    assert call == ToolCall(call_id="c1", name="f", arguments={"_raw": DEEP})
    assert parse_arguments(DEEP) == {"_raw": DEEP}
