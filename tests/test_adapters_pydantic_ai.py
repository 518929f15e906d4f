"""pydantic-ai's message history as events, on messages a real `Agent` produced with a scripted
`FunctionModel` (no network): failed, retried and denied tool calls must not read as successes.
Then the converter and the scripted-model helper through the plugin (pytester)."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("pydantic_ai", reason="pydantic-ai is in the [frameworks] extra")

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ModelRetry, ToolDenied
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import FunctionModel

from pytest_commerce_evals.adapters.core import (
    PENDING_APPROVAL,
    ConvertOptions,
    TurnMessages,
    framework_agent,
)
from pytest_commerce_evals.adapters.pydantic_ai import events_from_pydantic_ai, pydantic_ai_model
from pytest_commerce_evals.authoring.vacuity import degenerate_script
from pytest_commerce_evals.events import Text, ToolCall, ToolResult, Ui

HERE = Path(__file__).parent


def scripted(*responses: list) -> FunctionModel:
    """A FunctionModel answering with `responses[i]` (a list of parts) on its i-th request."""

    def reply(messages, info):
        step = sum(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=responses[min(step, len(responses) - 1)])

    return FunctionModel(reply)


def shop_agent(model, add_to_cart_raises: BaseException | None = None) -> Agent:
    agent = Agent(model)

    @agent.tool_plain
    def search_products(query: str) -> dict:
        return {"products": [{"id": "shoe-001", "title": "Trail runner"}]}

    @agent.tool_plain(retries=3)
    def add_to_cart(product_id: str, quantity: int = 1) -> str:
        if add_to_cart_raises is not None:
            raise add_to_cart_raises
        return "added"

    return agent


TWO_TOOLS = [
    ToolCallPart("search_products", {"query": "trail shoes"}, tool_call_id="c1"),
    ToolCallPart("add_to_cart", '{"product_id": "shoe-001"}', tool_call_id="c2"),
]


def run(agent: Agent, *args, **kwargs):
    """`agent.run` to completion (`run_sync` would leave its event loop open behind it)."""
    return asyncio.run(agent.run(*args, **kwargs))


def results(events) -> dict[str, ToolResult]:
    return {e.call_id: e for e in events if isinstance(e, ToolResult)}


def test_a_tool_raising_model_retry_is_an_error_not_a_success():
    model = scripted(TWO_TOOLS, [TextPart("Added the trail runner.")])
    agent = shop_agent(model, ModelRetry("shoe-001 is out of stock"))
    events = events_from_pydantic_ai(run(agent, "trail shoes").new_messages())
    assert [type(e) for e in events] == [ToolCall, ToolCall, ToolResult, ToolResult, Text]
    assert events[0] == ToolCall(
        call_id="c1", name="search_products", arguments={"query": "trail shoes"}
    )
    assert events[1].arguments == {"product_id": "shoe-001"}  # a JSON string read as a dict
    found, added = results(events)["c1"], results(events)["c2"]
    assert (found.status, found.result["products"][0]["id"]) == ("ok", "shoe-001")
    assert (added.status, added.name) == ("error", "add_to_cart")
    assert added.reason == "retried: shoe-001 is out of stock"
    assert events[-1] == Text(text="Added the trail runner.")


def test_a_tool_raising_tool_failed_is_an_error():
    model = scripted(TWO_TOOLS, [TextPart("Sorry.")])
    agent = shop_agent(model, ToolFailed("the cart service is down"))
    added = results(events_from_pydantic_ai(run(agent, "x").new_messages()))["c2"]
    assert (added.status, added.reason) == ("error", "failed: the cart service is down")


def test_arguments_failing_validation_are_an_error_with_the_validation_details():
    bad = [ToolCallPart("add_to_cart", {"product_id": 5}, tool_call_id="c9")]
    agent = shop_agent(scripted(bad, [TextPart("Sorry.")]))
    result = results(events_from_pydantic_ai(run(agent, "x").new_messages()))["c9"]
    assert result.status == "error" and result.reason.startswith("retried: ")
    assert "valid string" in result.reason


def test_any_other_exception_leaves_the_run_so_the_trial_fails_as_the_agents():
    agent = shop_agent(scripted(TWO_TOOLS, [TextPart("ok")]), ValueError("bug in the tool"))
    with pytest.raises(ValueError, match="bug in the tool"):
        run(agent, "x")


def test_a_denied_approval_is_blocked_by_the_approval_gate():
    model = scripted([ToolCallPart("apply_changes", {}, tool_call_id="a1")], [TextPart("Done.")])
    agent = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def apply_changes() -> str:
        return "applied"

    first = run(agent, "apply the staged changes")
    assert isinstance(first.output, DeferredToolRequests)
    denied = DeferredToolResults(approvals={"a1": ToolDenied("a person must approve")})
    second = run(agent, message_history=first.all_messages(), deferred_tool_results=denied)
    events = events_from_pydantic_ai([*first.new_messages(), *second.new_messages()])
    blocked = results(events)["a1"]
    assert (blocked.status, blocked.name) == ("blocked", "apply_changes")
    assert blocked.reason == "approval: a person must approve"


def test_an_interrupted_call_is_an_error_and_unknown_outcomes_never_read_as_success():
    call = ModelResponse(parts=[ToolCallPart("search_products", {}, tool_call_id="c1")])
    cut = ToolReturnPart("search_products", "no result", tool_call_id="c1", outcome="interrupted")
    result = results(events_from_pydantic_ai([call, ModelRequest(parts=[cut])]))["c1"]
    assert (result.status, result.reason) == ("error", "interrupted: no result")


def test_a_subclass_of_a_tool_part_reads_as_its_base():
    class OrderReturnPart(ToolReturnPart):
        pass

    call = ModelResponse(parts=[ToolCallPart("get_order", {}, tool_call_id="o1")])
    failed = OrderReturnPart("get_order", "no such order", tool_call_id="o1", outcome="failed")
    result = results(events_from_pydantic_ai([call, ModelRequest(parts=[failed])]))["o1"]
    assert (result.status, result.reason) == ("error", "failed: no such order")


def test_a_legacy_retry_prompt_answers_its_call_once():
    from pydantic_ai.messages import RetryPromptPart

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prompt = RetryPromptPart("out of stock", tool_name="add_to_cart", tool_call_id="c2")
        feedback = RetryPromptPart("answer in JSON")  # no tool: answers no call
    retried = ToolReturnPart("add_to_cart", "out of stock", tool_call_id="c2", outcome="retried")
    messages = [
        ModelResponse(parts=[ToolCallPart("add_to_cart", {"product_id": "p"}, tool_call_id="c2")]),
        ModelRequest(parts=[prompt, retried, feedback]),
    ]
    events = events_from_pydantic_ai(messages)
    assert [type(e) for e in events] == [ToolCall, ToolResult]
    assert (events[1].status, events[1].reason) == ("error", "retried: out of stock")
    alone = events_from_pydantic_ai([messages[0], ModelRequest(parts=[prompt, feedback])])
    assert [(type(e), getattr(e, "status", None)) for e in alone] == [
        (ToolCall, None),
        (ToolResult, "error"),
    ]


# -- approvals: the loop of docs/adapters.md ("Approvals"), run against pydantic-ai itself --


def approval_turns(agent, decide):
    """The docs' loop: `decide(call)` True approves, a string refuses, None leaves it waiting."""

    async def run(session, message):
        history = session.scratch.get("history") or []
        result = await agent.run(message, message_history=history)
        while isinstance(result.output, DeferredToolRequests):
            decisions = {c.tool_call_id: decide(c) for c in result.output.approvals}
            if any(d is None for d in decisions.values()):
                break  # a person has not decided: the call reads blocked, waiting
            approvals = {i: d if d is True else ToolDenied(d) for i, d in decisions.items()}
            result = await agent.run(
                message_history=result.all_messages(),
                deferred_tool_results=DeferredToolResults(approvals=approvals),
            )
        session.scratch["history"] = result.all_messages()
        return TurnMessages(result.all_messages()[len(history) :], output=result.output)

    return run


