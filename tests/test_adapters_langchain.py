"""LangChain / LangGraph messages as events: the converter on hand-built messages, on a real
LangGraph run (a model node and a `ToolNode` whose second tool raises), through the plugin
(the graph wired with `framework_agent`, graded from a case file), and the scripted chat model
the vacuity check drives the same graph with."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("langchain_core", reason="langchain-core is in the [frameworks] extra")

from langchain_core.messages import (  # noqa: E402
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)

from pytest_commerce_evals.adapters.core import (  # noqa: E402
    PENDING_APPROVAL,
    ConversionError,
    ConvertOptions,
    framework_agent,
)
from pytest_commerce_evals.adapters.langchain import (  # noqa: E402
    events_from_langchain,
    langchain_chat_model,
)
from pytest_commerce_evals.events import Text, ToolCall, ToolResult, Ui  # noqa: E402
from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply  # noqa: E402

TURN = [
    SystemMessage("You are a shop assistant."),
    HumanMessage("trail shoes, and how do returns work?"),
    AIMessage(
        content="Let me look.",
        tool_calls=[
            {"id": "c1", "name": "search_products", "args": {"query": "trail"}},
            {"id": "c2", "name": "load_skill", "args": {"name": "returns"}},
        ],
    ),
    ToolMessage('{"products": [{"id": "shoe-001"}]}', tool_call_id="c1", name="search_products"),
    ToolMessage("Error: LookupError('no skill')", tool_call_id="c2", status="error"),
    AIMessage(
        content=[{"type": "text", "text": "Here is "}, {"type": "text", "text": "shoe-001."}]
    ),
]


def test_calls_results_and_text_in_order_and_an_error_status_is_a_failed_call():
    events = events_from_langchain(TURN)
    assert events == [
        Text(text="Let me look."),
        ToolCall(call_id="c1", name="search_products", arguments={"query": "trail"}),
        ToolCall(call_id="c2", name="load_skill", arguments={"name": "returns"}),
        ToolResult(call_id="c1", name="search_products", result={"products": [{"id": "shoe-001"}]}),
        ToolResult(
            call_id="c2",
            name="load_skill",  # the ToolMessage has no name: the call's is used
            status="error",
            reason="Error: LookupError('no skill')",
            result="Error: LookupError('no skill')",
        ),
        Text(text="Here is shoe-001."),
    ]


def test_the_dict_form_reads_the_same():
    assert events_from_langchain(messages_to_dict(TURN)) == events_from_langchain(TURN)


def test_an_invalid_tool_call_is_a_call_and_a_failed_result_and_non_text_blocks_are_no_reply():
    message = AIMessage(
        content=[{"type": "reasoning", "reasoning": "hmm"}, "Sure."],
        invalid_tool_calls=[
            {"id": "b1", "name": "add_to_cart", "args": "{bad", "error": "not JSON"},
            {"id": None, "name": "add_to_cart", "args": "{", "error": None},
        ],
    )
    events = events_from_langchain([message])
    assert events[0] == Text(text="Sure.")
    assert events[1] == ToolCall(call_id="b1", name="add_to_cart", arguments={"_raw": "{bad"})
    assert (events[2].status, events[2].reason) == ("error", "invalid tool call: not JSON")
    assert events[3].call_id == events[4].call_id == "#2"
    assert events[4].reason == "invalid tool call: its arguments could not be parsed"


def test_the_shared_options_apply_presentation_tools_and_the_classifier():
    def gates(name, output):
        return ("blocked", "approval: a person approves") if name == "apply_changes" else None

    messages = [
        AIMessage(
            content="",
            tool_calls=[
                {"id": "u", "name": "present_suggestions", "args": {"component": "product_card"}},
                {"id": "a", "name": "apply_changes", "args": {}},
            ],
        ),
        ToolMessage("shown", tool_call_id="u"),
        ToolMessage('{"applied": 0}', tool_call_id="a"),
    ]
    events = events_from_langchain(messages, options=ConvertOptions(classify=gates))
    assert Ui(component="product_card") in events
    blocked = [e for e in events if isinstance(e, ToolResult) and e.status == "blocked"]
    assert [e.call_id for e in blocked] == ["a"]


def test_streamed_chunks_read_as_their_messages():
    from langchain_core.messages import AIMessageChunk, ToolMessageChunk

    chunks = [
        AIMessageChunk(content="On it.", tool_calls=[{"id": "c1", "name": "t", "args": {}}]),
        ToolMessageChunk(content="boom", tool_call_id="c1", status="error"),
    ]
    events = events_from_langchain(chunks)
    assert [e.type for e in events] == ["text", "tool_call", "tool_result"]
    assert (events[2].status, events[2].reason, events[2].name) == ("error", "boom", "t")


def test_something_that_is_not_a_message_is_named():
    # the converter's own refusal, as a glue error (ConversionError) that names the item
    with pytest.raises(ConversionError, match=r"item 2 is str 'hi'.*expected a LangChain message"):
        events_from_langchain([HumanMessage("x"), "hi"])
    with pytest.raises(ConversionError, match=r"item 1 is a message of type 'weird'"):
        events_from_langchain([{"type": "weird", "data": {"content": ""}}])


# -- a real LangGraph run ---------------------------------------------------------------------

# The conftest of the plugin-level test below, and the recipe in docs/adapters.md.
CONFTEST = '''
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from pytest_commerce_evals import Snapshot
from pytest_commerce_evals.adapters.core import framework_agent
from pytest_commerce_evals.adapters.langchain import events_from_langchain, langchain_chat_model

CATALOG = {"shoe-001": "Trail runner", "bag-001": "Vegan tote"}


class ShopBackend:
    def load_state(self, state):
        self.cart = [line.product_id for line in state.cart]
        self.memory = list(state.memory)

    def snapshot(self):
        return Snapshot.from_data(cart=self.cart, memory=self.memory)


def build_graph(model, backend):
    """The team's graph: a model node and a ToolNode over the backend's tools."""

    @tool
    def search_products(query: str) -> dict:
        """Search the catalog."""
        hits = [{"id": p, "title": t} for p, t in CATALOG.items() if query in t.lower()]
        return {"products": hits}

    @tool
    def add_to_cart(product_id: str) -> str:
        """Add a product to the cart."""
        if product_id not in CATALOG:
            raise ValueError(f"unknown product {product_id}")
        backend.cart.append(product_id)
        return "added"

    @tool
    def load_skill(name: str) -> str:
        """Load a skill's instructions."""
        raise LookupError(f"no skill named {name!r}")

    tools = [search_products, add_to_cart, load_skill]
    bound = model.bind_tools(tools)
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [bound.invoke(state["messages"])]})
    # a tool that raises becomes ToolMessage(status="error"), graded as a failed call
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def langgraph_agent(graph):
    def run(session, message):
        history = session.scratch.setdefault("messages", [])
        state = graph.invoke({"messages": [*history, HumanMessage(message)]})
        new = state["messages"][len(history):]          # this turn's messages
        history[:] = state["messages"]
        return new

    return framework_agent(run, events_from_langchain)


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_backend(config, case):
    return ShopBackend()


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_agent(config, case, backend):
    return langgraph_agent(build_graph(make_model(), backend))


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_scripted_agent(config, case, backend, client):
    return langgraph_agent(build_graph(langchain_chat_model(client), backend))
