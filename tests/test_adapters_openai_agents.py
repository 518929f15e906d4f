"""The OpenAI Agents SDK converter and scripted model, against the real SDK (no network: a custom
`Model` scripts the responses, tracing is off)."""

import asyncio
import importlib.metadata
import json
import textwrap

import pytest

agents = pytest.importorskip("agents", reason="openai-agents is in the [frameworks] extra")

from agents import (  # noqa: E402
    Agent,
    ItemHelpers,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from pytest_commerce_evals.adapters.core import ConvertOptions  # noqa: E402
from pytest_commerce_evals.adapters.openai_agents import (  # noqa: E402
    SDK_FAILURE_MESSAGE,
    TOOL_FAILURE_MARKER,
    agents_model,
    events_from_agents_items,
    failure_error_function,
    tool_failure_reason,
)
from pytest_commerce_evals.events import Text, ToolCall, ToolResult, Ui  # noqa: E402
from pytest_commerce_evals.testing import FakeClient, tool_reply  # noqa: E402

set_tracing_disabled(True)
NO_TRACING = RunConfig(tracing_disabled=True)


def run(agent, message):
    """One run on its own event loop (`Runner.run_sync` leaves the thread's loop open)."""
    return asyncio.run(Runner.run(agent, message, run_config=NO_TRACING))


def call(call_id, name, **arguments):
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=json.dumps(arguments)
    )


