"""TrialRecord.clean: the one record in the form every writer takes, whatever a trial holds."""

from __future__ import annotations

import json

from pytest_commerce_evals import CartLine, Snapshot, Text, ToolCall, ToolResult
from pytest_commerce_evals.results import GraderResult, RubricVerdict, TrialRecord


def _trial(turns: list, **changes) -> TrialRecord:
    # built as the runner builds it: without validation, holding what the trial produced
    base = dict(
        case_id="chat-001-x",
        trial=1,
        trials=1,
        set_name="cases",
        threshold=0.5,
        priority="low",
        difficulty="easy",
        tags=[],
        outcome="pass",
        turns=turns,
    )
    return TrialRecord.model_construct(**(base | changes))


def test_a_record_json_can_hold_is_written_as_it_is():
    record = _trial(
        [[ToolCall(call_id="c1", name="search_products", arguments={"q": 1}), Text(text="hi")]],
        grader_results=[GraderResult("cart_contains", False, ["a"], [], "a is missing")],
        verdicts=[RubricVerdict(dimension="d", rubric="r", outcome="pass", verdict="PASS")],
        snapshot=Snapshot(cart=[CartLine(product_id="a", quantity=1)], memory=["m"], changes=[]),
    )
    assert record.clean() is record
    data = json.loads(record.model_dump_json())
    assert data["turns"][0][0]["name"] == "search_products"
    assert data["snapshot"]["cart"][0]["product_id"] == "a"
    assert data["grader_results"][0]["message"] == "a is missing"
    assert data["verdicts"][0]["verdict"] == "PASS"
    assert "rubric_not_judged" not in data  # the summary's, never stored


def _deep(levels: int) -> list:
    root = node = []
    for _ in range(levels):
        child: list = []
        node.append(child)
        node = child
    return root


def test_a_trial_pydantic_json_mode_refuses_is_kept_as_a_writable_copy():
    record = _trial(
        [
            [
                Text(text="cut inside an emoji \ud83e"),
                ToolResult(call_id="c1", result={"deep": _deep(300), "k\ud83e": "v"}),
            ]
        ],
        rubric_not_judged=True,
    )
    clean = record.clean()
    assert clean is not record and clean.rubric_not_judged
    reply, tool = clean.turns[0]
    assert isinstance(reply, Text) and reply.text == "cut inside an emoji \\ud83e"
    assert isinstance(tool, ToolResult) and tool.call_id == "c1"
    assert tool.result["k\\ud83e"] == "v"
    # kept (past pydantic's serialisation depth; the store's writers take it)
    assert json.loads(json.dumps(clean.model_dump()))["turns"][0][1]["result"]["deep"]
    assert record.turns[0][0].text == "cut inside an emoji \ud83e"  # the trial's own, untouched


def test_an_object_json_has_no_type_for_is_kept_as_its_repr():
    class Price:
        def __repr__(self) -> str:
            return "Price(12.50 EUR)"

    record = _trial([[ToolResult(call_id="c1", result={"price": Price()})]])
    [[tool]] = record.clean().turns
    assert tool.result == {"price": "Price(12.50 EUR)"}
    json.dumps(record.clean().model_dump())  # the store and --commerce-json can write it


def test_one_case_tally_counts_each_outcome_and_the_summary_lists_the_ungraded_ones():
    from run_builders import trial

    from pytest_commerce_evals.rates import tally_cases
    from pytest_commerce_evals.runner.summary import Summary

    outcomes = ["pass", "skipped", "fail", "infra_error", "infra_error"]
    trials = [trial("cart-001-a", o, n=n, trials=5) for n, o in enumerate(outcomes, 1)]
    trials.append(trial("cart-002-b", "judge_error", set_name="cases/other"))
    tallies = tally_cases(trials)
    a = tallies["cart-001-a"]
    assert (a.recorded, a.graded, a.passed, a.pass_rate) == (5, 2, 1, 0.5)
    # the ungraded outcomes in the order OUTCOMES lists them, not the order they were met
    assert a.other == {"infra_error": 2, "skipped": 1}
    assert list(a.other) == ["infra_error", "skipped"]
    assert (a.set_name, a.priority, a.difficulty) == ("cases/cart", "high", "easy")
    assert tallies["cart-002-b"].pass_rate is None and tallies["cart-002-b"].graded == 0
    summary = Summary()
    for t in trials:
        summary.add(t)
    table = "\n".join(summary.lines())
    assert "cart-001-a" in table and "1/2" in table and "2 infra_error, 1 skipped" in table
    assert summary.cases["cart-001-a"] is summary.sets["cases/cart"].cases["cart-001-a"]
