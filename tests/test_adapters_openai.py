"""The OpenAI converters: chat-completions message lists and Responses API items, read from the
SDK's own types, dicts and the plugin's `Record` replies; and each one end to end through the
plugin (a plain OpenAI agent in a conftest, a case YAML, the graded outcome)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pydantic
import pytest
from openai.types.chat import ChatCompletionMessage
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseFunctionToolCallOutputItem,
    ResponseOutputMessage,
    ResponseOutputRefusal,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_input_item import FunctionCallOutput

from pytest_commerce_evals.adapters.core import ConvertOptions
from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages
from pytest_commerce_evals.adapters.openai_responses import events_from_responses_items
from pytest_commerce_evals.events import Text, ToolCall, ToolResult, Ui
from pytest_commerce_evals.testing import FakeClient, tool_reply


def gates(name, output):
    """A team's classifier: its backend answers a gated call with {"blocked": "<gate>: why"}."""
    if isinstance(output, dict) and output.get("blocked"):
        return ("blocked", output["blocked"])
    return None


def sdk_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# -- chat completions -------------------------------------------------------------------------


def test_chat_messages_from_the_sdk_types_read_as_calls_results_and_text():
    messages = [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": "Add the trail runner"},
        ChatCompletionMessage(
            role="assistant",
            content="Let me look.",
            tool_calls=[sdk_call("c1", "search_products", '{"query": "trail"}')],
        ),
        {"role": "tool", "tool_call_id": "c1", "content": '{"products": ["shoe-001"]}'},
        ChatCompletionMessage(
            role="assistant",
            content=None,
            tool_calls=[sdk_call("c2", "add_to_cart", '{"product_id": "shoe-001"}')],
        ),
        {"role": "tool", "tool_call_id": "c2", "content": "added"},
        ChatCompletionMessage(role="assistant", content="Added the Trail runner."),
    ]
    assert events_from_chat_messages(messages) == [
        Text(text="Let me look."),
        ToolCall(call_id="c1", name="search_products", arguments={"query": "trail"}),
        ToolResult(call_id="c1", name="search_products", result={"products": ["shoe-001"]}),
        ToolCall(call_id="c2", name="add_to_cart", arguments={"product_id": "shoe-001"}),
        ToolResult(call_id="c2", name="add_to_cart", result="added"),
        Text(text="Added the Trail runner."),
    ]


def test_a_chat_tool_output_says_it_failed_by_the_documented_convention():
    calls = [sdk_call(f"c{i}", "add_to_cart", '{"product_id": "x"}') for i in range(1, 7)]
    messages = [
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": '{"error": "KeyError: shoe-404"}'},
        {"role": "tool", "tool_call_id": "c2", "content": "no such product", "is_error": True},
        {"role": "tool", "tool_call_id": "c3", "content": "", "status": "error"},
        {"role": "tool", "tool_call_id": "c4", "content": '{"error": {"code": 404}}'},
        # an empty error key and an "error" inside plain text are ordinary outputs
        {"role": "tool", "tool_call_id": "c5", "content": '{"error": null, "cart": ["x"]}'},
        {"role": "tool", "tool_call_id": "c6", "content": "error: none, added"},
    ]
    results = [e for e in events_from_chat_messages(messages) if isinstance(e, ToolResult)]
    assert [(r.status, r.reason) for r in results] == [
        ("error", "KeyError: shoe-404"),
        ("error", "no such product"),
        ("error", "the tool reported an error"),
        ("error", '{"code": 404}'),
        ("ok", None),
        ("ok", None),
    ]
    assert results[0].name == "add_to_cart" and results[0].result == {"error": "KeyError: shoe-404"}


def test_the_classifier_marks_a_chat_tool_output_blocked_with_its_gate():
    messages = [
        {"role": "assistant", "tool_calls": [sdk_call("c1", "apply_changes", "{}")]},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": '{"blocked": "approval: needs a person"}',
        },
        {"role": "assistant", "tool_calls": [sdk_call("c2", "apply_changes", "{}")]},
        {"role": "tool", "tool_call_id": "c2", "content": '{"applied": 1}'},
    ]
    options = ConvertOptions(classify=gates)
    results = [
        e for e in events_from_chat_messages(messages, options=options) if e.type == "tool_result"
    ]
    assert [(r.status, r.reason) for r in results] == [
        ("blocked", "approval: needs a person"),
        ("ok", None),
    ]
    # a failure by the convention stays a failure: the classifier reads only successful outputs
    failing = [messages[0], {"role": "tool", "tool_call_id": "c1", "content": '{"error": "down"}'}]
    assert events_from_chat_messages(failing, options=options)[-1].status == "error"


