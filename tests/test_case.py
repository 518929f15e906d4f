import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_commerce_evals.cases.case import CASE_ID_PATTERN, Case
from pytest_commerce_evals.cases.schema import render

ROOT = Path(__file__).parent.parent


def test_shipped_json_schema_is_current():
    shipped = (ROOT / "docs" / "case-schema.json").read_text()
    assert shipped == render(), (
        "docs/case-schema.json is stale: run python -m pytest_commerce_evals.cases.schema docs/case-schema.json"
    )


def test_schema_forbids_unknown_keys_and_lists_every_expected_key():
    schema = json.loads(render())
    expected = schema["$defs"]["Expected"]
    assert expected["additionalProperties"] is False
    assert {"calls_tool", "cart_item_count", "rubric", "max_tool_calls"} <= set(
        expected["properties"]
    )


def test_rubric_string_or_mapping():
    one = Case(
        id="a-001-b",
        priority="low",
        difficulty="easy",
        turns=["x"],
        expected={"rubric": "PASS if a. FAIL if b."},
    )
    assert one.expected.rubric_dimensions() == {"rubric": "PASS if a. FAIL if b."}
    many = Case(
        id="a-001-b",
        priority="low",
        difficulty="easy",
        turns=["x"],
        expected={"rubric": {"budget_respected": "PASS if ≤ $100. FAIL if over."}},
    )
    assert list(many.expected.rubric_dimensions()) == ["budget_respected"]
    with pytest.raises(ValidationError):
        Case(
            id="a-001-b", priority="low", difficulty="easy", turns=["x"], expected={"rubric": ["x"]}
        )


@pytest.mark.parametrize(
    "bad",
    [
        "cart",
        "cart-1-add",
        "Cart-001-add",
        "cart-001-",
        "cart-001-add_item",
        "-001-x",
        "cart-\u0660\u0660\u0661-add",  # Arabic-Indic digits: \\d would take them
        "cart-\uff10\uff10\uff11-add",  # fullwidth digits
        "cart-001-add\n",  # $ would let a trailing newline through
        "cart-001-add\nmore",
        "caf\u00e9-001-add",
    ],
)
def test_id_pattern(bad):
    with pytest.raises(ValidationError, match="does not match <flow>-<nnn>-<behavior>"):
        Case(id=bad, priority="low", difficulty="easy", turns=["x"])
    assert not CASE_ID_PATTERN.match(bad), "match() alone must not accept it either"


def test_blank_tags_are_refused_and_any_other_text_is_a_tag():
    for blank in ("", "   ", "\t"):
        with pytest.raises(ValidationError, match=r"tag 2 is empty"):
            Case(id="a-001-b", priority="low", difficulty="easy", turns=["x"], tags=["a", blank])
    odd = ["#hash", "@at", "-dash", "_under", " lead", "3d", "\U0001f389", "\u00fcn\u00efc\u00f6de"]
    assert Case(id="a-001-b", priority="low", difficulty="easy", turns=["x"], tags=odd).tags == odd


@pytest.mark.parametrize(
    ("rubric", "message"),
    [
        ("", "the rubric is empty"),
        ("  \n ", "the rubric is empty"),
        ({}, "the rubric has no dimensions"),
        ({"shoe_named": " "}, "rubric dimension 'shoe_named' is empty"),
        ({" ": "PASS if a. FAIL if b."}, "a rubric dimension has an empty name"),
    ],
)
def test_blank_rubric_texts_are_refused(rubric, message):
    with pytest.raises(ValidationError, match=message):
        Case(
            id="a-001-b",
            priority="low",
            difficulty="easy",
            turns=["x"],
            expected={"rubric": rubric},
        )


def test_an_empty_text_under_a_standard_dimension_means_the_standard_text():
    case = Case(
        id="a-001-b",
        priority="low",
        difficulty="easy",
        turns=["x"],
        expected={"rubric": {"budget_respected": ""}},
    )
    assert case.expected.rubric_dimensions() == {"budget_respected": ""}


