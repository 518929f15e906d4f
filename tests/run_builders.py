"""Builders of stored runs and trials with realistic event streams, for the store, history and
report tests and for the report benchmark."""

from __future__ import annotations

import random
from typing import Any

from pytest_commerce_evals.results import TrialRecord
from pytest_commerce_evals.runs import RunRecord, Selection
from pytest_commerce_evals.store.aggregate import set_results

PRIORITIES = ("critical", "high", "medium", "low")
DIFFICULTIES = ("easy", "medium", "hard")


def events(
    product: str = "shoe-001", *, blocked: bool = False, reply: str = "Added it."
) -> list[dict[str, Any]]:
    """One turn: search, details, a carousel, an add to cart (or a blocked one), a staged change,
    the reply."""
    out: list[dict[str, Any]] = [
        {
            "type": "tool_call",
            "call_id": "c1",
            "name": "search_products",
            "arguments": {"query": "trail running shoes", "max_price": 120},
        },
        {
            "type": "tool_result",
            "call_id": "c1",
            "name": "search_products",
            "status": "ok",
            "reason": None,
            "result": [
                {"id": product, "title": "Trail runner", "price": "89.00"},
                {"id": "shoe-002", "title": "Road runner", "price": "79.00"},
            ],
        },
        {
            "type": "tool_call",
            "call_id": "c2",
            "name": "get_product_details",
            "arguments": {"product_id": product},
        },
        {
            "type": "tool_result",
            "call_id": "c2",
            "name": "get_product_details",
            "status": "ok",
            "reason": None,
            "result": {"id": product, "stock": 4, "reviews": ["Great grip."]},
        },
        {
            "type": "ui",
            "component": "product_carousel",
            "payload": {"product_ids": [product, "shoe-002"]},
        },
        {
            "type": "tool_call",
            "call_id": "c3",
            "name": "add_to_cart",
            "arguments": {"product_id": product, "quantity": 1},
        },
    ]
    if blocked:
        out.append(
            {
                "type": "tool_result",
                "call_id": "c3",
                "name": "add_to_cart",
                "status": "blocked",
                "reason": "provenance: product was never shown",
                "result": None,
            }
        )
    else:
        out += [
            {
                "type": "tool_result",
                "call_id": "c3",
                "name": "add_to_cart",
                "status": "ok",
                "reason": None,
                "result": "added",
            },
            {
                "type": "cart_update",
                "items": [{"product_id": product, "quantity": 1, "variant": "42"}],
            },
        ]
    out += [
        {
            "type": "change_update",
            "changes": [
                {
                    "change_id": "ch1",
                    "kind": "price",
                    "product_id": product,
                    "fields": {"price": "84.00"},
                    "status": "staged",
                }
            ],
        },
        {"type": "text", "text": reply},
        {"type": "turn_end", "turn": 0},
    ]
    return out


def trial(
    case_id: str,
    outcome: str = "pass",
    *,
    n: int = 1,
    trials: int = 1,
    priority: str = "high",
    difficulty: str = "easy",
    set_name: str = "cases/cart",
    threshold: float = 0.8,
    reply: str = "Added it.",
    verdicts: list[dict[str, Any]] | None = None,
) -> TrialRecord:
    failed = outcome == "fail"
    graders = [
        {
            "key": "calls_tool",
            "passed": True,
            "expected": ["add_to_cart"],
            "observed": ["add_to_cart"],
            "message": "calls_tool: add_to_cart was called",
        },
        {
            "key": "cart_contains",
            "passed": not failed,
            "expected": ["shoe-001"],
            "observed": [] if failed else ["shoe-001"],
            "message": "cart_contains: expected shoe-001 in the cart; final cart: empty"
            if failed
            else "cart_contains: shoe-001 is in the cart",
        },
    ]
    return TrialRecord(
        case_id=case_id,
        trial=n,
        trials=trials,
        set_name=set_name,
        threshold=threshold,
        priority=priority,
        difficulty=difficulty,
        tags=["cart"],
        outcome=outcome,
        failures=[graders[1]["message"]] if failed else [],
        grader_results=graders if outcome in ("pass", "fail") else [],
        verdicts=verdicts or [],
        turns=[events(blocked=failed, reply=reply)] if outcome in ("pass", "fail") else [],
        messages=["Add the trail runner to my cart"],
        duration_s=0.5,
        file="cases/cart/add.yaml",
        line=2,
    )