def test_chat_replies_of_the_plugin_client_read_like_the_sdk_ones():
    client = FakeClient(
        [tool_reply("present_suggestions", component="product_card", product_ids=["shoe-001"])]
    )
    completion = client.chat.completions.create(model="m", messages=[])
    call_id = completion.choices[0].message.tool_calls[0].id
    tool = {"role": "tool", "tool_call_id": call_id, "content": "shown"}
    from_message = events_from_chat_messages([completion.choices[0].message, tool])
    from_completion = events_from_chat_messages([completion, tool])  # a whole completion
    assert from_message == from_completion
    assert [e.type for e in from_message] == ["tool_call", "tool_result", "ui"]
    assert from_message[-1] == Ui(component="product_card", payload={"product_ids": ["shoe-001"]})


def test_chat_content_parts_refusals_and_results_of_earlier_turns():
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Two "}, {"type": "text", "text": "options."}],
        },
        ChatCompletionMessage(role="assistant", content=None, refusal="I can't help with that."),
        # a result whose call was in an earlier turn is named by the message's own name
        {
            "role": "tool",
            "tool_call_id": "old",
            "name": "get_order",
            "content": [{"type": "text", "text": '{"id": "o1"}'}],
        },
    ]
    assert events_from_chat_messages(messages) == [
        Text(text="Two options."),
        Text(text="I can't help with that."),
        ToolResult(call_id="old", name="get_order", result={"id": "o1"}),
    ]


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ({"role": "function", "name": "f", "content": "x"}, "deprecated role 'function'"),
        ({"role": "critic", "content": "x"}, "role 'critic'; expected a chat message"),
        ("just text", "a str with no role"),
    ],
)
def test_what_is_not_a_chat_message_is_refused_with_what_was_found(message, says):
    with pytest.raises(ValueError, match="message 1 has") as raised:
        events_from_chat_messages([{"role": "user", "content": "hi"}, message])
    assert says in str(raised.value)
    assert "system, developer, user, assistant, tool" in str(raised.value) or "function" in says


def test_custom_tool_calls_keep_their_free_text_input():
    chat = [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"error": "read-only"}'},
    ]
    responses = [
        {"type": "custom_tool_call", "call_id": "c1", "name": "sql", "input": "SELECT 1"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": '{"error": "read-only"}'},
    ]
    expected = [
        ToolCall(call_id="c1", name="sql", arguments={"_raw": "SELECT 1"}),
        ToolResult(
            call_id="c1",
            name="sql",
            status="error",
            reason="read-only",
            result={"error": "read-only"},
        ),
    ]
    assert events_from_chat_messages(chat) == expected
    assert events_from_responses_items(responses) == expected


# -- Responses API ----------------------------------------------------------------------------


def output_message(*parts):
    return ResponseOutputMessage(
        id="msg_1", role="assistant", status="completed", type="message", content=list(parts)
    )


def output_parts_item(**fields):
    """A tool output made of content parts: the SDK's type where it holds parts (openai 1.x
    types take only text), else the same item as the dict the API sends."""
    try:
        return ResponseFunctionToolCallOutputItem(**fields)
    except pydantic.ValidationError:
        return fields


def test_responses_items_from_the_sdk_types_read_as_calls_results_and_text():
    items = [
        {"role": "user", "content": "Add the trail runner"},  # the input: skipped
        ResponseReasoningItem(id="rs_1", summary=[], type="reasoning"),  # skipped
        ResponseFunctionToolCall(
            type="function_call",
            call_id="call_1",
            name="search_products",
            arguments='{"query": "trail"}',
        ),
        FunctionCallOutput(
            type="function_call_output", call_id="call_1", output='{"products": ["shoe-001"]}'
        ),
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},  # OpenAI's own tool
        ResponseFunctionToolCall(
            type="function_call",
            call_id="call_2",
            name="add_to_cart",
            arguments='{"product_id": "shoe-001"}',
        ),
        output_parts_item(
            id="fco_2",
            type="function_call_output",
            call_id="call_2",
            status="completed",
            output=[{"type": "input_text", "text": "added"}],
        ),
        output_message(
            ResponseOutputText(type="output_text", text="Added the Trail runner.", annotations=[])
        ),
    ]
    assert events_from_responses_items(items) == [
        ToolCall(call_id="call_1", name="search_products", arguments={"query": "trail"}),
        ToolResult(call_id="call_1", name="search_products", result={"products": ["shoe-001"]}),
        ToolCall(call_id="call_2", name="add_to_cart", arguments={"product_id": "shoe-001"}),
        ToolResult(call_id="call_2", name="add_to_cart", result="added"),
        Text(text="Added the Trail runner."),
    ]


