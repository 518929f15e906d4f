"""Every code block of docs/plugging-in.md runs: the integrations' conftests are the example
projects' own (which tests/test_examples.py runs), and every other block is executed here and
what it defines is driven."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from pytest_commerce_evals import Snapshot, State
from pytest_commerce_evals.cases.case import Case

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "plugging-in.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text()) if lang == language]


def examples() -> dict[str, str]:
    return {p.parent.name: p.read_text() for p in sorted((ROOT / "examples").glob("*/conftest.py"))}


def is_example(block: str) -> bool:
    return block.startswith(("from shop_agent", "from shop_graph", "from shop_tools"))


def test_the_doc_leads_with_one_integration_per_framework_shown_as_its_example():
    text = DOC.read_text()
    first = text.index("## Integrations")
    assert first < text.index("## The backend protocol") < text.index("## An agent of your own")
    shown = [b for b in blocks("python") if is_example(b)]
    assert sorted(shown) == sorted(examples().values())
    assert len(shown) == 4


def test_every_other_python_block_runs_and_does_what_it_says(tmp_path):
    others = [b for b in blocks("python") if not is_example(b)]
    assert len(others) >= 4
    defined: dict = {}
    for block in others:
        namespace: dict = {"__name__": "doc_block"}
        exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - the docs' own code
        defined.update(namespace)

    backend = defined["MyBackend"]()
    backend.load_state(
        State.model_validate({"cart": [{"product_id": "shoe-001"}], "memory": ["m"]})
    )
    snap = backend.snapshot()
    assert isinstance(snap, Snapshot)
    assert [(c.product_id, c.quantity) for c in snap.cart] == [("shoe-001", 1)]
    assert snap.memory == ["m"] and snap.changes[0].status == "staged"
    backend.call_tool("cancel_order", {"order_id": "W123"})
    assert backend.snapshot().data["orders"]["W123"]["status"] == "cancelled"
    with pytest.raises(ValueError, match="no tool"):
        backend.call_tool("refund", {})

    steps = [
        SimpleNamespace(
            kind="tool",
            id="c1",
            name="search_products",
            args={"q": "x"},
            status="ok",
            reason=None,
            output=[],
        ),
        SimpleNamespace(kind="text", text="Here you are."),
    ]
    app = SimpleNamespace(respond=lambda history, message, tools: steps)
    session = SimpleNamespace(history=[], backend=None)
    events = list(defined["MyAgent"](app).run_turn(session, "hi"))
    assert [e.type for e in events] == ["tool_call", "tool_result", "text"]

    from pytest_commerce_evals.reference import ReferenceBackend

    assert isinstance(defined["pytest_commerce_evals_make_backend"](None, None), ReferenceBackend)
    from pytest_commerce_evals.events import ToolCall

    record = SimpleNamespace(
        outcome="fail",
        case_id="a-001-b",
        failures=["x"],
        turns=[[ToolCall(call_id="1", name="add_to_cart")]],
    )
    defined["pytest_commerce_evals_trial_recorded"](None, record)


def test_the_approvals_block_is_a_valid_approvals_key():
    [block] = [b for b in blocks("yaml") if b.startswith("approvals:")]
    case = Case.model_validate(
        {
            "id": "ops-001-x",
            "priority": "low",
            "difficulty": "easy",
            "turns": ["x"],
            **yaml.safe_load(block),
        }
    )
    assert case.approval_for("cancel_order").decision == "approve"
    assert case.approval_for("delete_listing").message == "not this week"
    assert case.approval_for("issue_refund").decision == "refuse"
    assert case.approval_for("anything_else").decision == "wait"