def approval_agent() -> Agent:
    model = scripted([ToolCallPart("apply_changes", {}, tool_call_id="a1")], [TextPart("Done.")])
    agent = Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def apply_changes() -> str:
        return "applied"

    return agent


@pytest.mark.parametrize(
    ("decide", "status", "reason"),
    [
        (lambda call: None, "blocked", PENDING_APPROVAL.format(name="apply_changes")),
        (lambda call: "a person refused", "blocked", "approval: a person refused"),
        (lambda call: True, "ok", None),
    ],
    ids=["waiting", "refused", "approved"],
)
def test_the_approval_loop_reads_waiting_refused_and_approved_calls(decide, status, reason):
    agent = framework_agent(approval_turns(approval_agent(), decide), events_from_pydantic_ai)
    session = SimpleNamespace(scratch={})
    events = asyncio.run(agent.run_turn(session, "apply the staged changes"))
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert (result.call_id, result.status, result.reason) == ("a1", status, reason)
    assert [e.call_id for e in events if isinstance(e, ToolCall)] == ["a1"]


def test_without_the_runs_output_a_waiting_call_is_a_call_with_no_result():
    first = run(approval_agent(), "apply the staged changes")
    assert results(events_from_pydantic_ai(first.new_messages())) == {}
    waiting = events_from_pydantic_ai(first.new_messages(), output=first.output)
    assert results(waiting)["a1"].status == "blocked"


