"""The framework integrations (adapters/integration.py and one module per framework): each keeps
the conversation, applies the case's `approvals` the same way, reads usage and model names, runs
on a scripted model, and replays gold actions through the agent's own tools."""

from __future__ import annotations

import asyncio
import json

import pytest

from pytest_commerce_evals.adapters.core import PENDING_APPROVAL
from pytest_commerce_evals.agent import AgentSession
from pytest_commerce_evals.cases.case import Case
from pytest_commerce_evals.errors import ConfigurationError
from pytest_commerce_evals.events import Text, ToolCall, ToolResult
from pytest_commerce_evals.testing import FakeClient, FakeReply
from pytest_commerce_evals.usage import Meter, metered

FRAMEWORKS = ["pydantic-ai", "openai-agents", "langgraph", "openai"]


def case(**extra):
    return Case.model_validate(
        {"id": "ops-001-x", "priority": "low", "difficulty": "easy", "turns": ["x"], **extra}
    )


class Orders:
    def __init__(self):
        self.cancelled = []


def build(framework, orders):
    """The same two-tool agent on each framework: `get_order` and `cancel_order` (which needs a
    person's approval and refuses an unknown order)."""

    def get_order(order_id: str) -> str:
        """Look an order up."""
        return f"order {order_id}: pending"

    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        if order_id != "W1":
            raise ValueError(f"no order {order_id}")
        orders.cancelled.append(order_id)
        return f"cancelled {order_id}"

    if framework == "pydantic-ai":
        pydantic_ai = pytest.importorskip("pydantic_ai")
        from pytest_commerce_evals.adapters import PydanticAIAgent

        agent = pydantic_ai.Agent("test")
        agent.tool_plain(get_order)

        @agent.tool_plain(requires_approval=True, name="cancel_order")
        def retrying_cancel(order_id: str) -> str:
            """Cancel an order."""
            try:
                return cancel_order(order_id)
            except ValueError as exc:  # pydantic-ai's way of telling the model a call failed
                raise pydantic_ai.ModelRetry(str(exc)) from exc

        return PydanticAIAgent(agent)
    if framework == "openai-agents":
        agents = pytest.importorskip("agents")
        if not hasattr(agents.items, "ToolApprovalItem"):
            pytest.skip("this openai-agents release has no tool approvals")
        from pytest_commerce_evals.adapters import AgentsSDKAgent

        tools = [
            agents.function_tool(get_order),
            agents.function_tool(
                cancel_order, needs_approval=True, failure_error_function=_failure()
            ),
        ]
        return AgentsSDKAgent(agents.Agent(name="ops", tools=tools))
    if framework == "langgraph":
        pytest.importorskip("langgraph")
        from langchain_core.tools import tool
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        from pytest_commerce_evals.adapters import LangGraphAgent, requires_approval

        def graph(model):
            tools = [tool(get_order), requires_approval(tool(cancel_order))]
            bound = model.bind_tools(tools)
            g = StateGraph(MessagesState)
            g.add_node("model", lambda state: {"messages": [bound.invoke(state["messages"])]})
            g.add_node("tools", ToolNode(tools, handle_tool_errors=True))
            g.add_edge(START, "model")
            g.add_conditional_edges("model", tools_condition)
            g.add_edge("tools", "model")
            return g.compile()

        return LangGraphAgent(graph, model=None)
    from pytest_commerce_evals.adapters import OpenAIChatAgent

    return OpenAIChatAgent(
        None, "ops-model", [get_order, cancel_order], needs_approval=["cancel_order"]
    )


def _failure():
    from pytest_commerce_evals.adapters.openai_agents import failure_error_function

    return failure_error_function()


def run(agent, session, message):
    out = agent.run_turn(session, message)
    if asyncio.iscoroutine(out):
        out = asyncio.run(out)
    return out


def script(*replies, usage=None):
    return FakeClient([*replies, "All done.", "All done."], model="ops-model", usage=usage)


def cancel(order_id="W1"):
    return FakeReply(tool_calls=[("cancel_order", {"order_id": order_id})])


@pytest.fixture(params=FRAMEWORKS)
def framework(request):
    return request.param