def run(
    trials: list[TrialRecord],
    *,
    run_id: str = "20250101-120000-aaaaaa",
    started_at: str = "2025-01-01T12:00:00.000+00:00",
    model: str | None = "model-a",
    complete: bool = True,
    args: tuple[str, ...] = ("cases",),
    kind: str = "regression",
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        kind=kind,
        started_at=started_at,
        ended_at=started_at,
        complete=complete,
        exit_status=0,
        agent_model=model,
        agent_base_url="http://localhost:8000/v1",
        selection=Selection(args=list(args), trials=max([t.trials for t in trials] + [1])),
        sets=set_results(trials),
        trials=trials,
    )


def synthetic_trials(count: int, seed: int = 7) -> list[TrialRecord]:
    """`count` trials over cases of five trials each, about one in five failing, some judged."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        case = f"flow{i // 50:02d}-{i // 5:03d}-behaviour"
        outcome = rng.choices(["pass", "fail", "judge_error", "skipped"], [78, 18, 2, 2])[0]
        verdicts = (
            [
                {
                    "dimension": "grounded",
                    "rubric": "PASS if every product shown came from a tool result.",
                    "outcome": "pass" if outcome == "pass" else "fail",
                    "verdict": "PASS" if outcome == "pass" else "FAIL",
                    "reasoning": "The carousel shows shoe-001 and shoe-002, both from the search result. "
                    * 3,
                    "judge_model": "judge-m",
                    "judge_fingerprint": "f" * 64,
                    "rubric_fingerprint": "r" * 64,
                    "truncated_chars": rng.choice([0, 0, 0, 1200]),
                    "truncated_turns": 0,
                }
            ]
            if i % 3 == 0
            else []
        )
        t = trial(
            case,
            outcome,
            n=i % 5 + 1,
            trials=5,
            priority=PRIORITIES[i % 4],
            difficulty=DIFFICULTIES[i % 3],
            set_name=f"cases/flow{i // 250}",
            verdicts=verdicts,
        )
        out.append(t)
    return out


# -- pytester suites --------------------------------------------------------------------------

CASES = """
- id: cart-001-add-single
  priority: high
  difficulty: easy
  tags: [cart]
  turns: ["Add the trail runner to my cart"]
  expected:
    calls_tool: [add_to_cart]
    cart_contains: [shoe-001]
- id: cart-002-checkout-total
  priority: critical
  difficulty: medium
  tags: [cart, checkout]
  turns: ["Add the trail runner to my cart"]
  expected:
    cart_contains: [shoe-001]
- id: cart-003-vegan-tote
  priority: low
  difficulty: hard
  tags: [cart]
  turns: ["Add the vegan tote"]
  expected:
    cart_contains: [bag-001]
"""

ADD = 'tool_reply("add_to_cart", product_id="{pid}"), text_reply("{reply}")'


def script(**by_case: str) -> str:
    """Python source of {case_id: [replies]}: each case adds the given product to the cart
    (`cart_001_add_single="shoe-001"`), so a case passes or fails as the product says."""
    items = []
    for key, pid in by_case.items():
        case_id = key.replace("_", "-")
        items.append(f"{case_id!r}: [{ADD.format(pid=pid, reply='Done.')}]")
    return "{" + ", ".join(items) + "}"


PASSING = {
    "cart_001_add_single": "shoe-001",
    "cart_002_checkout_total": "shoe-001",
    "cart_003_vegan_tote": "bag-001",
}


def make_suite(pytester, helpers_source: str):
    """Set up a pytester dir with the toy agent and CASES; returns `write(**products)` that
    rewrites the agent's script (the defaults make every case pass)."""
    from helpers import toy_conftest

    (pytester.path / "helpers.py").write_text(helpers_source)
    pytester.syspathinsert(pytester.path)
    (pytester.path / "cases" / "cart").mkdir(parents=True, exist_ok=True)
    (pytester.path / "cases" / "cart" / "add.yaml").write_text(CASES)

    def write(**products: str) -> None:
        pytester.makeconftest(toy_conftest(script(**(PASSING | products))))

    write()
    return write
