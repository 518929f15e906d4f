"""The standard rubric dimensions and how cases refer to them."""

from __future__ import annotations

import hashlib
import json

import pytest

from pytest_commerce_evals.cases.case import Expected
from pytest_commerce_evals.rubrics import (
    STANDARD,
    UnknownDimension,
    resolve_dimensions,
    rubric_fingerprint,
    standard_text,
)

SUITE_DIMENSIONS = {
    "budget_respected",
    "availability_not_fabricated",
    "tradeoffs_explained",
    "grounded_in_catalog",
    "price_accurate",
    "delivery_date_accurate",
    "no_injected_claims",
    "memory_respected",
    "refusal_appropriate",
    "changes_staged_not_applied",
}


def test_the_suite_dimensions_are_all_standard():
    assert SUITE_DIMENSIONS <= set(STANDARD)


@pytest.mark.parametrize("name", sorted(STANDARD))
def test_standard_text_has_a_pass_then_a_fail_condition(name):
    text = STANDARD[name].text
    assert text.startswith("PASS if "), text
    assert text.count("PASS if ") == 1 and text.count("FAIL if ") == 1
    assert text.index("PASS if ") < text.index("FAIL if ")
    assert "  " not in text and "\n" not in text  # normalised once, so fingerprints are stable


@pytest.mark.parametrize("name", sorted(STANDARD))
def test_standard_text_never_grades_tone_or_length(name):
    lowered = STANDARD[name].text.lower()
    for word in ("tone", "friendly", "polite", "concise", "length", "verbose"):
        assert word not in lowered, f"{name} mentions {word!r}"


def test_a_single_string_naming_a_standard_dimension_becomes_that_dimension():
    dims = Expected(rubric="budget_respected").rubric_dimensions()
    assert resolve_dimensions(dims) == {"budget_respected": STANDARD["budget_respected"].text}


def test_a_mapping_value_standard_takes_the_standard_text():
    dims = Expected(
        rubric={"price_accurate": "standard", "memory_respected": ""}
    ).rubric_dimensions()
    assert resolve_dimensions(dims) == {
        "price_accurate": STANDARD["price_accurate"].text,
        "memory_respected": STANDARD["memory_respected"].text,
    }


def test_case_specific_text_under_a_standard_name_is_kept():
    own = "PASS if it names shoe-trl-0142 at 109.00. FAIL if it quotes 129.00 as today's price."
    dims = Expected(rubric={"price_accurate": own}).rubric_dimensions()
    assert resolve_dimensions(dims) == {"price_accurate": own}


def test_a_free_text_single_rubric_stays_the_rubric_dimension():
    own = "PASS if it says the order moved to June 13. FAIL if it gives June 10."
    assert resolve_dimensions(Expected(rubric=own).rubric_dimensions()) == {"rubric": own}


def test_referring_to_an_unknown_standard_dimension_names_the_choices():
    with pytest.raises(
        UnknownDimension, match=r"'budget_kept' is not a standard.*budget_respected"
    ):
        resolve_dimensions({"budget_kept": "standard"})
    with pytest.raises(UnknownDimension):
        standard_text("nope")


def test_rubric_fingerprint_is_sha256_of_name_and_text():
    expected = hashlib.sha256(
        json.dumps(["price_accurate", "PASS if a. FAIL if b."], separators=(",", ":")).encode()
    ).hexdigest()
    assert rubric_fingerprint("price_accurate", "PASS if a. FAIL if b.") == expected


def test_rubric_fingerprint_changes_with_name_or_text():
    base = rubric_fingerprint("price_accurate", "PASS if a. FAIL if b.")
    assert rubric_fingerprint("budget_respected", "PASS if a. FAIL if b.") != base
    assert rubric_fingerprint("price_accurate", "PASS if a. FAIL if c.") != base
    assert STANDARD["price_accurate"].fingerprint == rubric_fingerprint(
        "price_accurate", STANDARD["price_accurate"].text
    )
