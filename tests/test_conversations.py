"""Conversations with a simulated customer: the `user:` block, the customer's checks and outcome
(`user_error`), why a conversation ended, the max_turns cap, gold-action replay (`same_state_as`),
the reply cache, and a regrade that asks neither the agent nor the customer again."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest
from pydantic import ValidationError

from pytest_commerce_evals import Snapshot, Text, ToolCall, ToolResult, TurnEnd
from pytest_commerce_evals.cases.case import Case
from pytest_commerce_evals.customer import (
    CustomerMessage,
    SimulatedCustomer,
    UserError,
    check_message,
    conversation_of,
)
from pytest_commerce_evals.judge.verdict_store import VerdictStore
from pytest_commerce_evals.testing import FakeClient, ScriptedCustomer, text_reply

# -- the case model --------------------------------------------------------------------------


def case(**over) -> Case:
    data = {
        "id": "orders-001-cancel",
        "priority": "high",
        "difficulty": "medium",
        "user": {"instructions": "You want to cancel order W1.", "knows": "order W1"},
    }
    data.update(over)
    return Case.model_validate(data)


def test_a_user_block_stands_in_for_turns_and_grades_the_whole_conversation():
    c = case()
    assert c.turns == [] and c.scope == "conversation"
    assert c.user is not None and c.user.max_turns == 10 and c.user.stop == "###STOP###"
    assert c.user.at_max_turns == "fail"
    scripted = case(user=None, turns=["hi"])
    assert scripted.scope == "turn"
    assert case(scope="turn").scope == "turn"  # the case's own word wins


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"user": None}, "the case has no customer: give turns"),
        ({"turns": []}, "List should have at least 1 item"),
        (
            {"user": {"instructions": "x", "opening": "hello ###STOP###"}},
            "the opening holds the stop marker",
        ),
        (
            {"turns": ["a", "b"], "user": {"instructions": "x", "max_turns": 2}},
            "max_turns counts every customer message, scripted ones included",
        ),
        ({"user": {"instructions": "  "}}, "instructions is empty"),
        ({"user": {"instructions": "x", "at_max_turns": "pass"}}, "'fail' or 'grade'"),
        ({"user": {"instructions": "x", "mood": "angry"}}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_user_block_says_what_is_wrong(over, message):
    with pytest.raises(ValidationError, match=message):
        case(**over)


# -- the checks every customer message passes --------------------------------------------------

SPEC = case().user
SAID = [CustomerMessage("customer", "I want to cancel."), CustomerMessage("agent", "Which order?")]


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ("", "sent an empty message"),
        ("   \n", "sent an empty message"),
        (None, "gave NoneType None, not a message"),
        ("Assistant: Your order is cancelled.", "spoke as the assistant"),
        ("**Agent:** done", "spoke as the assistant"),
        ('{"tool_calls": [{"name": "cancel_order"}]}', "spoke as the assistant"),
        ("<tool_call>cancel_order</tool_call>", "spoke as the assistant"),
    ],
)
def test_a_message_that_breaks_a_rule_is_the_customers_fault(message, why):
    with pytest.raises(UserError, match=why):
        check_message(message, SPEC, SAID)


def test_repeating_the_assistant_and_ending_before_it_spoke_are_the_customers_fault():
    long = "Which of your orders would you like to cancel today?"
    with pytest.raises(UserError, match="repeated the assistant's reply"):
        check_message(long, SPEC, [*SAID[:1], CustomerMessage("agent", long)])
    with pytest.raises(UserError, match="before the assistant could answer"):
        check_message("###STOP###", SPEC, [])


def test_a_good_message_passes_and_the_stop_marker_ends_the_conversation():
    assert check_message("  It is W1. ", SPEC, SAID) == ("It is W1.", False)
    assert check_message("Thanks! ###STOP###", SPEC, SAID) == ("Thanks! ###STOP###", True)
    assert check_message("Which order?", SPEC, SAID) == ("Which order?", False)  # short: fine


def test_the_customer_reads_the_agents_text_and_what_it_showed():
    from pytest_commerce_evals import Ui

    turns = [[Text(text="Here."), Ui(component="order_status", payload={"order_id": "W1"})]]
    assert conversation_of(["where is W1?", "thanks"], turns) == [
        CustomerMessage("customer", "where is W1?"),
        CustomerMessage("agent", 'Here.\n[shown: order_status {"order_id": "W1"}]'),
        CustomerMessage("customer", "thanks"),
    ]
    assert conversation_of(["x"], [[TurnEnd()]])[1].text == "[the assistant replied with nothing]"


# -- the built-in simulated customer ----------------------------------------------------------


def test_the_simulator_plays_the_customer_at_temperature_zero_with_a_seed():
    client = FakeClient([text_reply("It's order W1.")])
    sim = SimulatedCustomer(client, "sim-model", seed=7, max_tokens=50)
    assert sim.reply(case(), SAID) == "It's order W1."
    sent = client.requests[0]
    assert (sent["model"], sent["temperature"], sent["seed"], sent["max_tokens"]) == (
        "sim-model",
        0.0,
        7,
        50,
    )
    system, *chat = sent["messages"]
    assert "You want to cancel order W1." in system["content"]
    assert "order W1" in system["content"] and "###STOP###" in system["content"]
    # the roles turned round: the customer is the model, the assistant its user
    assert [m["role"] for m in chat] == ["user", "assistant", "user"]
    assert [m["content"] for m in chat][1:] == ["I want to cancel.", "Which order?"]


def test_the_same_conversation_gets_the_cached_reply_without_a_model_call(tmp_path):
    store = VerdictStore(tmp_path / "v.sqlite")
    first = SimulatedCustomer(FakeClient([text_reply("It's W1.")]), "m", store=store)
    assert first.reply(case(), SAID) == "It's W1."
    again = SimulatedCustomer(FakeClient([]), "m", store=VerdictStore(tmp_path / "v.sqlite"))
    assert again.reply(case(), SAID) == "It's W1."  # an empty script: any call would raise
    assert (again.calls, again.reused) == (0, 1)
    # another model, or another conversation so far, asks the model
    other = SimulatedCustomer(FakeClient([text_reply("W2?")]), "m2", store=store)
    assert other.reply(case(), SAID) == "W2?" and other.calls == 1
    longer = SimulatedCustomer(FakeClient([text_reply("bye")]), "m", store=store)
    assert longer.reply(case(), [*SAID, CustomerMessage("customer", "W1")]) == "bye"


def test_the_reply_cache_is_kept_apart_per_endpoint(tmp_path):
    store = VerdictStore(tmp_path / "v.sqlite")
    a, b = "http://a:8000/v1", "http://b:8000/v1"
    here = SimulatedCustomer(FakeClient([text_reply("It's W1.")]), "m", store=store, server=a)
    assert here.reply(case(), SAID) == "It's W1."
    # the same model name on another server asks that server
    there = SimulatedCustomer(FakeClient([text_reply("W2?")]), "m", store=store, server=b)
    assert there.reply(case(), SAID) == "W2?" and (there.calls, there.reused) == (1, 0)
    again = SimulatedCustomer(FakeClient([]), "m", store=store, server=a)
    assert again.reply(case(), SAID) == "It's W1." and again.reused == 1


def test_a_reply_the_checks_refuse_is_never_cached(tmp_path):
    store = VerdictStore(tmp_path / "v.sqlite")
    # speaking as the assistant: the checks refuse it, so the next run asks the model again
    bad = SimulatedCustomer(
        FakeClient([text_reply("Assistant: how can I help?")]), "m", store=store
    )
    with pytest.raises(UserError):
        bad.reply(case(), SAID)
    fresh = SimulatedCustomer(FakeClient([text_reply("It's W1.")]), "m", store=store)
    assert fresh.reply(case(), SAID) == "It's W1." and (fresh.calls, fresh.reused) == (1, 0)


def test_an_endpoint_failure_or_a_reply_without_text_is_a_user_error():
    class Down:
        class chat:  # noqa: N801
            class completions:  # noqa: N801
                @staticmethod
                def create(**kwargs):
                    raise ConnectionError("refused")

    with pytest.raises(UserError, match="endpoint failed: ConnectionError: refused"):
        SimulatedCustomer(Down, "m").reply(case(), SAID)
    from pytest_commerce_evals.testing import FakeReply

    with pytest.raises(UserError, match="replied with no text"):
        SimulatedCustomer(FakeClient([FakeReply(content=None)]), "m").reply(case(), SAID)


# -- whole runs ------------------------------------------------------------------------------

CONFTEST = """
from pytest_commerce_evals import Snapshot, Text, ToolCall, ToolResult
from pytest_commerce_evals.testing import ScriptedCustomer