def test_a_responses_tool_output_fails_by_the_convention_or_is_blocked_by_the_classifier():
    items = [
        ResponseFunctionToolCall(
            type="function_call", call_id="c1", name="add_to_cart", arguments="{}"
        ),
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"error": "KeyError: shoe-404"}',
        },
        ResponseFunctionToolCall(
            type="function_call", call_id="c2", name="apply_changes", arguments="{}"
        ),
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": '{"blocked": "approval: needs a person"}',
        },
        ResponseFunctionToolCall(
            type="function_call", call_id="c3", name="save_memory", arguments="{}"
        ),
        {"type": "function_call_output", "call_id": "c3", "output": "refused", "is_error": True},
    ]
    results = [
        e
        for e in events_from_responses_items(items, options=ConvertOptions(classify=gates))
        if isinstance(e, ToolResult)
    ]
    assert [(r.name, r.status, r.reason) for r in results] == [
        ("add_to_cart", "error", "KeyError: shoe-404"),
        ("apply_changes", "blocked", "approval: needs a person"),
        ("save_memory", "error", "refused"),
    ]
    # without the classifier the gated output is an ordinary result
    assert events_from_responses_items(items)[3].status == "ok"


def test_a_whole_response_reads_as_its_output_and_refusals_are_text():
    response = Response.model_construct(
        object="response",
        output=[
            output_message(
                ResponseOutputText(type="output_text", text="Sorry, ", annotations=[]),
                ResponseOutputRefusal(type="refusal", refusal="I can't do that."),
            )
        ],
    )
    assert events_from_responses_items([response]) == [
        Text(text="Sorry, "),
        Text(text="I can't do that."),
    ]


def test_what_is_not_a_responses_item_is_refused_with_what_was_found():
    with pytest.raises(ValueError, match=r"item 0 is a str with neither a type nor a role"):
        events_from_responses_items(["Found it."])


# -- through the plugin -----------------------------------------------------------------------

CASES = """
- id: cart-001-add-trail
  priority: high
  difficulty: easy
  tags: [cart]
  turns: ["Add the trail runner to my cart"]
  expected:
    calls_tool: [search_products, add_to_cart]
    cart_contains: [shoe-001]
- id: cart-002-add-unknown
  priority: high
  difficulty: easy
  tags: [cart]
  turns: ["Add the trail runner to my cart"]
  expected:
    calls_tool: [search_products, add_to_cart]
    cart_contains: [shoe-001]
"""

# The team's side, as it would be in their code: a backend with the tools, and the graders'
# snapshot of it. Shared by both plugin-level tests.
SHOP = '''
import json

import pytest

from pytest_commerce_evals import Snapshot
from pytest_commerce_evals.adapters.core import framework_agent

CATALOG = {"shoe-001": "Trail runner", "shoe-002": "Road runner"}


class Shop:
    """The team's backend: the tools' code and the state the graders read."""

    def __init__(self):
        self.cart = []

    def load_state(self, state):
        self.cart = [line.product_id for line in state.cart]

    def snapshot(self):
        return Snapshot.from_data(cart=self.cart)

    def search_products(self, query):
        found = [p for p, title in CATALOG.items() if query.lower() in title.lower()]
        return {"products": found}

    def add_to_cart(self, product_id):
        if product_id not in CATALOG:
            raise KeyError(f"no such product: {product_id}")
        self.cart.append(product_id)
        return {"cart": self.cart}

    def run_tool(self, name, arguments):
        """A tool's output as JSON text; a tool that raises answers {"error": ...}."""
        try:
            output = getattr(self, name)(**json.loads(arguments))
        except Exception as exc:
            output = {"error": f"{type(exc).__name__}: {exc}"}
        return json.dumps(output)


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_backend(config, case):
    return Shop()
'''

