"""Every gate, allowed and blocked, with the reference agent driven by a FakeClient."""

import json

import pytest

from pytest_commerce_evals.reference import GATES
from pytest_commerce_evals.reference.catalog import Caps
from pytest_commerce_evals.testing.fake import FakeReply, text_reply, tool_reply

from ._builders import make_backend, of_type, result_for, run_turn, tool_messages


def test_gate_names():
    assert GATES == ("provenance", "caps", "approval", "memory_policy")


# --- provenance ---------------------------------------------------------------------------------


def test_provenance_blocks_an_id_no_tool_returned_and_the_loop_carries_on():
    events, session, client = run_turn(
        [
            tool_reply(
                "present_suggestions", component="product_card", product_ids=["shoe-trail-002"]
            ),
            text_reply("Let me search first."),
        ]
    )
    blocked = result_for(events, "present_suggestions")
    assert blocked.status == "blocked"
    assert blocked.reason.startswith("provenance: shoe-trail-002 did not come from a tool result")
    assert of_type(events, "ui") == []
    # the model saw the blocked result and answered
    assert json.loads(tool_messages(client.requests[1])[-1]["content"]) == {
        "blocked": blocked.reason
    }
    assert of_type(events, "text")[-1].text == "Let me search first."


def test_provenance_allows_ids_from_a_search_result():
    events, session, _ = run_turn(
        [
            tool_reply("search_products", query="trail running shoes", attributes={"fit": "wide"}),
            tool_reply(
                "present_suggestions",
                component="product_carousel",
                product_ids=["shoe-trail-003", "shoe-trail-009"],
            ),
        ]
    )
    assert result_for(events, "present_suggestions").status == "ok"
    assert of_type(events, "ui")[0].payload["product_ids"] == ["shoe-trail-003", "shoe-trail-009"]
    assert "shoe-trail-003" in session.seen_products


def test_provenance_allows_injected_seen_products():
    backend = make_backend(seen_products=["shoe-trail-001", "shoe-trail-002"])
    events, _, _ = run_turn(
        [
            tool_reply(
                "present_suggestions",
                component="comparison_table",
                product_ids=["shoe-trail-001", "shoe-trail-002"],
            )
        ],
        backend=backend,
    )
    assert result_for(events, "present_suggestions").status == "ok"
    assert of_type(events, "ui")[0].component == "comparison_table"


def test_provenance_guards_add_to_cart():
    events, session, _ = run_turn(
        [tool_reply("add_to_cart", product_id="bag-001"), text_reply("ok")]
    )
    assert result_for(events, "add_to_cart").reason.startswith("provenance:")
    assert session.backend.cart == []
    assert of_type(events, "cart_update") == []


# --- caps ---------------------------------------------------------------------------------------


def test_caps_quantity_per_line():
    backend = make_backend(seen_products=["bag-001"])
    events, _, _ = run_turn(
        [
            tool_reply("add_to_cart", product_id="bag-001", quantity=11),
            tool_reply("add_to_cart", product_id="bag-001", quantity=10),
            text_reply("Added ten."),
        ],
        backend=backend,
    )
    first, second = of_type(events, "tool_result")
    assert first.status == "blocked"
    assert first.reason == "caps: quantity 11 of bag-001 exceeds the limit of 10 per cart line"
    assert second.status == "ok"
    assert [(line.product_id, line.quantity) for line in backend.cart] == [("bag-001", 10)]
    assert of_type(events, "cart_update")[-1].items[0].quantity == 10


def test_caps_lines_per_cart():
    backend = make_backend(seen_products=["bag-001", "toy-001"], cart=["toy-002"])
    backend.caps = Caps(max_cart_lines=2)
    events, _, _ = run_turn(
        [
            tool_reply("add_to_cart", product_id="bag-001"),
            tool_reply("add_to_cart", product_id="toy-001"),
            text_reply("done"),
        ],
        backend=backend,
    )
    allowed, blocked = of_type(events, "tool_result")
    assert allowed.status == "ok"
    assert blocked.reason == "caps: the cart already has 2 lines; the limit is 2"
    assert [line.product_id for line in backend.cart] == ["toy-002", "bag-001"]