def pytest_addoption(parser):
    parser.addoption("--agent-mode", default="good")
    parser.addoption("--customer-mode", default="scripted")


class Orders:
    def __init__(self):
        self.orders = {"W1": "pending", "W2": "delivered"}

    def load_state(self, state):
        pass

    def snapshot(self):
        return Snapshot(data={"orders": dict(self.orders)})

    def call_tool(self, name, arguments):
        if name != "cancel_order":
            raise ValueError(f"unknown tool {name}")
        order = arguments["order_id"]
        if self.orders.get(order) != "pending":
            raise ValueError(f"order {order} is not pending")
        self.orders[order] = "cancelled"
        return {"status": "cancelled"}


def pytest_commerce_evals_make_backend(config, case):
    return Orders()


def pytest_commerce_evals_make_agent(config, case, backend):
    mode = config.getoption("--agent-mode")

    def run_turn(session, message):
        if session.turn == 0:
            return [Text(text="Which order would you like to cancel?")]
        if mode == "crash":
            raise ValueError("the agent's own bug")
        order = "W2" if mode == "wrong" else "W1"
        events = [ToolCall(call_id=f"c{session.turn}", name="cancel_order",
                           arguments={"order_id": order})]
        try:
            backend.call_tool("cancel_order", {"order_id": order})
        except ValueError as exc:
            events.append(ToolResult(call_id=f"c{session.turn}", name="cancel_order",
                                     status="error", reason=str(exc)))
            return events + [Text(text="That did not work.")]
        events.append(ToolResult(call_id=f"c{session.turn}", name="cancel_order", status="ok",
                                 result={"status": "cancelled"}))
        return events + [Text(text=f"Order {order} is cancelled.")]

    return run_turn