'''

# What stands in for the team's chat model (`ChatOpenAI(...)` in production) in these tests.
SCRIPTED_MODEL = """

class ScriptedModel(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):  # the fake answers from its script
        return self


def make_model():
    return ScriptedModel(messages=iter([
        AIMessage("Hello! What are you looking for?"),
        AIMessage("", tool_calls=[
            {"id": "c1", "name": "search_products", "args": {"query": "trail"}},
            {"id": "c2", "name": "load_skill", "args": {"name": "returns"}},
        ]),
        AIMessage("The Trail runner (shoe-001) is in stock."),
    ]))
"""


@pytest.fixture
def graph_module():
    pytest.importorskip("langgraph", reason="langgraph is in the [frameworks] extra")
    namespace: dict = {}
    exec(compile(CONFTEST + SCRIPTED_MODEL, "conftest.py", "exec"), namespace)
    return namespace


def test_a_langgraph_turn_with_a_raising_tool_converts_to_one_failed_call(graph_module):
    from pytest_commerce_evals.agent import AgentSession

    backend = graph_module["ShopBackend"]()
    graph = graph_module["build_graph"](graph_module["make_model"](), backend)
    agent = graph_module["langgraph_agent"](graph)
    session = AgentSession(case=None, backend=backend)
    assert agent.run_turn(session, "hi") == [Text(text="Hello! What are you looking for?")]
    events = agent.run_turn(session, "trail shoes, and returns?")
    assert [e.type for e in events] == ["tool_call"] * 2 + ["tool_result"] * 2 + ["text"]
    search, skill = (e for e in events if isinstance(e, ToolResult))
    assert (search.status, search.result) == (
        "ok",
        {"products": [{"id": "shoe-001", "title": "Trail runner"}]},
    )
    assert (skill.name, skill.status) == ("load_skill", "error")
    assert "LookupError" in skill.reason and "no skill named 'returns'" in skill.reason
    assert len(session.scratch["messages"]) == 7  # both turns: 2 + 5 messages


CASE = """
id: skills-001-returns
priority: high
difficulty: easy
turns: ["hi", "trail shoes, and how do returns work?"]
expected:
  calls_tool: [search_products, load_skill]
  skill_loaded: returns
  reply_includes: [shoe-001]
"""


def _project(pytester: pytest.Pytester, conftest: str, case: str) -> None:
    pytest.importorskip("langgraph", reason="langgraph is in the [frameworks] extra")
    pytester.makeconftest(conftest)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(textwrap.dedent(case))


def test_the_plugin_grades_a_langgraph_agent_and_a_failed_tool_is_no_skill_load(pytester):
    _project(pytester, CONFTEST + SCRIPTED_MODEL, CASE)
    result = pytester.runpytest("cases", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*skills-001-returns trial 1/1: fail (high priority, easy) at cases/a.yaml:2",
            "*1 of 3 expectations failed:",
            "*✗ skill_loaded: expected skill 'returns' to be loaded; "
            "skills loaded: returns [[]error]",  # fnmatch: [[] is a literal [
            "*passed: calls_tool, reply_includes",
            # the failed load is marked in "calls made"
            '*turn 2 of 2: search_products(query="trail"), load_skill(name="returns") → error',
        ]
    )


def test_the_vacuity_check_drives_the_same_graph_from_the_scripted_client(pytester):
    # only the cart adder (search, read the results back, add what they name) empties no cart:
    # it fails the second case only if the scripted model runs the graph's real tool loop
    cases = """
    - id: chat-001-asserts-nothing
      priority: low
      difficulty: easy
      turns: ["trail shoes"]
      expected: {reply_omits: ["zzz"]}
    - id: cart-001-no-cart
      priority: high
      difficulty: easy
      turns: ["trail shoes"]
      expected: {cart_not_contains: [shoe-001]}
    """
    _project(pytester, CONFTEST + SCRIPTED_MODEL, cases)
    result = pytester.runpytest("cases", "--commerce-vacuity", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "*chat-001-asserts-nothing at cases/a.yaml:*",
            "*✗ vacuous: every degenerate agent passes it*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*2 cases checked against 5 degenerate agents; 1 with findings",
            "*refuser     fails    0 of 2 cases",
            "*cart_adder  fails    1 of 2 cases",
        ]
    )
    assert "cart-001-no-cart at" not in result.stdout.str()
    assert "  ! " not in result.stdout.str()  # no degenerate run ended in an error


# -- the scripted chat model ------------------------------------------------------------------


def test_the_scripted_model_sends_the_conversation_and_bound_tools_in_the_openai_format():
    from langchain_core.tools import tool

    @tool
    def search_products(query: str) -> dict:
        """Search the catalog."""
        return {}

    client = FakeClient([tool_reply("search_products", query="trail"), text_reply("Done.")])
    model = langchain_chat_model(client).bind_tools([search_products])
    first = model.invoke([SystemMessage("Be brief."), HumanMessage("trail shoes")])
    assert first.tool_calls == [
        {
            "id": "call_1_0",
            "name": "search_products",
            "args": {"query": "trail"},
            "type": "tool_call",
        }
    ]
    tool_message = ToolMessage("{}", tool_call_id="call_1_0")
    assert model.invoke([HumanMessage("trail shoes"), first, tool_message]).content == "Done."
    sent = client.requests[1]
    assert sent["tools"][0]["function"]["name"] == "search_products"
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "tool"]
    assert sent["messages"][1]["tool_calls"][0]["id"] == "call_1_0"
    assert client.requests[0]["messages"][0] == {"role": "system", "content": "Be brief."}


def test_the_scripted_model_keeps_unparseable_arguments_as_an_invalid_call():
    from pytest_commerce_evals.models.replies import Record

    class Client:
        class chat:  # noqa: N801
            class completions:  # noqa: N801
                @staticmethod
                def create(**request):
                    call = {"id": "b1", "function": {"name": "add_to_cart", "arguments": "{"}}
                    message = {"content": None, "tool_calls": [call]}
                    return Record({"choices": [{"message": message}]})

    reply = langchain_chat_model(Client).invoke([HumanMessage("add it")])
    assert reply.tool_calls == []
    assert [(c["id"], c["args"]) for c in reply.invalid_tool_calls] == [("b1", "{")]
    events = events_from_langchain([reply])
    assert [(e.type, getattr(e, "status", None)) for e in events] == [
        ("tool_call", None),
        ("tool_result", "error"),
    ]


def test_the_module_needs_no_framework_to_import():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['langchain_core'] = None; sys.modules['langgraph'] = None\n"
        "from pytest_commerce_evals.adapters.langchain import events_from_langchain\n"
        "print(events_from_langchain([{'type': 'ai', 'data': {'content': 'hi'}}]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "text='hi'" in out.stdout


def test_the_recipe_in_the_docs_is_the_conftest_these_tests_run():
    from pathlib import Path

    docs = (Path(__file__).parent.parent / "docs" / "adapters.md").read_text()
    section = docs.split("### LangChain / LangGraph", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert block.strip("\n") == CONFTEST.strip("\n")
    assert CASE.strip() in section


# -- approvals: the loop of docs/adapters.md ("Approvals"), run against LangGraph itself -------


def approval_turns(graph, decide):
    """The docs' loop: `decide(call)` True approves, a string refuses, None leaves it waiting."""
    from langgraph.types import Command

    from pytest_commerce_evals.adapters.core import TurnMessages

    def run(session, message):
        config = {"configurable": {"thread_id": session.scratch.setdefault("thread", "t1")}}
        start = len(graph.get_state(config).values.get("messages", []))
        out = graph.invoke({"messages": [("user", message)]}, config)
        refused = []
        while out.get("__interrupt__"):
            calls = out["__interrupt__"][0].value["tool_calls"]  # what your review node sent
            decisions = {call["id"]: decide(call) for call in calls}
            if any(d is None for d in decisions.values()):
                break  # a person has not decided: the calls read blocked, waiting
            refused += [i for i, d in decisions.items() if d is not True]
            out = graph.invoke(Command(resume=decisions), config)
        new = out["messages"][start:]
        return TurnMessages(new, interrupts=out.get("__interrupt__"), refused=refused)

    return run


def approval_graph():
    """A model that calls `apply_changes`, a review node that holds it for a person, the tool."""
    pytest.importorskip("langgraph", reason="langgraph is in the [langgraph] extra")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.types import Command, interrupt

    script = iter(
        [
            AIMessage(content="", tool_calls=[{"id": "a1", "name": "apply_changes", "args": {}}]),
            AIMessage(content="Done."),
        ]
    )
    model = GenericFakeChatModel(messages=script)

    @tool
    def apply_changes() -> str:
        """Apply the staged catalog changes."""
        return "applied"

    def review(state):
        calls = state["messages"][-1].tool_calls
        decisions = interrupt({"tool_calls": calls})
        refusals = [
            ToolMessage(content=d, tool_call_id=i, status="error")
            for i, d in decisions.items()
            if d is not True
        ]
        if refusals:
            return Command(goto="model", update={"messages": refusals})
        return Command(goto="tools")

    def route(state):
        return "review" if state["messages"][-1].tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("review", review)
    graph.add_node("tools", ToolNode([apply_changes]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["review", END])
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize(
    ("decide", "status", "reason"),
    [
        (lambda call: None, "blocked", PENDING_APPROVAL.format(name="apply_changes")),
        (lambda call: "a person refused", "blocked", "approval: a person refused"),
        (lambda call: "no", "blocked", "approval: no"),
        (lambda call: True, "ok", None),
    ],
    ids=["waiting", "refused", "refused-other-text", "approved"],
)
def test_the_approval_loop_reads_waiting_refused_and_approved_calls(decide, status, reason):
    agent = framework_agent(approval_turns(approval_graph(), decide), events_from_langchain)
    events = agent.run_turn(SimpleNamespace(scratch={}), "apply the staged changes")
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert (result.call_id, result.status, result.reason) == ("a1", status, reason)


def test_without_the_interrupt_a_waiting_call_is_a_call_with_no_result():
    message = AIMessage(content="", tool_calls=[{"id": "a1", "name": "apply_changes", "args": {}}])
    assert [e.type for e in events_from_langchain([message])] == ["tool_call"]
    waiting = events_from_langchain([message], interrupts=[object()])
    assert [(e.type, getattr(e, "status", None)) for e in waiting] == [
        ("tool_call", None),
        ("tool_result", "blocked"),
    ]


def test_the_docs_show_the_approval_loop_these_tests_run():
    docs = (Path(__file__).parent.parent / "docs" / "adapters.md").read_text()
    body = inspect.getsource(approval_turns).split('"""', 2)[2]
    for line in body.strip().splitlines():
        if "import" not in line:
            assert line.strip() in docs, line