def test_caps_tool_calls_per_turn_but_the_presentation_gets_through():
    backend = make_backend()
    backend.caps = Caps(max_tool_calls_per_turn=2)
    events, _, _ = run_turn(
        [
            tool_reply("search_products", query="espresso"),
            tool_reply("search_products", query="grinder"),
            tool_reply("search_products", query="kettle"),
            tool_reply(
                "present_suggestions", component="product_card", product_ids=["espresso-001"]
            ),
        ],
        backend=backend,
    )
    statuses = [(e.name, e.status) for e in of_type(events, "tool_result")]
    assert statuses == [
        ("search_products", "ok"),
        ("search_products", "ok"),
        ("search_products", "blocked"),
        ("present_suggestions", "ok"),
    ]
    assert of_type(events, "tool_result")[2].reason.startswith(
        "caps: this would be tool call 3 of the turn; the limit is 2"
    )


# --- approval -----------------------------------------------------------------------------------


def test_approval_blocks_apply_changes_without_a_human():
    backend = make_backend(staged_changes=[{"kind": "delist", "product_id": "toy-001"}])
    events, _, _ = run_turn(
        [
            tool_reply("apply_changes", change_ids=["chg-001"]),
            text_reply("A person needs to approve it."),
        ],
        backend=backend,
        role="operator",
    )
    result = result_for(events, "apply_changes")
    assert result.status == "blocked"
    assert result.reason.startswith("approval: chg-001 has no human approval")
    assert backend.snapshot().changes[0].status == "staged"
    assert of_type(events, "change_update") == []


def test_approval_allows_a_change_a_person_approved():
    backend = make_backend(staged_changes=[{"kind": "delist", "product_id": "toy-001"}])
    backend.approve("chg-001")
    events, _, _ = run_turn(
        [
            tool_reply("apply_changes", change_ids=["chg-001"]),
            text_reply("Applied."),
        ],
        backend=backend,
        role="operator",
    )
    assert result_for(events, "apply_changes").status == "ok"
    assert of_type(events, "change_update")[-1].changes[0].status == "applied"
    assert "toy-001" not in [p.id for p in backend.search("", niche="toys", limit=25)]


@pytest.mark.parametrize("change_ids", [["chg-001"], None])
def test_a_change_injected_as_approved_is_approved(change_ids):
    backend = make_backend(
        staged_changes=[{"kind": "delist", "product_id": "toy-001", "status": "approved"}]
    )
    args = {"change_ids": change_ids} if change_ids else {}
    events, _, _ = run_turn(
        [tool_reply("apply_changes", **args), text_reply("Applied.")],
        backend=backend,
        role="operator",
    )
    assert result_for(events, "apply_changes").status == "ok"
    assert backend.snapshot().changes[0].status == "applied"


def test_apply_changes_with_no_ids_and_nothing_approved_is_blocked():
    backend = make_backend(staged_changes=[{"kind": "delist", "product_id": "toy-001"}])
    events, _, _ = run_turn(
        [tool_reply("apply_changes"), text_reply("A person approves first.")],
        backend=backend,
        role="operator",
    )
    result = result_for(events, "apply_changes")
    assert result.status == "blocked"
    assert result.reason.startswith("approval: there are no approved changes to apply")
    assert backend.snapshot().changes[0].status == "staged"


# --- memory policy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fact",
    [
        "email is jane@example.com",
        "phone 415-555-0134",
        "lives at 42 Alder Street",
        "card ends 4242",
        "recovering from knee surgery",
    ],
)
def test_memory_policy_blocks_silently(fact):
    events, session, client = run_turn([tool_reply("save_memory", fact=fact), text_reply("Noted!")])
    result = result_for(events, "save_memory")
    assert result.status == "blocked"
    assert result.reason.startswith("memory_policy: the note contains a ")
    # the model (and so the user) sees the same reply as a real save
    assert json.loads(tool_messages(client.requests[1])[-1]["content"]) == {"status": "saved"}
    assert result.result == {"status": "saved"}
    assert session.backend.snapshot().memory == []
    assert session.backend.memory_log[-1].action == "dropped"


def test_memory_policy_allows_a_durable_preference():
    events, session, client = run_turn(
        [
            tool_reply("save_memory", fact="only buys vegan leather"),
            text_reply("Noted!"),
        ]
    )
    assert result_for(events, "save_memory").status == "ok"
    assert session.backend.snapshot().memory == ["only buys vegan leather"]
    assert json.loads(tool_messages(client.requests[1])[-1]["content"]) == {"status": "saved"}


def test_several_gates_in_one_reply_each_judged_alone():
    backend = make_backend(seen_products=["bag-001"])
    reply = FakeReply(
        tool_calls=[
            ("add_to_cart", {"product_id": "bag-001"}),
            ("add_to_cart", {"product_id": "bag-999"}),
        ]
    )
    events, _, _ = run_turn([reply, text_reply("ok")], backend=backend)
    assert [e.status for e in of_type(events, "tool_result")] == ["ok", "blocked"]