def test_role_and_scenario_come_from_flow_and_tags():
    op = Case(id="operator-001-stage-price", priority="high", difficulty="easy", turns=["x"])
    assert op.role == "operator"
    tagged = Case(
        id="poisoned-001-x",
        priority="high",
        difficulty="easy",
        turns=["x"],
        tags=["operator", "scenario:stoves"],
    )
    assert tagged.role == "operator" and tagged.scenario == "stoves"
    assert Case(id="cart-001-x", priority="low", difficulty="easy", turns=["x"]).role == "customer"


def test_cart_shorthand_and_blank_skip():
    case = Case(
        id="cart-001-x",
        priority="low",
        difficulty="easy",
        turns=["x"],
        state={"cart": ["shoe-001"]},
    )
    assert case.state.cart[0].quantity == 1
    with pytest.raises(ValidationError, match="skip needs a reason"):
        Case(id="cart-001-x", priority="low", difficulty="easy", turns=["x"], skip="  ")


def _approving(approvals):
    from pytest_commerce_evals.cases.case import Case

    return Case.model_validate(
        {
            "id": "ops-001-x",
            "priority": "low",
            "difficulty": "easy",
            "turns": ["x"],
            "approvals": approvals,
        }
    )


def test_approvals_say_per_tool_what_the_person_decides_and_default_to_waiting():
    from pytest_commerce_evals.cases.case import DEFAULT_REFUSAL, Approval

    case = _approving(
        {"apply_changes": "approve", "delete_listing": {"refuse": "not this week"}, "x": "refuse"}
    )
    assert case.approval_for("apply_changes") == Approval(decision="approve")
    assert case.approval_for("delete_listing") == Approval(
        decision="refuse", message="not this week"
    )
    assert case.approval_for("x") == Approval(decision="refuse", message=DEFAULT_REFUSAL)
    assert case.approval_for("other").decision == "wait"  # no default: the person has not decided
    assert (
        _approving({"default": "approve", "y": "wait"}).approval_for("other").decision == "approve"
    )
    assert _approving({"default": "approve", "y": "wait"}).approval_for("y").decision == "wait"


@pytest.mark.parametrize(
    ("approvals", "found"),
    [
        ({"apply_changes": True}, "approvals.apply_changes: found True"),
        ({"apply_changes": "maybe"}, "approvals.apply_changes: found 'maybe'"),
        ({"apply_changes": {"refuse": "  "}}, "approvals.apply_changes: found {'refuse': '  '}"),
        ({"apply_changes": {"refuse": "no", "why": "x"}}, "approvals.apply_changes: found"),
        ({}, "approvals is empty"),
        ({" ": "approve"}, "approvals names a tool with an empty name"),
    ],
)
def test_a_bad_approval_says_what_was_found_and_what_is_allowed(approvals, found):
    import pydantic

    with pytest.raises(pydantic.ValidationError) as caught:
        _approving(approvals)
    assert found in str(caught.value)
    if approvals and " " not in approvals:
        assert "allowed: approve, refuse, wait, or {refuse: <what the person says>}" in str(
            caught.value
        )


@pytest.mark.parametrize(
    ("cost", "amount"), [(5, "5"), ("$0.02", "0.02"), (" $ 1.50 ", "1.50"), (0.02, "0.02")]
)
def test_a_budgets_cost_is_a_number_or_a_dollar_string_also_read_strictly(cost, amount):
    from decimal import Decimal

    case = Case.model_validate(
        {
            "id": "a-001-b",
            "priority": "low",
            "difficulty": "easy",
            "turns": ["x"],
            "expected": {"budget": {"cost": cost}},
        },
        strict=True,
    )
    assert case.expected.budget.cost == Decimal(amount)


@pytest.mark.parametrize("cost", ["1e30", 1.0e30, "١", "1_000", True, -1])
def test_a_budgets_cost_out_of_range_or_unreadable_is_refused(cost):
    with pytest.raises(ValidationError, match="budget.cost"):
        Case.model_validate(
            {
                "id": "a-001-b",
                "priority": "low",
                "difficulty": "easy",
                "turns": ["x"],
                "expected": {"budget": {"cost": cost}},
            },
            strict=True,
        )