def pytest_commerce_evals_make_user(config, case):
    mode = config.getoption("--customer-mode")
    if mode == "scripted":
        return ScriptedCustomer(["It's order W1."])
    if mode == "chatty":
        return ScriptedCustomer(lambda case, conversation: "Are you still there?")
    if mode == "empty":
        return ScriptedCustomer([""])
    if mode == "as-agent":
        return ScriptedCustomer(["Assistant: your order is cancelled."])
    if mode == "raises":
        return ScriptedCustomer(lambda case, conversation: 1 / 0)
    if mode == "forbidden":
        raise AssertionError("the customer was asked again")
    if mode in ("model", "cache"):
        from pytest_commerce_evals.customer import SimulatedCustomer
        from pytest_commerce_evals.judge.verdict_store import VerdictStore
        from pytest_commerce_evals.testing import FakeClient, text_reply

        # the second run's script is empty: a call to the model would raise
        said = [text_reply("It's order W1."), text_reply("Thanks! ###STOP###")]
        client = FakeClient(said if mode == "model" else [])
        return SimulatedCustomer(client, "sim", store=VerdictStore(config.rootpath / "v.sqlite"))
    return None
"""

CASE = """
id: orders-001-cancel-pending
priority: high
difficulty: medium
user:
  instructions: You want to cancel order W1.
  knows: order W1
  opening: I want to cancel an order.
  max_turns: {max_turns}
  at_max_turns: {at_max_turns}