def say(text):
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptModel(Model):
    """Answers each model call with the next list of output items."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.inputs = []

    async def get_response(self, system_instructions, input, *args, **kwargs):
        self.inputs.append(input)
        return ModelResponse(output=self.responses.pop(0), usage=Usage(), response_id=None)

    async def stream_response(self, *args, **kwargs):  # pragma: no cover - not streamed here
        raise NotImplementedError
        yield


@function_tool
def search_products(query: str) -> dict:
    """Search the catalog."""
    return {"products": [{"id": "shoe-001", "title": "Trail runner"}]}


@function_tool
def add_to_cart(product_id: str, quantity: int = 1) -> str:
    """Add a product to the cart (this one always fails: the default failure function)."""
    raise ValueError(f"no such product: {product_id}")


def add_to_cart_marked_impl(product_id: str, quantity: int = 1) -> str:
    """Add a product to the cart (fails, with the marking failure function)."""
    raise LookupError(f"no such product: {product_id}")


add_to_cart_marked = function_tool(
    add_to_cart_marked_impl,
    name_override="add_to_cart",
    failure_error_function=failure_error_function(),
)


def two_tool_turn(cart_tool):
    model = ScriptModel(
        [call("c1", "search_products", query="trail shoes")],
        [call("c2", "add_to_cart", product_id="nope")],
        [say("I could not add it, sorry.")],
    )
    agent = Agent(name="shop", instructions="Help.", tools=[search_products, cart_tool])
    result = run(agent.clone(model=model), "add trail shoes")
    return result, model


def test_sdk_default_failure_text_is_the_one_recognised():
    from agents.tool import default_tool_error_function

    text = default_tool_error_function(None, ValueError("x"))
    assert text.startswith(SDK_FAILURE_MESSAGE)
    assert tool_failure_reason(text) == text
    assert tool_failure_reason("Tool 'search' timed out after 2.5 seconds.") is not None
    assert tool_failure_reason("An error occurred elsewhere") is None
    assert tool_failure_reason({"error": "x"}) is None


def test_a_two_tool_turn_with_a_failing_tool_converts_in_order():
    from agents.tool import default_tool_error_function

    result, model = two_tool_turn(add_to_cart)
    # the SDK's text for the failure: before 0.23 it also carried the exception's message
    failure = default_tool_error_function(None, ValueError("no such product: nope"))
    events = events_from_agents_items(result.new_items)
    assert events == [
        ToolCall(call_id="c1", name="search_products", arguments={"query": "trail shoes"}),
        ToolResult(
            call_id="c1",
            name="search_products",
            status="ok",
            result={"products": [{"id": "shoe-001", "title": "Trail runner"}]},
        ),
        ToolCall(call_id="c2", name="add_to_cart", arguments={"product_id": "nope"}),
        ToolResult(
            call_id="c2",
            name="add_to_cart",
            status="error",
            reason=failure,
            result=failure,
        ),
        Text(text="I could not add it, sorry."),
    ]
    assert ItemHelpers.text_message_outputs(result.new_items) == "I could not add it, sorry."
    # the model saw the failure text as the tool's output
    assert any(
        i.get("type") == "function_call_output" and SDK_FAILURE_MESSAGE in str(i.get("output"))
        for i in model.inputs[-1]
    )


def test_the_marking_failure_function_names_the_error():
    result, _ = two_tool_turn(add_to_cart_marked)
    failed = [e for e in events_from_agents_items(result.new_items) if isinstance(e, ToolResult)]
    assert failed[-1].status == "error"
    assert failed[-1].reason == "LookupError: no such product: nope"
    assert failed[-1].result == f"{TOOL_FAILURE_MARKER} LookupError: no such product: nope"
    hidden = failure_error_function(include_error=False)(None, LookupError("secret"))
    assert hidden == f"{TOOL_FAILURE_MARKER} the tool raised LookupError."
    assert "secret" not in hidden and tool_failure_reason(hidden) == "the tool raised LookupError."


def test_to_input_list_dicts_read_the_same_as_run_items():
    result, _ = two_tool_turn(add_to_cart)
    items = result.to_input_list()
    assert items[0]["role"] == "user"  # the turn's input: skipped
    assert events_from_agents_items(items) == events_from_agents_items(result.new_items)


def test_classifier_blocks_and_presentation_tools_show_components():
    items = [
        {"type": "function_call", "call_id": "a", "name": "apply_changes", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": '{"needs_approval": true}'},
        {
            "type": "function_call",
            "call_id": "b",
            "name": "present_suggestions",
            "arguments": '{"component": "product_carousel", "product_ids": ["shoe-001"]}',
        },
        {
            "type": "function_call_output",
            "call_id": "b",
            "output": [{"type": "input_text", "text": "shown"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "No."}],
        },
    ]

    def gates(name, output):
        if isinstance(output, dict) and output.get("needs_approval"):
            return ("blocked", "approval: staged changes need a person")
        return None

    events = events_from_agents_items(items, options=ConvertOptions(classify=gates))
    assert (events[1].status, events[1].reason) == (
        "blocked",
        "approval: staged changes need a person",
    )
    assert events[3].result == "shown"
    assert events[4] == Ui(component="product_carousel", payload={"product_ids": ["shoe-001"]})
    assert events[5] == Text(text="No.")


needs_approvals = pytest.mark.skipif(
    not hasattr(agents.items, "ToolApprovalItem"),
    reason=f"openai-agents {importlib.metadata.version('openai-agents')} has no tool approvals",
)


@needs_approvals
def test_a_tool_waiting_for_approval_is_blocked_by_the_approval_gate():
    @function_tool(needs_approval=True)
    def apply_changes() -> str:
        """Apply the staged changes."""
        return "applied"

    model = ScriptModel([call("c9", "apply_changes")])
    agent = Agent(name="ops", tools=[apply_changes], model=model)
    result = run(agent, "apply them")
    assert result.interruptions
    events = events_from_agents_items([*result.new_items, *result.interruptions])  # listed twice
    assert [type(e).__name__ for e in events] == ["ToolCall", "ToolResult"]
    assert (events[1].status, events[1].name) == ("blocked", "apply_changes")
    assert events[1].reason.startswith("approval: ")


def test_a_handoff_reads_as_a_call_and_its_result():
    refunds = Agent(name="Refunds", model=ScriptModel([say("Refund started.")]))
    triage = Agent(
        name="Triage",
        handoffs=[refunds],
        model=ScriptModel([call("h1", "transfer_to_refunds")]),
    )
    result = run(triage, "refund please")
    events = events_from_agents_items(result.new_items)
    assert [type(e).__name__ for e in events] == ["ToolCall", "ToolResult", "Text"]
    assert (events[0].name, events[1].status, events[2].text) == (
        "transfer_to_refunds",
        "ok",
        "Refund started.",
    )


def test_agents_model_sends_chat_requests_and_reads_the_replies():
    client = FakeClient(
        [
            tool_reply("search_products", query="trail").also("add_to_cart", product_id="x"),
            "Done.",
        ]
    )
    agent = Agent(name="shop", instructions="Be brief.", tools=[search_products, add_to_cart])
    result = run(agent.clone(model=agents_model(client)), "find trail shoes")
    events = events_from_agents_items(result.new_items)
    assert [(type(e).__name__, getattr(e, "status", None)) for e in events] == [
        ("ToolCall", None),
        ("ToolCall", None),
        ("ToolResult", "ok"),
        ("ToolResult", "error"),
        ("Text", None),
    ]
    first, second = client.requests
    assert first["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "find trail shoes"},
    ]
    assert {t["function"]["name"] for t in first["tools"]} == {"search_products", "add_to_cart"}
    assert [m["role"] for m in second["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    assert json.loads(second["messages"][3]["content"])["products"][0]["id"] == "shoe-001"


def test_agents_model_awaits_an_async_client_and_refuses_streaming():
    from pytest_commerce_evals.errors import ConfigurationError
    from pytest_commerce_evals.testing import AsyncFakeClient

    client = AsyncFakeClient(["hello"])
    agent = Agent(name="shop", model=agents_model(client))
    result = asyncio.run(Runner.run(agent, "hi", run_config=NO_TRACING))
    assert result.final_output == "hello"

    async def stream():
        streamed = Runner.run_streamed(
            Agent(name="s", model=agents_model(FakeClient(["x"]))), "hi", run_config=NO_TRACING
        )
        async for _ in streamed.stream_events():
            pass

    with pytest.raises(ConfigurationError, match="run_streamed is not scripted"):
        asyncio.run(stream())


# The recipe in docs/adapters.md ("OpenAI Agents SDK") is CONFTEST; the test appends
# TEAM_MODEL, which swaps the team's model for a scripted one.
TEAM_MODEL = """
from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply

# search, then add an unknown product (the tool raises), then claim success
SCRIPT = [
    tool_reply("search_products", query="trail"),
    tool_reply("add_to_cart", product_id="shoe-999"),
    text_reply("Added the Trail runner to your cart."),
]


def team_model():  # replaces the recipe's: no network in tests
    return agents_model(FakeClient(list(SCRIPT)))
"""

CONFTEST = """
import pytest
from agents import Agent, RunConfig, Runner, function_tool

from pytest_commerce_evals import Snapshot
from pytest_commerce_evals.adapters.core import framework_agent
from pytest_commerce_evals.adapters.openai_agents import agents_model, events_from_agents_items

CATALOG = {"shoe-001": "Trail runner"}


class Shop:
    def __init__(self):
        self.cart = []

    def load_state(self, state):
        self.cart = [line.product_id for line in state.cart]

    def snapshot(self):
        return Snapshot.from_data(cart=self.cart)


def shop_agent(shop):
    @function_tool
    def search_products(query: str) -> dict:
        \"\"\"Search the catalog.\"\"\"
        return {"products": [{"id": p, "title": t} for p, t in CATALOG.items()]}

    @function_tool
    def add_to_cart(product_id: str) -> str:
        \"\"\"Add a product to the cart.\"\"\"
        if product_id not in CATALOG:
            raise KeyError(product_id)
        shop.cart.append(product_id)
        return "added"

    return Agent(name="shop", instructions="Help.", tools=[search_products, add_to_cart])