@pytest.mark.parametrize(
    ("approvals", "status", "reason", "ran"),
    [
        ({"cancel_order": "approve"}, "ok", None, ["W1"]),
        (
            {"cancel_order": {"refuse": "not this week"}},
            "blocked",
            "approval: not this week",
            [],
        ),
        ({"cancel_order": "refuse"}, "blocked", "approval: A person refused this action.", []),
        ({"cancel_order": "wait"}, "blocked", PENDING_APPROVAL.format(name="cancel_order"), []),
        ({"default": "approve"}, "ok", None, ["W1"]),
        (None, "blocked", PENDING_APPROVAL.format(name="cancel_order"), []),
    ],
    ids=["approve", "refuse-words", "refuse", "wait", "default-approve", "no-approvals"],
)
def test_every_integration_applies_the_cases_approvals_the_same_way(
    framework, approvals, status, reason, ran
):
    orders = Orders()
    agent = build(framework, orders).scripted(script(cancel()))
    session = AgentSession(case=case(approvals=approvals), backend=orders)
    events = run(agent, session, "cancel W1")
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert (result.name, result.status, result.reason) == ("cancel_order", status, reason)
    assert orders.cancelled == ran  # a refused or waiting call never ran the tool
    assert [e.name for e in events if isinstance(e, ToolCall)] == ["cancel_order"]


def test_a_tool_without_approval_runs_whatever_the_approvals_say(framework):
    orders = Orders()
    agent = build(framework, orders).scripted(
        script(FakeReply(tool_calls=[("get_order", {"order_id": "W1"})]))
    )
    session = AgentSession(case=case(approvals={"default": "wait"}), backend=orders)
    [result] = [e for e in run(agent, session, "where is W1") if isinstance(e, ToolResult)]
    assert result.status == "ok" and "pending" in str(result.result)


def test_the_conversation_is_kept_between_turns_and_not_between_trials(framework):
    orders = Orders()
    client = script("First answer.", "Second answer.")
    integration = build(framework, orders)
    agent = integration.scripted(client)
    session = AgentSession(case=case(), backend=orders)
    assert [e.text for e in run(agent, session, "hello one") if isinstance(e, Text)] == [
        "First answer."
    ]
    run(agent, session, "hello two")
    said = json.dumps(client.requests[-1]["messages"])
    assert "hello one" in said and "First answer." in said and "hello two" in said
    # a new trial's session starts a new conversation
    other = FakeClient(["Third."])
    run(integration.scripted(other), AgentSession(case=case(), backend=orders), "hello three")
    assert other.requests and "hello one" not in json.dumps(other.requests)


def test_a_failing_tool_reads_as_a_failed_call(framework):
    orders = Orders()
    agent = build(framework, orders).scripted(script(cancel("W9")))
    session = AgentSession(case=case(approvals={"cancel_order": "approve"}), backend=orders)
    [result] = [e for e in run(agent, session, "cancel W9") if isinstance(e, ToolResult)]
    assert result.status == "error" and "W9" in (result.reason or "")


def raising_agent(framework):
    """One tool, `get_order`, that raises KeyError and handles nothing itself: no `ModelRetry`,
    no failure function, a `ToolNode` with LangGraph's default error handling."""

    def get_order(order_id: str) -> str:
        """Look an order up."""
        raise KeyError(order_id)

    if framework == "pydantic-ai":
        pydantic_ai = pytest.importorskip("pydantic_ai")
        from pytest_commerce_evals.adapters import PydanticAIAgent

        agent = pydantic_ai.Agent("test")
        agent.tool_plain(get_order)
        return PydanticAIAgent(agent)
    if framework == "openai-agents":
        agents = pytest.importorskip("agents")
        from pytest_commerce_evals.adapters import AgentsSDKAgent

        return AgentsSDKAgent(agents.Agent(name="ops", tools=[agents.function_tool(get_order)]))
    if framework == "langgraph":
        pytest.importorskip("langgraph")
        from langchain_core.tools import tool
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        from pytest_commerce_evals.adapters import LangGraphAgent

        def graph(model):
            bound = model.bind_tools([tool(get_order)])
            g = StateGraph(MessagesState)
            g.add_node("model", lambda state: {"messages": [bound.invoke(state["messages"])]})
            g.add_node("tools", ToolNode([tool(get_order)]))
            g.add_edge(START, "model")
            g.add_conditional_edges("model", tools_condition)
            g.add_edge("tools", "model")
            return g.compile()

        return LangGraphAgent(graph, model=None)
    from pytest_commerce_evals.adapters import OpenAIChatAgent

    return OpenAIChatAgent(None, "ops-model", [get_order])


