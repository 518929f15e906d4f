"""TrialResult.to_dict: every field, events and snapshot as JSON objects."""

from __future__ import annotations

import json
from dataclasses import fields

from pytest_commerce_evals import CartLine, Snapshot, Text, ToolCall
from pytest_commerce_evals.results import GraderResult, RubricVerdict, TrialResult


def test_to_dict_carries_every_field_as_json():
    result = TrialResult(
        case_id="cart-001-x",
        trial=2,
        trials=3,
        set_name="cases/cart",
        priority="high",
        difficulty="easy",
        tags=["cart"],
        outcome="fail",
        grader_results=[GraderResult("cart_contains", False, ["a"], [], "a is missing")],
        verdicts=[RubricVerdict(dimension="d", rubric="r", outcome="pass", verdict="PASS")],
        turns=[
            [ToolCall(call_id="c1", name="search_products", arguments={"q": 1}), Text(text="hi")]
        ],
        snapshot=Snapshot(cart=[CartLine(product_id="a", quantity=1)], memory=["m"], changes=[]),
        error="boom",
        duration_s=1.5,
        file="cases/cart/a.yaml",
        line=4,
    )
    data = result.to_dict()
    assert set(data) == {f.name for f in fields(TrialResult)}
    assert json.loads(json.dumps(data)) == data  # JSON-ready all the way down
    assert data["turns"][0][0]["name"] == "search_products"
    assert data["turns"][0][1]["text"] == "hi"
    assert data["snapshot"]["cart"][0]["product_id"] == "a"
    assert data["grader_results"][0]["message"] == "a is missing"
    assert data["verdicts"][0]["verdict"] == "PASS"
    data["tags"].append("changed")
    assert result.tags == ["cart"]  # a copy, not the result's own list


def _passed_trial(turns: list) -> TrialResult:
    return TrialResult(
        case_id="chat-001-x",
        trial=1,
        trials=1,
        set_name="cases",
        priority="low",
        difficulty="easy",
        tags=[],
        outcome="pass",
        turns=turns,
    )


def _deep(levels: int) -> list:
    root = node = []
    for _ in range(levels):
        child: list = []
        node.append(child)
        node = child
    return root


def test_to_dict_keeps_a_trial_pydantic_json_mode_refuses():
    from pytest_commerce_evals import ToolResult

    result = _passed_trial(
        turns=[
            [
                Text(text="cut inside an emoji \ud83e"),
                ToolResult(call_id="c1", result={"deep": _deep(300), "k\ud83e": "v"}),
            ]
        ],
    )
    data = result.to_dict()  # pydantic's JSON mode refuses the tool result: kept anyway
    reply, tool = data["turns"][0]
    assert reply["text"] == "cut inside an emoji \ud83e"  # the store escapes it on arrival
    assert tool["call_id"] == "c1" and tool["result"]["k\\ud83e"] == "v"
    assert json.loads(json.dumps(tool))["result"]["deep"]  # deep parts kept, as JSON text


def test_to_dict_keeps_an_object_json_has_no_type_for_as_its_repr():
    from pytest_commerce_evals import ToolResult

    class Price:
        def __repr__(self) -> str:
            return "Price(12.50 EUR)"

    result = _passed_trial(
        turns=[[ToolResult(call_id="c1", result={"price": Price()})]],
    )
    [[tool]] = result.to_dict()["turns"]
    assert tool["result"] == {"price": "Price(12.50 EUR)"}
    json.dumps(result.to_dict())  # the store and --commerce-json can write it