CHAT_AGENT = '''
from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages
from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply

TOOLS = [
    {"type": "function", "function": {"name": "search_products", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "add_to_cart", "parameters": {
        "type": "object", "properties": {"product_id": {"type": "string"}}}}},
]


def run_agent(client, shop, messages, message):
    """The team's agent: chat completions with tools, in a loop. Returns this turn's messages."""
    start = len(messages)
    messages.append({"role": "user", "content": message})
    while True:
        reply = client.chat.completions.create(
            model="shop-agent", messages=messages, tools=TOOLS
        ).choices[0].message
        messages.append(reply)
        if not reply.tool_calls:
            return messages[start:]
        for call in reply.tool_calls:
            output = shop.run_tool(call.function.name, call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})


SCRIPTS = {  # the model's replies, scripted (in production: openai.OpenAI())
    "cart-001-add-trail": [
        tool_reply("search_products", query="trail"),
        tool_reply("add_to_cart", product_id="shoe-001"),
        text_reply("Added the Trail runner."),
    ],
    "cart-002-add-unknown": [
        tool_reply("search_products", query="trail"),
        tool_reply("add_to_cart", product_id="shoe-404"),
        text_reply("Sorry, I could not add it."),
    ],
}


def chat_agent(client, shop):
    def run(session, message):
        return run_agent(client, shop, session.scratch.setdefault("messages", []), message)
    return framework_agent(run, events_from_chat_messages)


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_agent(config, case, backend):
    return chat_agent(FakeClient(SCRIPTS[case.id]), backend)  # in production: openai.OpenAI()


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_scripted_agent(config, case, backend, client):
    return chat_agent(client, backend)  # --commerce-vacuity drives it with a FakeClient
'''


def run_suite(pytester, conftest):
    pytester.makeconftest(textwrap.dedent(conftest))
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "cart.yaml").write_text(CASES)
    result = pytester.runpytest("cases", "--commerce-json=run.json")
    record = json.loads((pytester.path / "run.json").read_text())
    return result, record


def graded_events(record, case_id):
    trial = next(t for t in record["trials"] if t["case_id"] == case_id)
    return trial, [e for turn in trial["turns"] for e in turn]


def check_the_failing_tool_was_graded(result, record):
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*cart-002-add-unknown trial 1/1: fail*",
            "*1 of 2 expectations failed:",
            "*✗ cart_contains: expected shoe-001 in the cart; final cart: empty*",
        ]
    )
    passing, _ = graded_events(record, "cart-001-add-trail")
    assert passing["outcome"] == "pass"
    failing, events = graded_events(record, "cart-002-add-unknown")
    graded = {g["key"]: g["passed"] for g in failing["grader_results"]}
    assert graded == {"calls_tool": True, "cart_contains": False}
    results = [(e["name"], e["status"], e["reason"]) for e in events if e["type"] == "tool_result"]
    assert results == [
        ("search_products", "ok", None),
        ("add_to_cart", "error", "KeyError: 'no such product: shoe-404'"),
    ]
    assert [e["text"] for e in events if e["type"] == "text"] == ["Sorry, I could not add it."]


def test_a_plain_chat_completions_agent_is_graded_through_the_plugin(pytester):
    result, record = run_suite(pytester, SHOP + CHAT_AGENT)
    check_the_failing_tool_was_graded(result, record)