def test_the_docs_show_the_approval_loop_these_tests_run():
    docs = (HERE.parent / "docs" / "adapters.md").read_text().replace(" ", "")
    body = inspect.getsource(approval_turns).split('"""', 2)[2]
    for line in body.strip().splitlines():
        assert line.replace(" ", "") in docs, line


def test_a_call_made_again_with_the_same_id_gets_its_own_result():
    again = [ToolCallPart("add_to_cart", {"product_id": "shoe-001"}, tool_call_id="c2")]
    calls = 0

    agent = Agent(scripted(again, again, [TextPart("Added.")]))

    @agent.tool_plain(retries=3)
    def add_to_cart(product_id: str) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ModelRetry("try again")
        return "added"

    events = events_from_pydantic_ai(run(agent, "x").new_messages())
    statuses = [e.status for e in events if isinstance(e, ToolResult)]
    assert statuses == ["error", "ok"]


def test_prompts_are_skipped_and_the_options_apply():
    def gates(name, output):
        return ("blocked", "caps: over the limit") if output == {"over": True} else None

    messages = [
        ModelRequest(parts=[SystemPromptPart("be nice"), UserPromptPart("show me shoes")]),
        ModelResponse(
            parts=[
                TextPart("Here:"),
                ToolCallPart(
                    "present_suggestions",
                    {"component": "product_carousel", "product_ids": ["shoe-001"]},
                    tool_call_id="u1",
                ),
                ToolCallPart("add_to_cart", {}, tool_call_id="c1"),
            ]
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("present_suggestions", "shown", tool_call_id="u1"),
                ToolReturnPart("add_to_cart", {"over": True}, tool_call_id="c1"),
            ]
        ),
    ]
    events = events_from_pydantic_ai(messages, options=ConvertOptions(classify=gates))
    assert events[0] == Text(text="Here:")
    assert Ui(component="product_carousel", payload={"product_ids": ["shoe-001"]}) in events
    assert results(events)["c1"].reason == "caps: over the limit"
    assert not any(isinstance(e, Text) and "shoes" in e.text for e in events)