def test_a_tool_that_raises_is_a_failed_call_and_the_turn_goes_on(framework):
    """docs/plugging-in.md: a tool that failed is a failed call, whatever the framework does
    with an exception by default (pydantic-ai and LangGraph's ToolNode raise it out of the run)."""
    client = script(FakeReply(tool_calls=[("get_order", {"order_id": "W9"})]))
    agent = raising_agent(framework).scripted(client)
    events = run(agent, AgentSession(case=case(), backend=Orders()), "where is W9")
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.status == "error", result
    if framework != "openai-agents":  # the SDK's default failure text keeps the error out
        assert "KeyError" in (result.reason or "") and "W9" in (result.reason or "")
    assert [e.text for e in events if isinstance(e, Text)] == ["All done."]
    assert "W9" in json.dumps(client.requests[-1]["messages"]) or framework == "openai-agents"


def test_the_agents_usage_and_model_are_recorded_on_the_trial(framework):
    orders = Orders()
    agent = build(framework, orders).scripted(
        script(usage={"input_tokens": 100, "output_tokens": 7})
    )
    meter = Meter()
    with metered(meter, "agent"):
        run(agent, AgentSession(case=case(), backend=orders), "hi")
    calls = meter.calls()
    assert calls, "the scripted model's usage reaches the trial"
    assert {(c.input_tokens, c.output_tokens) for c in calls} == {(100, 7)}
    assert all(c.purpose == "agent" for c in calls)


def test_scripted_leaves_the_teams_own_integration_as_it_was(framework):
    integration = build(framework, Orders())
    before = integration.model
    client_before = getattr(integration, "client", None)
    twin = integration.scripted(FakeClient(["x"]))
    assert twin is not integration and integration.model is before
    if framework == "openai":  # the plain loop's model is its client
        assert integration.client is client_before and twin.client is not client_before
    else:
        assert twin.model is not before


def test_a_langgraph_built_graph_cannot_be_scripted_and_says_what_to_pass():
    pytest.importorskip("langgraph")
    from langgraph.graph import START, MessagesState, StateGraph

    from pytest_commerce_evals.adapters import LangGraphAgent

    g = StateGraph(MessagesState)
    g.add_node("model", lambda state: {"messages": []})
    g.add_edge(START, "model")
    with pytest.raises(ConfigurationError, match=r"pass the function that builds it"):
        LangGraphAgent(g.compile()).scripted(FakeClient(["x"]))
    with pytest.raises(TypeError, match="compiled graph or a function"):
        LangGraphAgent(42)


def test_a_langgraph_review_node_is_decided_by_the_cases_approvals():
    pytest.importorskip("langgraph")
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.types import Command, interrupt

    from pytest_commerce_evals.adapters import LangGraphAgent

    ran = []

    @tool
    def apply_changes() -> str:
        """Apply the staged catalog changes."""
        ran.append(1)
        return "applied"

    def graph(model):
        bound = model.bind_tools([apply_changes])

        def review(state):
            calls = state["messages"][-1].tool_calls
            decisions = interrupt({"tool_calls": calls})
            refusals = [
                ToolMessage(content=d, tool_call_id=i, status="error")
                for i, d in decisions.items()
                if d is not True
            ]
            return (
                Command(goto="model", update={"messages": refusals})
                if refusals
                else (Command(goto="tools"))
            )

        g = StateGraph(MessagesState)
        g.add_node("model", lambda state: {"messages": [bound.invoke(state["messages"])]})
        g.add_node("review", review)
        g.add_node("tools", ToolNode([apply_changes]))
        g.add_edge(START, "model")
        g.add_conditional_edges(
            "model", lambda s: "review" if s["messages"][-1].tool_calls else END, ["review", END]
        )
        g.add_edge("tools", "model")
        return g.compile()

    apply = FakeReply(tool_calls=[("apply_changes", {})])
    for approvals, status, count in [
        ({"apply_changes": "approve"}, "ok", 1),
        ({"apply_changes": {"refuse": "no"}}, "blocked", 1),
        ({"apply_changes": "wait"}, "blocked", 1),
    ]:
        agent = LangGraphAgent(graph).scripted(script(apply))
        session = AgentSession(case=case(approvals=approvals), backend=None)
        [result] = [e for e in run(agent, session, "apply") if isinstance(e, ToolResult)]
        assert result.status == status, approvals
        assert len(ran) == count