RESPONSES_AGENT = '''
from pytest_commerce_evals.models.http_client import http_library

http = http_library()  # the HTTP library of the installed SDK: httpx2 from openai 3.0, else httpx
import openai

from pytest_commerce_evals.adapters.openai_responses import events_from_responses_items

TOOLS = [
    {"type": "function", "name": "search_products", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}}},
    {"type": "function", "name": "add_to_cart", "parameters": {
        "type": "object", "properties": {"product_id": {"type": "string"}}}},
]


def run_agent(client, shop, items, message):
    """The team's agent: the Responses API with tools, in a loop. Returns this turn's items."""
    start = len(items)
    items.append({"role": "user", "content": message})
    while True:
        response = client.responses.create(model="shop-agent", input=items, tools=TOOLS)
        items.extend(response.output)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return items[start:]
        for call in calls:
            output = shop.run_tool(call.name, call.arguments)
            items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})


def scripted_openai(outputs):
    """A real openai.OpenAI whose Responses calls are answered offline, one output list each."""
    replies = iter(outputs)

    def answer(request):
        return http.Response(200, json={
            "id": "resp", "object": "response", "created_at": 0, "model": "shop-agent",
            "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "output": next(replies),
        })

    transport = http.MockTransport(answer)
    return openai.OpenAI(api_key="scripted", base_url="http://scripted.invalid/v1",
                         max_retries=0, http_client=http.Client(transport=transport))


def call(n, name, **arguments):
    return {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}


def say(text):
    return {"type": "message", "id": "msg", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


THINK = {"type": "reasoning", "id": "rs", "summary": []}
SCRIPTS = {
    "cart-001-add-trail": [
        [THINK, call(1, "search_products", query="trail")],
        [call(2, "add_to_cart", product_id="shoe-001")],
        [say("Added the Trail runner.")],
    ],
    "cart-002-add-unknown": [
        [THINK, call(1, "search_products", query="trail")],
        [call(2, "add_to_cart", product_id="shoe-404")],
        [THINK, say("Sorry, I could not add it.")],
    ],
}


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_agent(config, case, backend):
    client = scripted_openai(SCRIPTS[case.id])
    def run(session, message):
        return run_agent(client, backend, session.scratch.setdefault("items", []), message)
    return framework_agent(run, events_from_responses_items)
'''


def test_a_responses_api_agent_on_the_real_sdk_is_graded_through_the_plugin(pytester):
    """The SDK's own client, answered offline by its HTTP library's mock transport: the items
    the converter reads are the SDK's parsed `ResponseFunctionToolCall`s and messages."""
    result, record = run_suite(pytester, SHOP + RESPONSES_AGENT)
    check_the_failing_tool_was_graded(result, record)


def test_the_vacuity_check_drives_the_chat_agent_with_scripted_models(pytester):
    """The same agent, given the check's FakeClient: the real cases fail every degenerate agent
    and the case asserting nothing is found."""
    script = 'SCRIPTS["cart-003-vacuous"] = ["Hello!"]\n'
    pytester.makeconftest(textwrap.dedent(SHOP + CHAT_AGENT) + script)
    (pytester.path / "cases").mkdir()
    vacuous = "\n- id: cart-003-vacuous\n  priority: low\n  difficulty: easy\n  tags: [cart]\n"
    vacuous += '  turns: ["Hi"]\n  expected: {never_calls: [save_memory]}\n'
    (pytester.path / "cases" / "cart.yaml").write_text(CASES + vacuous)
    result = pytester.runpytest("cases", "--commerce-vacuity")
    result.stdout.fnmatch_lines(
        [
            "3 cases checked against 5 degenerate agents; 1 with findings",
            "*cart_adder  fails    2 of 3 cases",
            "*cart-003-vacuous: vacuous: every degenerate agent passes it*",
        ]
    )
    result.assert_outcomes(passed=2, failed=1)


def _block(text, start):
    """The lines from the one starting with `start` to the next blank line."""
    lines = text[text.index(start) :].splitlines()
    return "\n".join(lines[: lines.index("")])


@pytest.mark.parametrize(
    ("heading", "source", "blocks"),
    [
        ("### Plain OpenAI calls", CHAT_AGENT, ["def run_agent(", "def chat_agent("]),
        ("### OpenAI Responses API", RESPONSES_AGENT, ["def run_agent("]),
    ],
    ids=["chat", "responses"],
)
def test_the_recipes_are_the_code_the_tests_run(heading, source, blocks):
    """docs/adapters.md shows the agent and the glue these tests run, line for line."""
    docs = (Path(__file__).parents[1] / "docs" / "adapters.md").read_text()
    section = docs.split(heading, 1)[1].split("\n## ", 1)[0]  # the recipe and what follows it
    for start in blocks:
        assert _block(section, start) in source
    assert "framework_agent(run, events_from_" in section