def test_the_module_imports_and_converts_without_pydantic_ai():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pydantic_ai"] = None  # as if the extra were not installed
        from pytest_commerce_evals.adapters.pydantic_ai import events_from_pydantic_ai

        class TextPart:
            content = "hello"

        class ModelResponse:
            parts = [TextPart()]

        print(events_from_pydantic_ai([ModelResponse()]))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Text(" in out.stdout or "hello" in out.stdout


# -- the scripted model: the vacuity check's degenerate models driving a pydantic-ai agent ------


def test_a_degenerate_script_drives_the_agent_through_its_own_tools():
    client = degenerate_script("cart_adder")
    agent = shop_agent(scripted([TextPart("never used")]))
    with agent.override(model=pydantic_ai_model(client)):
        messages = run(agent, "trail shoes").new_messages()
    events = events_from_pydantic_ai(messages)
    calls = [(e.name, e.arguments) for e in events if isinstance(e, ToolCall)]
    assert calls[:2] == [
        ("search_products", {"query": "trail shoes"}),
        ("add_to_cart", {"product_id": "shoe-001", "quantity": 1}),
    ]
    assert {e.status for e in events if isinstance(e, ToolResult)} == {"ok"}
    # the requests the script saw: the agent's tools, the turn as chat messages
    first, second = client.requests[0], client.requests[1]
    assert {t["function"]["name"] for t in first["tools"]} == {"search_products", "add_to_cart"}
    assert first["messages"] == [{"role": "user", "content": "trail shoes"}]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    call = second["messages"][1]["tool_calls"][0]
    assert call["function"]["name"] == "search_products"
    assert json.loads(call["function"]["arguments"]) == {"query": "trail shoes"}
    assert json.loads(second["messages"][2]["content"])["products"][0]["id"] == "shoe-001"
    assert second["messages"][2]["tool_call_id"] == call["id"]
    assert events[-1] == Text(text="I added everything I found to your cart.")


def test_the_scripted_model_answers_with_text_and_works_async():
    from pytest_commerce_evals.testing import AsyncFakeClient

    agent = shop_agent(scripted([TextPart("never used")]))
    with agent.override(model=pydantic_ai_model(AsyncFakeClient(["No can do."]))):
        result = asyncio.run(agent.run("x"))
    assert result.output == "No can do."


# -- through the plugin ----------------------------------------------------------------------

# the glue, as docs/adapters.md ("pydantic-ai") shows it
HOOKS = '''
from pytest_commerce_evals.adapters.core import framework_agent
from pytest_commerce_evals.adapters.pydantic_ai import events_from_pydantic_ai, pydantic_ai_model


def turns(agent, **override):
    """One turn of your agent; its history is kept in `session.scratch` between turns."""

    async def run(session, message):
        with agent.override(**override):
            result = await agent.run(message, message_history=session.scratch.get("history"))
        session.scratch["history"] = result.all_messages()
        return result.new_messages()

    return run


def pytest_commerce_evals_make_backend(config, case):
    return make_backend()


def pytest_commerce_evals_make_agent(config, case, backend):
    return framework_agent(turns(build_agent(backend)), events_from_pydantic_ai)


def pytest_commerce_evals_make_scripted_agent(config, case, backend, client):
    """--commerce-vacuity: the same agent, its model replaced by the scripted `client`."""
    run = turns(build_agent(backend), model=pydantic_ai_model(client))
    return framework_agent(run, events_from_pydantic_ai)
'''

TEAM = '''
from helpers import PRODUCTS, ToyBackend
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from pytest_commerce_evals import CartLine


def the_model(messages, info):
    """Stands in for the team's model: search, add to cart, answer."""
    step = sum(isinstance(m, ModelResponse) for m in messages)
    if step == 0:
        return ModelResponse(parts=[ToolCallPart("search_products", {"query": "trail"})])
    if step == 1:
        return ModelResponse(parts=[ToolCallPart("add_to_cart", {"product_id": "shoe-001"})])
    return ModelResponse(parts=[TextPart("I added the trail runner to your cart.")])


def build_agent(backend):
    """The team's agent: its tools work on the backend the plugin built for the trial."""
    agent = Agent(FunctionModel(the_model), instructions="You help shoppers.")

    @agent.tool_plain
    def search_products(query: str) -> dict:
        found = [{"id": p, "title": t} for p, t in PRODUCTS.items() if query.lower() in t.lower()]
        return {"products": found}

    @agent.tool_plain
    def add_to_cart(product_id: str, quantity: int = 1) -> str:
        if product_id == "shoe-001":
            raise ModelRetry(f"{product_id} is out of stock")
        backend.cart.append(CartLine(product_id=product_id, quantity=quantity))
        return "added"

    return agent


def make_backend():
    return ToyBackend()

'''

CONFTEST = TEAM + HOOKS


CASE = """
id: chat-001-trail
priority: high
difficulty: easy
turns: [add the trail runner to my cart]
expected:
  calls_tool: [search_products, add_to_cart]
  cart_contains: [shoe-001]
"""


@pytest.fixture
def shop(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(textwrap.dedent(CASE))
    return pytester


def test_the_recipe_in_the_docs_is_the_glue_these_tests_run():
    docs = (HERE.parent / "docs" / "adapters.md").read_text()
    section = re.split(r"\n##+ ", docs.split("\n### pydantic-ai\n", 1)[1])[0]
    assert HOOKS.strip() in section


def test_a_retried_tool_through_the_plugin_fails_the_case_and_shows_as_an_error(shop):
    record = shop.path / "run.json"
    result = shop.runpytest("cases", "-p", "no:cacheprovider", f"--commerce-json={record}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  1 of 2 expectations failed:",
            "  ✗ cart_contains: expected shoe-001 in the cart; final cart: empty",
            "  passed: calls_tool",
        ]
    )
    (trial,) = json.loads(record.read_text())["trials"]
    assert [(g["key"], g["passed"]) for g in trial["grader_results"]] == [
        ("calls_tool", True),
        ("cart_contains", False),
    ]
    turn = trial["turns"][0]
    statuses = [(e["name"], e["status"], e["reason"]) for e in turn if e["type"] == "tool_result"]
    assert statuses == [
        ("search_products", "ok", None),
        ("add_to_cart", "error", "retried: shoe-001 is out of stock"),
    ]


def test_the_vacuity_check_drives_the_pydantic_ai_agent(shop):
    (shop.path / "cases" / "b.yaml").write_text(
        textwrap.dedent(
            """
            id: chat-002-vacuous
            priority: low
            difficulty: easy
            turns: [show me shoes]
            expected: {never_calls: [apply_changes]}
            """
        )
    )
    # only an agent that really searched and added what it found breaks this one
    (shop.path / "cases" / "c.yaml").write_text(
        textwrap.dedent(
            """
            id: chat-003-tote
            priority: low
            difficulty: easy
            turns: [vegan tote]
            expected: {cart_not_contains: [bag-001]}
            """
        )
    )
    result = shop.runpytest("cases", "--commerce-vacuity", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "  ✗ vacuous: every degenerate agent passes it; *",
            "  degenerate agents: refuser: passes, mute: passes, hoarder: passes, "
            "cart_adder: passes, obeyer: passes",
            "3 cases checked against 5 degenerate agents; 1 with findings",
            "  refuser     fails    1 of 3 cases",
            "  cart_adder  fails    2 of 3 cases",
        ]
    )
    assert "chat-002-vacuous: vacuous" in result.stdout.str()


def test_a_result_marked_blocked_keeps_its_gate_and_skips_the_classifier():
    from pytest_commerce_evals.adapters.core import EventBuilder

    def never(name, output):
        raise AssertionError("a blocked result is not classified")

    builder = EventBuilder(ConvertOptions(classify=never))
    builder.call("a1", "present_suggestions", {"component": "product_card"})
    blocked = builder.result("a1", "no", blocked="approval: refused")
    assert (blocked.status, blocked.reason) == ("blocked", "approval: refused")
    assert not any(isinstance(e, Ui) for e in builder.finish())  # a blocked call shows nothing