def test_the_plain_loop_validates_arguments_before_a_tool_runs():
    from pytest_commerce_evals.adapters import OpenAIChatAgent

    seen = []

    def add_to_cart(product_id: str, quantity: int = 1) -> str:
        """Add to the cart."""
        seen.append((product_id, quantity))
        return "added"

    bad = FakeReply(tool_calls=[("add_to_cart", {"product_id": "p1", "quantity": "many"})])
    agent = OpenAIChatAgent(FakeClient([bad, "ok"]), "m", [add_to_cart])
    [result] = [
        e
        for e in run(agent, AgentSession(case=case(), backend=None), "x")
        if isinstance(e, ToolResult)
    ]
    assert result.status == "error" and "quantity" in result.reason and seen == []
    schema = agent.tools["add_to_cart"].schema()["function"]
    assert schema["parameters"]["required"] == ["product_id"]
    assert schema["description"] == "Add to the cart."
    with pytest.raises(ValueError, match="needs_approval names nope"):
        OpenAIChatAgent(None, "m", [add_to_cart], needs_approval=["nope"])


def test_the_plain_loop_stops_after_max_steps():
    from pytest_commerce_evals.adapters import OpenAIChatAgent

    def ping() -> str:
        """Ping."""
        return "pong"

    client = FakeClient(lambda request: FakeReply(tool_calls=[("ping", {})]))
    agent = OpenAIChatAgent(client, "m", [ping], max_steps=3)
    run(agent, AgentSession(case=case(), backend=None), "x")
    assert len(client.requests) == 3


def test_a_waiting_call_is_answered_as_not_run_on_the_next_turn():
    from pytest_commerce_evals.adapters import OpenAIChatAgent
    from pytest_commerce_evals.adapters.integration import NOT_RUN

    def cancel_order(order_id: str) -> str:
        """Cancel."""
        return "cancelled"

    client = FakeClient([cancel(), "Next.", "Next."])
    agent = OpenAIChatAgent(client, "m", [cancel_order], needs_approval=["cancel_order"])
    session = AgentSession(case=case(), backend=None)
    run(agent, session, "cancel")
    run(agent, session, "and now?")
    tool_answers = [m for m in client.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_answers] == [NOT_RUN]


def test_a_turn_after_a_call_left_waiting_goes_on(framework):
    orders = Orders()
    client = script(cancel(), "Anything else?", "Still here.")
    agent = build(framework, orders).scripted(client)
    session = AgentSession(case=case(), backend=orders)  # nobody decides: the call waits
    first = run(agent, session, "cancel W1")
    assert [e.status for e in first if isinstance(e, ToolResult)] == ["blocked"]
    second = run(agent, session, "never mind")
    assert not [e for e in second if isinstance(e, ToolResult | ToolCall)]
    assert [e.text for e in second if isinstance(e, Text)] and orders.cancelled == []


def test_gold_actions_replay_through_the_agents_own_tools_every_approval_given(framework):
    from pytest_commerce_evals.cases.case import GoldAction
    from pytest_commerce_evals.runner.gold import replay_through_agent

    orders = Orders()
    agent = build(framework, orders)
    actions = [
        GoldAction(tool="cancel_order", arguments={"order_id": "W1"}),  # needs an approval
        GoldAction(tool="cancel_order", arguments={"order_id": "W9"}),  # the tool refuses it
        GoldAction(tool="refund_order", arguments={"order_id": "W1"}),  # no such tool
    ]
    gold = replay_through_agent(
        agent,
        case(approvals={"default": "wait"}),  # the case's own approvals do not hold up a replay
        orders,
        actions,
        lambda a, s, m: run(a, s, m),
        lambda: list(orders.cancelled),
    )
    assert gold.snapshot == ["W1"]
    assert [f.split(":")[0] for f in gold.failed] == [
        "action 2 (cancel_order)",
        "action 3 (refund_order)",
    ], gold.failed
    assert "W9" in gold.failed[0] or framework == "openai-agents"  # the SDK hides the text