def agent_for(shop, model):
    async def run(session, message):
        agent = shop_agent(shop).clone(model=model)
        result = await Runner.run(agent, message, run_config=RunConfig(tracing_disabled=True))
        return result.new_items

    return framework_agent(run, events_from_agents_items)


def team_model():
    return "gpt-4o"  # the model your agent runs on: a name or any agents.Model


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_backend(config, case):
    return Shop()


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_agent(config, case, backend):
    return agent_for(backend, team_model())


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_scripted_agent(config, case, backend, client):
    return agent_for(backend, agents_model(client))
"""

CASE = """
- id: cart-001-add-trail-shoes
  priority: high
  difficulty: easy
  turns: ["Add the trail runner to my cart"]
  expected:
    calls_tool: [search_products, add_to_cart]
    cart_contains: [shoe-001]
"""


@pytest.fixture
def agents_project(pytester):
    pytester.makeconftest(CONFTEST + TEAM_MODEL)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(textwrap.dedent(CASE))
    return pytester


def test_the_plugin_grades_an_agents_sdk_agent_and_its_failed_tool(agents_project):
    result = agents_project.runpytest("cases", "--commerce-json=run.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*1 of 2 expectations failed:",
            "*✗ cart_contains: expected shoe-001 in the cart; final cart: empty",
            "*passed: calls_tool",
        ]
    )
    (trial,) = json.loads((agents_project.path / "run.json").read_text())["trials"]
    assert trial["outcome"] == "fail"
    assert {g["key"]: g["passed"] for g in trial["grader_results"]} == {
        "calls_tool": True,
        "cart_contains": False,
    }
    results = [e for e in trial["turns"][0] if e["type"] == "tool_result"]
    assert [(e["name"], e["status"]) for e in results] == [
        ("search_products", "ok"),
        ("add_to_cart", "error"),
    ]
    assert results[1]["reason"].startswith(SDK_FAILURE_MESSAGE)


def test_the_vacuity_check_drives_the_agents_sdk_agent(agents_project):
    result = agents_project.runpytest("cases", "--commerce-vacuity")
    # the cart adder reads the product IDs from the search's dict (sent to the model as JSON)
    # and passes: the case has teeth against every other degenerate agent
    result.stdout.fnmatch_lines(
        [
            "*1 cases checked against 5 degenerate agents; 0 with findings",
            "*refuser     fails    1 of 1 cases",
            "*mute        fails    1 of 1 cases",
            "*cart_adder  fails    0 of 1 cases",
        ]
    )
    assert result.ret == 0


def test_the_adapter_imports_without_the_sdk():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['agents'] = None\n"
        "from pytest_commerce_evals.adapters import openai_agents as m\n"
        "from pytest_commerce_evals.errors import ConfigurationError\n"
        "items = [{'type': 'function_call', 'call_id': 'a', 'name': 't', 'arguments': '{}'},\n"
        "         {'type': 'function_call_output', 'call_id': 'a',\n"
        "          'output': 'An error occurred while running the tool. Please try again.'}]\n"
        "print(m.events_from_agents_items(items)[1].status)\n"
        "try:\n"
        "    m.agents_model(None)\n"
        "except ConfigurationError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "error"
    assert lines[1].startswith("agents_model needs the OpenAI Agents SDK")


def test_agents_model_names_a_reply_that_is_not_a_chat_completion():
    from pytest_commerce_evals.errors import ConfigurationError

    class NoChoices:
        class chat:
            class completions:
                @staticmethod
                def create(**request):
                    return {"id": "x", "choices": []}

    agent = Agent(name="shop", model=agents_model(NoChoices()))
    with pytest.raises(
        ConfigurationError, match=r"no choices \(.*\); it must read like a chat completion"
    ):
        run(agent, "hi")


def test_the_docs_recipe_is_the_conftest_tested_here():
    from pathlib import Path

    docs = (Path(__file__).parent.parent / "docs" / "adapters.md").read_text()
    section = docs.split("### OpenAI Agents SDK", 1)[1]
    recipe = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert recipe.strip() == CONFTEST.strip()


@needs_approvals
def test_a_refused_approval_is_blocked_and_a_decided_call_has_one_result():
    from agents import Agent, function_tool
    from agents.items import ToolApprovalItem, ToolCallItem, ToolCallOutputItem
    from agents.tool import DEFAULT_APPROVAL_REJECTION_MESSAGE
    from openai.types.responses import ResponseFunctionToolCall

    from pytest_commerce_evals.adapters.openai_agents import events_from_agents_items
    from pytest_commerce_evals.events import ToolResult, Ui

    @function_tool
    def present_suggestions(component: str) -> str:
        return "shown"

    agent = Agent(name="shop", tools=[present_suggestions])

    def call(call_id, name, arguments):
        return ResponseFunctionToolCall(
            type="function_call",
            call_id=call_id,
            name=name,
            arguments=arguments,
            id=f"fc_{call_id}",
        )

    def output(call_id, text):
        raw = {"type": "function_call_output", "call_id": call_id, "output": text}
        return ToolCallOutputItem(agent=agent, raw_item=raw, output=text)

    refused = call("c1", "apply_changes", "{}")
    shown = call("c2", "present_suggestions", '{"component": "product_card"}')
    waiting = call("c3", "present_suggestions", '{"component": "product_carousel"}')
    items = [
        ToolCallItem(agent=agent, raw_item=refused),
        ToolApprovalItem(agent=agent, raw_item=refused),
        output("c1", DEFAULT_APPROVAL_REJECTION_MESSAGE),  # a person said no
        ToolCallItem(agent=agent, raw_item=shown),
        ToolApprovalItem(agent=agent, raw_item=shown),
        output("c2", "shown"),  # approved, then run
        ToolCallItem(agent=agent, raw_item=waiting),
        ToolApprovalItem(agent=agent, raw_item=waiting),  # still waiting at the turn's end
    ]
    events = events_from_agents_items(items)
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    assert len([e for e in events if isinstance(e, ToolResult)]) == 3  # one per call
    assert (results["c1"].status, results["c1"].reason) == (
        "blocked",
        f"approval: {DEFAULT_APPROVAL_REJECTION_MESSAGE}",
    )
    assert results["c2"].status == "ok" and results["c3"].status == "blocked"
    # only the call that was approved and ran shows its component
    assert [e.component for e in events if isinstance(e, Ui)] == ["product_card"]


@needs_approvals
def test_a_refusal_with_a_message_of_its_own_is_blocked_given_the_runs_context():
    from agents import Agent, RunContextWrapper
    from agents.items import ToolApprovalItem, ToolCallItem, ToolCallOutputItem
    from openai.types.responses import ResponseFunctionToolCall

    agent = Agent(name="ops")
    raw = ResponseFunctionToolCall(
        type="function_call", call_id="c1", name="apply_changes", arguments="{}", id="fc_c1"
    )
    context = RunContextWrapper(context=None)
    context.reject_tool(
        ToolApprovalItem(agent=agent, raw_item=raw), rejection_message="a person refused"
    )
    output = {"type": "function_call_output", "call_id": "c1", "output": "a person refused"}
    items = [
        ToolCallItem(agent=agent, raw_item=raw),
        ToolCallOutputItem(agent=agent, raw_item=output, output="a person refused"),
    ]
    [_, result] = events_from_agents_items(items, context=context)
    assert (result.status, result.reason) == ("blocked", "approval: a person refused")
    # without the context the text alone cannot tell a refusal from a tool's own answer
    [_, plain] = events_from_agents_items(items)
    assert plain.status == "ok"