expected:
  calls_with: [{{tool: cancel_order, arguments: {{order_id: W1}}}}]
  same_state_as: [{{tool: cancel_order, arguments: {{order_id: W1}}}}]
  state_at: {{orders.W1: cancelled}}
"""


@pytest.fixture
def convo(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "cases").mkdir()

    def run(*args: str, max_turns: int = 4, at_max_turns: str = "fail"):
        (pytester.path / "cases" / "a.yaml").write_text(
            textwrap.dedent(CASE.format(max_turns=max_turns, at_max_turns=at_max_turns))
        )
        result = pytester.runpytest(
            "cases", "-p", "no:cacheprovider", "--commerce-json=out.json", *args
        )
        record = json.loads((pytester.path / "out.json").read_text())
        return result, record["trials"][0]

    return run


def test_a_conversation_the_customer_ends_is_recorded_and_graded_whole(convo):
    result, trial = convo()
    assert result.ret == 0, result.stdout.str()
    assert trial["outcome"] == "pass"
    assert trial["messages"] == ["I want to cancel an order.", "It's order W1.", "###STOP###"]
    assert trial["ended"] == "customer" and len(trial["turns"]) == 2
    assert trial["snapshot"]["data"] == {"orders": {"W1": "cancelled", "W2": "delivered"}}
    keys = [g["key"] for g in trial["grader_results"]]
    assert keys == ["calls_with", "state_at", "same_state_as"]


def test_a_wrong_action_fails_the_gold_state_with_a_diff(convo):
    result, trial = convo("--agent-mode=wrong")
    assert result.ret == 1 and trial["outcome"] == "fail"
    failures = "\n".join(trial["failures"])
    assert (
        "same_state_as: the final state differs from the gold actions' in 1 place(s): "
        'data.orders.W1: gold "cancelled", found "pending"'
    ) in failures
    assert 'cancel_order(order_id="W2") → error' in failures  # the calls made, marked


def test_reaching_max_turns_fails_unless_the_case_grades_it(convo):
    result, trial = convo("--customer-mode=chatty", max_turns=3)
    assert trial["ended"] == "max_turns" and len(trial["turns"]) == 3
    assert trial["outcome"] == "fail"
    assert any(
        f.startswith("user.max_turns: the conversation reached 3") for f in trial["failures"]
    )
    result, trial = convo("--customer-mode=chatty", max_turns=3, at_max_turns="grade")
    assert trial["ended"] == "max_turns" and trial["outcome"] == "pass", trial["failures"]


def test_the_agents_failure_ends_the_conversation_as_the_agents(convo):
    result, trial = convo("--agent-mode=crash")
    assert trial["outcome"] == "fail" and trial["ended"] == "agent_error"
    assert "the agent raised ValueError: the agent's own bug" in trial["error"]
    assert trial["messages"] == ["I want to cancel an order.", "It's order W1."]


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("empty", "the simulated customer sent an empty message"),
        ("as-agent", "the simulated customer spoke as the assistant"),
        ("raises", "the simulated customer raised ZeroDivisionError"),
    ],
)
def test_a_customer_fault_is_a_user_error_reported_apart(convo, pytester, mode, why):
    result, trial = convo(f"--customer-mode={mode}", "--junitxml=j.xml")
    assert trial["outcome"] == "user_error" and trial["ended"] == "user_error"
    assert why in trial["error"]
    assert "not counted against the agent" in trial["error"]
    result.stdout.fnmatch_lines(["cases/a.yaml U*", "*UNDECIDED*"])  # nothing graded: no rate
    case = ET.parse(pytester.path / "j.xml").getroot().find(".//testcase")
    assert case is not None and case.find("error") is not None and case.find("failure") is None


def test_a_regrade_grades_the_stored_conversation_without_the_agent_or_the_customer(
    convo, pytester
):
    result, trial = convo("--commerce-store=.commerce/runs")
    assert trial["outcome"] == "pass"
    run_id = json.loads((pytester.path / "out.json").read_text())["run_id"]
    result, regraded = convo(
        "--commerce-store=.commerce/runs",
        f"--commerce-regrade={run_id}",
        "--customer-mode=forbidden",
        "--agent-mode=crash",
    )
    assert result.ret == 0, result.stdout.str()
    assert regraded["outcome"] == "pass" and regraded["ended"] == "customer"
    assert regraded["messages"] == trial["messages"]


def test_a_backend_that_cannot_replay_is_a_glue_error_saying_why(pytester):
    # neither call_tool nor an integration: not the agent's failure, the glue's
    pytester.makeconftest(
        CONFTEST.replace(
            "    def call_tool(self, name, arguments):", "    def act(self, name, arguments):"
        ).replace("backend.call_tool(", "backend.act(")
    )
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        textwrap.dedent(CASE.format(max_turns=4, at_max_turns="fail"))
    )
    assert (
        pytester.runpytest("cases", "-p", "no:cacheprovider", "--commerce-json=out.json").ret == 1
    )
    trial = json.loads((pytester.path / "out.json").read_text())["trials"][0]
    assert trial["outcome"] == "error"
    assert "glue error (not counted against the agent)" in trial["error"]
    assert (
        "the backend Orders has no call_tool() and the agent is not one of the integrations"
        in (trial["error"])
    )


def test_the_gold_replay_reports_a_failing_action_and_goes_on(pytester):
    from pytest_commerce_evals.runner.gold import replay

    class Backend:
        def __init__(self):
            self.done = []

        def call_tool(self, name, arguments):
            if name == "refund":
                raise ValueError("not delivered")
            self.done.append(name)

        def snapshot(self):
            return Snapshot(data={"done": list(self.done)})

    from pytest_commerce_evals.cases.case import GoldAction

    backend = Backend()
    gold = replay(
        backend,
        [GoldAction(tool="refund"), GoldAction(tool="cancel")],
        backend.snapshot,
    )
    assert gold.failed == ["action 1 (refund): ValueError: not delivered"]
    assert gold.snapshot is not None and gold.snapshot.data == {"done": ["cancel"]}


def test_the_html_report_shows_the_closing_message_and_why_it_ended(convo, pytester):
    convo("--commerce-html=report.html")
    html = (pytester.path / "report.html").read_text()
    assert "customer, closing:</b> ###STOP###" in html
    assert "conversation ended: the customer ended it (2 turns)" in html
    assert "(graded)" not in html  # every turn of a conversation is graded


def test_a_message_from_the_reply_cache_is_marked_in_the_record_terminal_html_and_store(
    convo, pytester
):
    from pytest_commerce_evals.store import RunStore

    result, first = convo("--customer-mode=model")
    assert result.ret == 0, result.stdout.str()
    assert first["messages"][1:] == ["It's order W1.", "Thanks! ###STOP###"]
    assert "cached" not in first  # asked of the model: nothing marked
    assert "from the reply cache" not in result.stdout.str()
    result, again = convo(
        "--customer-mode=cache", "--commerce-html=report.html", "--commerce-store=runs"
    )
    assert result.ret == 0, result.stdout.str()
    assert again["messages"] == first["messages"]
    assert again["cached"] == [1, 2]  # the opening is the case's own, never the cache's
    result.stdout.fnmatch_lines(
        ["*customer 2 message(s) from the reply cache (--commerce-judge-store)*"]
    )
    html = (pytester.path / "report.html").read_text()
    assert html.count("(from the reply cache)</span>") == 2
    assert "turn 1:</b> I want" in html  # the opening: unmarked
    assert "customer, closing:</b> <span" in html
    store = RunStore(pytester.path / "runs")
    (run,) = store.runs()
    assert store.load_run(run.run_id).trials[0].cached == [1, 2]


def test_a_record_marking_a_message_it_does_not_hold_is_refused():
    from pytest_commerce_evals.results import TrialRecord

    data = {"case_id": "c", "trial": 1, "set_name": "s", "threshold": 1.0, "priority": "high",
            "difficulty": "easy", "outcome": "pass", "messages": ["a", "b"]}  # fmt: skip
    assert TrialRecord.model_validate({**data, "cached": [1]}).cached == [1]
    with pytest.raises(ValidationError, match="message 2 marked as cached, but the trial has 2"):
        TrialRecord.model_validate({**data, "cached": [2]})
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        TrialRecord.model_validate({**data, "cached": [-1]})


def test_the_judge_reads_the_whole_conversation_as_graded():
    from pytest_commerce_evals.judge.judge import render_transcript

    turns = [[Text(text="Which order?")], [Text(text="Done.")]]
    last = render_transcript(["cancel", "W1"], turns).text
    assert "turn 1 of 2 ---" in last and "turn 2 of 2 (graded)" in last
    whole = render_transcript(["cancel", "W1", "###STOP###"], turns, whole=True)
    assert "turn 1 of 3 (graded)" in whole.text and "turn 3 of 3 (graded)" in whole.text


def test_a_scripted_customer_ends_after_its_messages():
    customer = ScriptedCustomer(["a", "b"])
    c = case()
    assert [customer.reply(c, []) for _ in range(3)] == ["a", "b", "###STOP###"]


def test_tool_events_of_a_conversation_are_what_the_graders_read():
    from pytest_commerce_evals.graders.code import grade
    from pytest_commerce_evals.graders.observation import Observation

    c = case(expected={"calls_with": [{"tool": "cancel_order", "arguments": {"order_id": "W1"}}]})
    first = [Text(text="Which order?"), TurnEnd()]
    second = [
        ToolCall(call_id="1", name="cancel_order", arguments={"order_id": "W1"}),
        ToolResult(call_id="1", name="cancel_order", status="ok"),
        TurnEnd(),
    ]
    # the calls were in turn 2 of 3: a conversation-scoped case sees them
    assert grade(c, Observation([first, second, [TurnEnd()]]))[0].passed
    assert not grade(
        c.model_copy(update={"scope": "turn"}), Observation([first, second, [TurnEnd()]])
    )[0].passed


class _Sly(str):
    def strip(self, *args):  # a reply whose methods misbehave
        raise RuntimeError("sly")


class _Odd(BaseException):
    pass


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (lambda: _Sly("It's W1."), None),  # read as its text: a plain message
        (lambda: (_ for _ in ()).throw(_Odd("odd")), "the simulated customer raised"),
    ],
    ids=["str-subclass", "base-exception"],
)
def test_whatever_the_customer_gives_or_raises_is_never_the_agents_failure(reply, says):
    from pytest_commerce_evals.results import TrialRecord, TrialSpec
    from pytest_commerce_evals.runner.trial import converse

    class Customer:
        def reply(self, case, conversation):
            return reply()

    the_case = case(user={"instructions": "You want W1.", "max_turns": 2})
    record = TrialRecord.begin(TrialSpec(the_case, trial=1, trials=1, set_name="s", threshold=0.8))

    def turn(message):
        record.turns.append([Text(text="Which order?"), TurnEnd(turn=len(record.turns))])

    if says is None:
        converse(the_case, record, Customer(), turn)
        assert record.messages[0] == "It's W1." and type(record.messages[0]) is str
    else:
        with pytest.raises(UserError, match=says):
            converse(the_case, record, Customer(), turn)


def test_an_echo_of_twenty_characters_passes_and_of_twenty_one_is_refused():
    twenty, twenty_one = "a" * 20, "b" * 21
    assert check_message(twenty, SPEC, [*SAID[:1], CustomerMessage("agent", twenty)])[0] == twenty
    with pytest.raises(UserError, match="repeated the assistant's reply"):
        check_message(twenty_one, SPEC, [*SAID[:1], CustomerMessage("agent", twenty_one)])
