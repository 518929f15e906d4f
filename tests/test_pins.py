"""Rules whose one-line mutation no other test noticed: each test here fails when its rule is
broken (a multiset compared as a set, a limit spent exactly, whose calls a budget counts, the
reply cache's key and overwrite, a YAML float read as its text, ...)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pytest_commerce_evals import Snapshot, State, ToolCall, TurnEnd
from pytest_commerce_evals.cases.case import Budget, CallSpec, Case
from pytest_commerce_evals.graders.code import GRADERS
from pytest_commerce_evals.graders.observation import Observation
from pytest_commerce_evals.prices import Price, PriceBook
from pytest_commerce_evals.usage import ModelCall


def observed(*events, data=None, calls=(), turn_s=(1.0,), prices=None) -> Observation:
    o = Observation([[*events, TurnEnd()]], Snapshot(data=data or {}), State())
    o.calls, o.turn_s, o.prices = list(calls), list(turn_s), prices
    return o


def test_any_order_is_a_multiset_not_a_set():
    made = observed(ToolCall(call_id="1", name="compare", arguments={"ids": ["a", "b", "b"]}))
    spec = [CallSpec(tool="compare", arguments={"ids": ["a", "a", "b"]}, any_order=["ids"])]
    assert not GRADERS["calls_with"](spec, made).passed  # the same set, not the same multiset
    same = [CallSpec(tool="compare", arguments={"ids": ["b", "a", "b"]}, any_order=["ids"])]
    assert GRADERS["calls_with"](same, made).passed


def test_state_at_an_index_past_the_list_fails_saying_so():
    o = observed(data={"items": [1, 2]})
    result = GRADERS["state_at"]({"items.5": 1}, o)
    assert not result.passed and "items.5" in result.message


def test_a_budget_spent_exactly_is_met_and_one_more_is_not():
    prices = PriceBook({"m": Price(Decimal("1"), Decimal("1"))})
    calls = [ModelCall("agent", "m", 600, 400, 0, 0.1, turn=0)]
    assert GRADERS["budget"](Budget(tokens=1000), observed(calls=calls, prices=prices)).passed
    assert not GRADERS["budget"](Budget(tokens=999), observed(calls=calls, prices=prices)).passed
    assert GRADERS["budget"](Budget(calls=1), observed(calls=calls, prices=prices)).passed
    # 1,000 tokens at $1 a million: exactly $0.001
    assert GRADERS["budget"](Budget(cost="0.001"), observed(calls=calls, prices=prices)).passed


def test_a_budget_counts_the_agents_calls_not_the_customers_or_the_judges():
    prices = PriceBook({"m": Price(Decimal("1"), Decimal("1"))})
    calls = [
        ModelCall("agent", "m", 100, 10, 0, 0.1, turn=0),
        ModelCall("user", "m", 5000, 500, 0, 0.1),
        ModelCall("judge", "m", 5000, 500, 0, 0.1),
    ]
    budget = Budget(calls=1, tokens=110)
    assert GRADERS["budget"](budget, observed(calls=calls, prices=prices)).passed


def test_a_cost_budget_with_a_call_that_has_no_price_is_not_met():
    prices = PriceBook({"m": Price(Decimal("1"), Decimal("1"))}, library=False)
    calls = [
        ModelCall("agent", "m", 100, 10, 0, 0.1, turn=0),
        ModelCall("agent", "unpriced-model", 100, 10, 0, 0.1, turn=0),
    ]
    result = GRADERS["budget"](Budget(cost="5"), observed(calls=calls, prices=prices))
    assert not result.passed and "cost unknown" in result.message


def test_a_yaml_float_cost_is_the_amount_written_not_its_binary():
    case = Case.model_validate(
        {
            "id": "a-001-b",
            "priority": "low",
            "difficulty": "easy",
            "turns": ["x"],
            "expected": {"budget": {"cost": 0.1}},
        }
    )
    assert case.expected.budget.cost == Decimal("0.1")  # not 0.1000000000000000055511151231...


def test_the_reply_cache_key_holds_the_seed_and_a_new_reply_replaces_the_old(tmp_path):
    from pytest_commerce_evals.customer import SimulatedCustomer
    from pytest_commerce_evals.judge.verdict_store import VerdictStore
    from pytest_commerce_evals.testing import FakeClient

    messages = [{"role": "user", "content": "hi"}]
    one = SimulatedCustomer(FakeClient([]), "m", seed=1).key(messages)
    two = SimulatedCustomer(FakeClient([]), "m", seed=2).key(messages)
    assert one != two
    store = VerdictStore(tmp_path / "v.sqlite")
    store.put_reply("k", "m", "first")
    store.put_reply("k", "m", "second")
    assert store.get_reply("k") == "second"
    store.close()


@pytest.mark.parametrize("key", ["same_state_as", "calls_with"])
def test_lint_checks_the_ids_a_gold_action_or_a_call_names(tmp_path, key):
    import yaml

    from pytest_commerce_evals.authoring.lint import FixtureIndex, lint_paths

    action = {"tool": "cancel_order", "arguments": {"order_id": "ord-ghost-404"}}
    case = {
        "id": "orders-001-x",
        "priority": "low",
        "difficulty": "easy",
        "turns": ["x"],
        "expected": {key: [action]},
    }
    folder = tmp_path / "cases" / "orders"
    folder.mkdir(parents=True)
    (folder / "a.yaml").write_text(yaml.safe_dump([case]))
    index = FixtureIndex(ids={"shoe-001", "ord-1001"})
    findings = [
        f for f in lint_paths([tmp_path / "cases"], index, tmp_path) if f.rule == "fixture-ids"
    ]
    assert findings and "ord-ghost-404" in findings[0].message


# -- the τ² retail backend ---------------------------------------------------------------------


def _retail():
    from pathlib import Path

    from pytest_commerce_evals.tau2.retail import RetailBackend

    return RetailBackend.load(Path(__file__).parent / "data" / "tau2" / "db.json")


@pytest.mark.parametrize(("balance", "allowed"), [(5.25, True), (5.24, False)])
def test_a_gift_card_holding_exactly_the_difference_pays_for_an_exchange(balance, allowed):
    from pytest_commerce_evals.tau2.retail import RetailError

    b = _retail()
    b._payment("ada_lee_1", "gift_card_1")["balance"] = balance  # 1001 -> 1002 costs 5.25 more
    arguments = {
        "order_id": "#W2",
        "item_ids": ["1001"],
        "new_item_ids": ["1002"],
        "payment_method_id": "gift_card_1",
    }
    if allowed:
        b.call_tool("exchange_delivered_order_items", arguments)
        assert b.snapshot().data["orders"]["#W2"]["status"] == "exchange requested"
    else:
        with pytest.raises(RetailError, match="Insufficient gift card balance"):
            b.call_tool("exchange_delivered_order_items", arguments)


def test_a_return_may_go_to_a_gift_card_but_not_to_another_card():
    from pytest_commerce_evals.tau2.retail import RetailError

    b = _retail()  # #W2 was paid by credit_card_1
    b.call_tool(
        "return_delivered_order_items",
        {"order_id": "#W2", "item_ids": ["1001"], "payment_method_id": "gift_card_1"},
    )
    assert b.snapshot().data["orders"]["#W2"]["return_payment_method_id"] == "gift_card_1"
    other = _retail()
    other._user("ada_lee_1")["payment_methods"]["credit_card_2"] = {
        "source": "credit_card",
        "id": "credit_card_2",
    }
    with pytest.raises(RetailError, match="original payment method"):
        other.call_tool(
            "return_delivered_order_items",
            {"order_id": "#W2", "item_ids": ["1001"], "payment_method_id": "credit_card_2"},
        )


# -- the τ² bridge ------------------------------------------------------------------------------


def _tau2_results():
    import copy
    import json
    from pathlib import Path

    path = Path(__file__).parent / "data" / "tau2" / "results.json"
    return copy.deepcopy(json.loads(path.read_text(encoding="utf-8")))


def test_a_gold_action_without_a_requestor_is_the_assistants_and_a_users_is_not():
    from pytest_commerce_evals.tau2.tasks import case_of

    task = _tau2_results()["tasks"][0]
    actions = task["evaluation_criteria"]["actions"]
    for action in actions:
        del action["requestor"]  # τ²'s default: the assistant's
    gold = case_of(task, domain="retail")["expected"]["same_state_as"]
    assert [a["tool"] for a in gold] == ["find_user_id_by_name_zip", "cancel_pending_order"]
    actions[0]["requestor"] = "user"  # the customer's own action: not the agent's to take
    gold = case_of(task, domain="retail")["expected"]["same_state_as"]
    assert [a["tool"] for a in gold] == ["cancel_pending_order"]


def test_an_unflagged_error_result_is_a_defect_even_when_the_call_replays():
    from pathlib import Path

    from pytest_commerce_evals.tau2.simulations import load_results, trial_of

    results = load_results(Path(__file__).parent / "data" / "tau2" / "results.json")
    simulation = results.simulations[4]
    # the name-and-zip lookup replays fine, yet its result says Error: and is not flagged
    looked_up = next(m for m in simulation["messages"] if m.get("id") == "c1")
    looked_up["content"] = "Error: the lookup timed out"
    _, defects = trial_of(results, simulation, _retail)
    evidence = [d.evidence for d in defects if d.kind == "unflagged-error"]
    assert any("'Error: the lookup timed out' is not flagged" in e for e in evidence), evidence
    assert not any("timed out" in e and "refuses it on replay" in e for e in evidence)


@pytest.mark.parametrize(("verdicts", "relabelled"), [((True, True), True), ((True, False), None)])
def test_a_mislabelled_simulation_is_relabelled_only_when_its_tasks_agree(
    monkeypatch, verdicts, relabelled
):
    from pytest_commerce_evals.tau2 import parity
    from pytest_commerce_evals.tau2.simulations import Defect

    said = dict(zip(["2", "3"], verdicts, strict=True))

    def grade(results, simulation, backend):
        task = simulation["task_id"]
        wrong = [Defect("task-id", "s", task, "labelled with another task's id")]
        defects = [] if task in said else wrong
        return parity.Verdict("s", task, said.get(task, False), True, [], defects)

    monkeypatch.setattr(parity, "_grade", grade)
    monkeypatch.setattr(parity, "graded_tasks", lambda results, simulation: ["2", "3"])
    found = parity.grade_simulation(None, {"task_id": "1"}, _retail)  # type: ignore[arg-type]
    assert found.relabelled is relabelled


# -- the run's budget under pytest-xdist --------------------------------------------------------


@pytest.mark.parametrize(
    ("workerinput", "share"),
    [
        (None, (10, 1000, Decimal("1"))),  # one process: the whole budget
        ({"workercount": 1}, (10, 1000, Decimal("1"))),
        ({"workercount": 4}, (2, 250, Decimal("0.25"))),  # four workers: a quarter each
    ],
)
def test_each_xdist_worker_holds_an_even_share_of_the_run_budget(monkeypatch, workerinput, share):
    import types

    import pytest_commerce_evals.settings as settings_module
    from pytest_commerce_evals.runner import spending
    from pytest_commerce_evals.settings.values import parse_run_budget

    budget = parse_run_budget("calls:10,tokens:1000,cost:1")
    monkeypatch.setattr(
        settings_module, "settings", lambda config: types.SimpleNamespace(budget=budget)
    )
    monkeypatch.setattr(spending, "price_book", lambda config: PriceBook(library=False))
    config = types.SimpleNamespace(stash=pytest.Stash())
    if workerinput is not None:
        config.workerinput = workerinput
    spend = spending.run_spend(config)  # type: ignore[arg-type]
    assert spend is not None
    assert (spend.budget.calls, spend.budget.tokens, spend.budget.cost) == share
    assert spending.run_spend(config) is spend  # made once per process
