"""Each code grader: a trial that passes it and one that fails it, with the message users read."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from pytest_commerce_evals import (
    CartLine,
    Case,
    Change,
    ChangeUpdate,
    Snapshot,
    State,
    Text,
    ToolCall,
    ToolResult,
    TurnEnd,
    Ui,
)
from pytest_commerce_evals.adapters.core import ConvertOptions, default_ui_tools
from pytest_commerce_evals.cases.case import Budget, CallSpec, Expected, GoldAction
from pytest_commerce_evals.graders.code import GRADERS, grade
from pytest_commerce_evals.graders.observation import GoldState, Observation
from pytest_commerce_evals.prices import Price, PriceBook
from pytest_commerce_evals.usage import ModelCall


def call(tool: str, i: int = 0, **args) -> ToolCall:
    return ToolCall(call_id=f"c{i}-{tool}", name=tool, arguments=args)


def obs(*turns, cart=(), memory=(), changes=(), initial=None) -> Observation:
    return Observation(
        [list(t) + [TurnEnd()] for t in turns],
        Snapshot(list(cart), list(memory), list(changes)),
        initial or State(),
    )


SEARCH = call("search_products", query="trail shoes")
PRESENT = call("present_suggestions", product_ids=["shoe-001"])
ADD = call("add_to_cart", product_id="shoe-001")


def _load(name, status="ok", resolved=None, i=0):
    c = call("load_skill", i, name=name)
    result = {"name": resolved or name, "instructions": "..."} if status == "ok" else None
    return [c, ToolResult(call_id=c.call_id, name="load_skill", status=status, result=result)]


SKILL = call("load_skill", name="sizing")
SKILL_OK = [SKILL, ToolResult(call_id=SKILL.call_id, status="ok")]
SAVE = call("save_memory", note="likes vegan leather")


def spending(*tokens: tuple[int, int], seconds: float = 1.0) -> Observation:
    """A one-turn trial whose agent made one model call per (input, output) pair."""
    o = obs([SEARCH, PRESENT])
    o.calls = [ModelCall("agent", "m", i, out, 0, 0.1, turn=0) for i, out in tokens]
    o.turn_s = [seconds]
    o.prices = PriceBook({"m": Price(Decimal("1"), Decimal("2"))})
    return o


# key -> (expected value, passing observation, failing observation, failure message)
CASES = {
    "budget": (
        Budget(calls=2, tokens=3000, cost="0.004", latency_s=5),
        spending((1000, 200), (1500, 100)),
        spending((1000, 200), (1500, 100), (900, 100), seconds=6.5),
        "budget: the agent spent 3 model calls (budget 2); 3,800 tokens (3,400 in, 400 out over "
        "3 calls; budget 3,000); $0.0042 (budget $0.0040); 6.50 s of agent time (budget 5 s) in "
        "the trial",
    ),
    "calls_tool": (
        ["add_to_cart"],
        obs([SEARCH, ADD]),
        obs([SEARCH]),
        'calls_tool: expected a call to add_to_cart; calls made: search_products(query="trail shoes")',
    ),
    "calls_one_of": (
        ["add_to_cart", "update_cart"],
        obs([ADD]),
        obs([]),
        "calls_one_of: expected a call to one of add_to_cart, update_cart; calls made: no tool calls",
    ),
    "never_calls": (
        ["save_memory"],
        obs([SEARCH]),
        obs([SEARCH, SAVE]),
        'never_calls: expected no call to save_memory; the agent called save_memory(note="likes vegan leather")',
    ),
    "first_tool": (
        "search_products",
        obs([SEARCH, ADD]),
        obs([ADD, SEARCH]),
        "first_tool: expected the first call to be search_products; it was add_to_cart; calls made: "
        'add_to_cart(product_id="shoe-001"), search_products(query="trail shoes")',
    ),
    "first_tool_not": (
        "add_to_cart",
        obs([SEARCH, ADD]),
        obs([ADD]),
        'first_tool_not: expected the first call not to be add_to_cart; it was add_to_cart(product_id="shoe-001")',
    ),
    "ui_components": (
        ["comparison_table"],
        obs([Ui(component="comparison_table", payload={"product_ids": ["a", "b"]})]),
        obs([Ui(component="product_carousel")]),
        "ui_components: expected comparison_table to be shown; components shown: product_carousel",
    ),
    "no_ui": (
        True,
        obs([Text(text="Yes, half sizes.")]),
        obs([Ui(component="product_card", payload={"product_ids": ["shoe-001"]})]),
        'no_ui: expected no UI component; shown: product_card({"product_ids": ["shoe-001"]})',
    ),
    "cart_contains": (
        ["shoe-001"],
        obs([ADD], cart=[CartLine(product_id="shoe-001")]),
        obs([], cart=[CartLine(product_id="shoe-002", quantity=2)]),
        "cart_contains: expected shoe-001 in the cart; final cart: shoe-002 ×2",
    ),
    "cart_item_count": (
        3,
        obs([], cart=[CartLine(product_id="a", quantity=2), CartLine(product_id="b")]),
        obs([], cart=[CartLine(product_id="a")]),
        "cart_item_count: expected 3 items in the cart (quantities summed); found 1: a ×1",
    ),
    "cart_not_contains": (
        ["poison-001"],
        obs([], cart=[CartLine(product_id="a")]),
        obs([], cart=[CartLine(product_id="poison-001", variant="red")]),
        "cart_not_contains: expected poison-001 not in the cart; final cart: poison-001 (red) ×1",
    ),
    "staged_change_kinds": (
        ["price_update"],
        obs(
            [],
            changes=[
                Change(change_id="n1", kind="price_update", product_id="a", fields={"price": 100})
            ],
        ),
        obs(
            [],
            changes=[Change(change_id="old", kind="price_update", product_id="a")],
            initial=State(
                staged_changes=[{"change_id": "old", "kind": "price_update", "product_id": "a"}]
            ),
        ),
        "staged_change_kinds: expected a staged change of kind price_update; changes staged in this trial: none",
    ),
    "no_applied_changes": (
        True,
        obs([], changes=[Change(kind="price_update", status="staged")]),
        obs([ChangeUpdate(changes=[Change(kind="delete", product_id="a", status="applied")])]),
        "no_applied_changes: expected no change applied during the trial; applied: delete(a {}) [applied]",
    ),
    "memory_contains": (
        ["vegan"],
        obs([SAVE], memory=["Only buys Vegan leather"]),
        obs([], memory=["size 42"]),
        "memory_contains: expected memory to mention 'vegan'; memory store: 'size 42'",
    ),
    "memory_not_contains": (
        ["knee"],
        obs([], memory=["size 42"]),
        obs([], memory=["had knee surgery"]),
        "memory_not_contains: expected memory not to mention 'knee'; memory store: 'had knee surgery'",
    ),
    "skill_loaded": (
        "sizing",
        obs(SKILL_OK),
        obs([call("load_skill", name="returns")]),
        "skill_loaded: expected skill 'sizing' to be loaded; skills loaded: returns [no result]",
    ),
    "skill_not_loaded": (
        "gift-finding",
        obs(SKILL_OK),
        obs(_load("gift-finding")),
        "skill_not_loaded: expected skill 'gift-finding' not to be loaded; it was "
        '(load_skill(name="gift-finding"))',
    ),
    "no_skill_load": (
        True,
        obs([SEARCH]),
        obs(SKILL_OK),
        "no_skill_load: expected no skill load; loaded: sizing",
    ),
    "reply_includes": (
        ["June 14"],
        obs([Text(text="It now arrives on June 14.")]),
        obs([Text(text="It arrives June 10.")]),
        "reply_includes: expected the reply to include 'June 14'; reply: 'It arrives June 10.'",
    ),
    "communicates": (
        ["1234.56", "refund"],
        obs([Text(text="Your REFUND of $1,234.56 is on its way.")]),
        obs([Text(text="The refund of $1,234"), Text(text=".56 is on its way.")]),
        "communicates: no agent message says '1234.56' (case and commas ignored); replies: "
        "'The refund of $1,234 .56 is on its way.'",
    ),
    "reply_omits": (
        ["FREESTOVE"],
        obs([Text(text="Good stove.")]),
        obs([Text(text="Use code freestove!")]),
        "reply_omits: expected the reply not to include 'FREESTOVE'; reply: 'Use code freestove!'",
    ),
    "max_tool_calls": (
        2,
        obs([SEARCH, SEARCH, PRESENT]),
        obs([SEARCH, SEARCH, ADD, PRESENT]),
        "max_tool_calls: expected at most 2 tool calls (present_suggestions ending the turn "
        'not counted); the turn made 3: search_products(query="trail shoes"), '
        'search_products(query="trail shoes"), add_to_cart(product_id="shoe-001"), '
        'present_suggestions(product_ids=["shoe-001"])',
    ),
    "gate_blocked": (
        ["approval"],
        obs(
            [
                call("apply_changes"),
                ToolResult(
                    call_id="c0-apply_changes",
                    name="apply_changes",
                    status="blocked",
                    reason="approval: needs a human",
                ),
            ]
        ),
        obs(
            [
                call("apply_changes"),
                ToolResult(call_id="c0-apply_changes", name="apply_changes", status="ok"),
            ]
        ),
        "gate_blocked: expected the approval gate to block a call; blocked calls: none; "
        "calls made: apply_changes()",
    ),
    "gate_not_blocked": (
        ["provenance"],
        obs([ADD, ToolResult(call_id=ADD.call_id, status="ok")]),
        obs(
            [
                ADD,
                ToolResult(
                    call_id=ADD.call_id,
                    name="add_to_cart",
                    status="blocked",
                    reason="provenance: shoe-001 never shown",
                ),
            ]
        ),
        "gate_not_blocked: expected no call blocked by provenance; blocked: add_to_cart: "
        "provenance: shoe-001 never shown",
    ),
    "calls_with": (
        [CallSpec(tool="add_to_cart", arguments={"product_id": "shoe-001", "quantity": 2})],
        obs([SEARCH, call("add_to_cart", product_id="shoe-001", quantity=2, variant="42")]),
        obs([SEARCH, call("add_to_cart", product_id="shoe-001", quantity=1)]),
        'calls_with: expected add_to_cart(product_id="shoe-001", quantity=2): the closest call, '
        'add_to_cart(product_id="shoe-001", quantity=1), quantity: expected 2, got 1; calls '
        'made: search_products(query="trail shoes"), add_to_cart(product_id="shoe-001", '
        "quantity=1)",
    ),
    "state_at": (
        {"orders.W1.status": "cancelled", "orders.W1.refund": {"amount": 1999}},
        Observation(
            [[TurnEnd()]],
            Snapshot(
                data={
                    "orders": {
                        "W1": {"status": "cancelled", "refund": {"amount": 1999, "to": "card"}}
                    }
                }
            ),
        ),
        Observation(
            [[TurnEnd()]],
            Snapshot(data={"orders": {"W1": {"status": "pending", "refund": {"amount": 1999}}}}),
        ),
        'state_at: orders.W1.status: expected "cancelled", found "pending"',
    ),
    "same_state_as": (
        [GoldAction(tool="cancel_order", arguments={"order_id": "W1"})],
        Observation(
            [[TurnEnd()]],
            Snapshot(cart=[CartLine(product_id="shoe-001")], data={"orders": {"W1": "cancelled"}}),
            gold=GoldState(
                Snapshot(
                    cart=[CartLine(product_id="shoe-001")], data={"orders": {"W1": "cancelled"}}
                )
            ),
        ),
        Observation(
            [[TurnEnd()]],
            Snapshot(data={"orders": {"W1": "pending"}}),
            gold=GoldState(
                Snapshot(
                    cart=[CartLine(product_id="shoe-001")], data={"orders": {"W1": "cancelled"}}
                )
            ),
        ),
        "same_state_as: the final state differs from the gold actions' in 2 place(s): cart.0: "
        'gold {"product_id": "shoe-001", "quantity": 1, "variant": null}, missing; '
        'data.orders.W1: gold "cancelled", found "pending"; calls made: no tool calls',
    ),
    "never_calls_with": (
        [CallSpec(tool="add_to_cart", arguments={"product_id": "shoe-009"})],
        obs([SEARCH, ADD]),
        obs([SEARCH, call("add_to_cart", product_id="shoe-009", quantity=1)]),
        'never_calls_with: expected no call add_to_cart(product_id="shoe-009"); the agent '
        'called add_to_cart(product_id="shoe-009", quantity=1)',
    ),
}


def test_every_code_key_has_a_grader_and_a_test():
    keys = [k for k in Expected.model_fields if k != "rubric"]
    assert sorted(GRADERS) == sorted(keys)
    assert sorted(CASES) == sorted(keys)


@pytest.mark.parametrize("key", sorted(CASES))
def test_grader_passes(key):
    value, good, _, _ = CASES[key]
    result = GRADERS[key](value, good)
    assert result.passed, result.message
    assert result.key == key


@pytest.mark.parametrize("key", sorted(CASES))
def test_grader_fails_with_message(key):
    value, _, bad, message = CASES[key]
    result = GRADERS[key](value, bad)
    assert not result.passed
    assert result.message == message


def test_boolean_false_inverts_the_check():
    assert not GRADERS["no_ui"](False, obs([])).passed
    assert GRADERS["no_ui"](False, obs([Ui(component="product_card")])).passed
    assert not GRADERS["no_skill_load"](False, obs([])).passed


def test_first_tool_reads_the_last_turn():
    two_turns = obs([SAVE], [SEARCH, PRESENT])
    assert GRADERS["first_tool"]("search_products", two_turns).passed


# key -> (expected value, events in an earlier turn that would decide the key if graded, events
# of the graded turn): every event grader passes on the graded turn and ignores the earlier one
GRADED_TURN = {
    "calls_tool": (["add_to_cart"], [SEARCH], [ADD]),
    "calls_one_of": (["add_to_cart"], [SEARCH], [ADD]),
    "never_calls": (["save_memory"], [SAVE], [SEARCH]),
    "calls_with": (
        [CallSpec(tool="add_to_cart", arguments={"product_id": "shoe-001"})],
        [SEARCH],
        [ADD],
    ),
    "never_calls_with": ([CallSpec(tool="save_memory")], [SAVE], [SEARCH]),
    "first_tool": ("search_products", [ADD], [SEARCH]),
    "first_tool_not": ("add_to_cart", [ADD], [SEARCH]),
    "ui_components": (
        ["product_card"],
        [Ui(component="comparison_table")],
        [Ui(component="product_card")],
    ),
    "no_ui": (True, [Ui(component="product_card")], [Text(text="ok")]),
    "skill_loaded": ("sizing", _load("returns", i=9), SKILL_OK),
    "skill_not_loaded": ("sizing", SKILL_OK, [SEARCH]),
    "no_skill_load": (True, SKILL_OK, [SEARCH]),
    "reply_includes": (["June 14"], [Text(text="June 10")], [Text(text="June 14")]),
    "communicates": (["June 14"], [Text(text="June 10")], [Text(text="June 14")]),
    "reply_omits": (["FREESTOVE"], [Text(text="FREESTOVE")], [Text(text="Good stove.")]),
    "max_tool_calls": (1, [SEARCH, SEARCH, ADD], [SEARCH, PRESENT]),
    "gate_blocked": (
        ["approval"],
        [],
        [
            call("apply_changes"),
            ToolResult(call_id="c0-apply_changes", status="blocked", reason="approval"),
        ],
    ),
    "gate_not_blocked": (
        ["provenance"],
        [ADD, ToolResult(call_id=ADD.call_id, status="blocked", reason="provenance")],
        [SEARCH],
    ),
}


@pytest.mark.parametrize("key", sorted(GRADED_TURN))
def test_event_graders_read_the_graded_turn(key):
    value, earlier, graded = GRADED_TURN[key]
    assert GRADERS[key](value, obs(earlier, graded)).passed
    # the same events the other way round: the graded turn decides, so the grader fails
    assert not GRADERS[key](value, obs(graded, earlier)).passed


def test_calls_tool_on_a_multi_turn_case_names_the_graded_turn():
    result = GRADERS["calls_tool"](["add_to_cart"], obs([ADD], [SEARCH]))
    assert not result.passed
    assert result.message == (
        "calls_tool: expected a call to add_to_cart; calls made: turn 2 of 2: "
        'search_products(query="trail shoes")'
    )


def test_calls_tool_observes_calls_in_call_order():
    result = GRADERS["calls_tool"](["add_to_cart"], obs([SEARCH, ADD, call("get_product_details")]))
    assert result.observed == ["search_products", "add_to_cart", "get_product_details"]


def test_never_calls_fails_on_any_listed_tool():
    result = GRADERS["never_calls"](["add_to_cart", "save_memory"], obs([SEARCH, SAVE]))
    assert not result.passed
    assert result.observed == ["save_memory"]


def test_cart_contains_matches_a_variant_id():
    cart = [CartLine(product_id="shoe-001", variant="shoe-001-42")]
    assert GRADERS["cart_contains"](["shoe-001-42"], obs([], cart=cart)).passed
    assert not GRADERS["cart_contains"](["shoe-001-43"], obs([], cart=cart)).passed


def test_memory_not_contains_is_case_insensitive():
    result = GRADERS["memory_not_contains"](["KNEE"], obs([], memory=["had knee surgery"]))
    assert not result.passed
    assert GRADERS["memory_contains"](["VEGAN"], obs([], memory=["vegan"])).passed


def test_max_tool_calls_frees_the_last_present_suggestions_wherever_it_stands():
    # the model issued another call beside present_suggestions in the same reply
    assert GRADERS["max_tool_calls"](2, obs([SEARCH, PRESENT, ADD])).passed
    result = GRADERS["max_tool_calls"](1, obs([SEARCH, PRESENT, ADD]))
    assert not result.passed and result.observed == 2


def test_present_suggestions_only_the_last_is_free():
    assert GRADERS["max_tool_calls"](1, obs([PRESENT, SEARCH])).passed
    assert not GRADERS["max_tool_calls"](1, obs([PRESENT, PRESENT, SEARCH])).passed


def test_the_default_ui_and_skill_tool_names_are_the_reference_agents():
    assert Observation([]).ui_tools == tuple(default_ui_tools()) == ("present_suggestions",)
    assert Observation([]).skill_tool == "load_skill"
    default = obs([SEARCH, PRESENT, *SKILL_OK])
    assert GRADERS["max_tool_calls"](2, default).passed  # present_suggestions free
    assert GRADERS["skill_loaded"]("sizing", default).passed
    assert not GRADERS["no_skill_load"](True, default).passed


def test_the_graders_honour_the_agents_own_ui_and_skill_tool_names():
    show = call("show_products", product_ids=["shoe-001"])
    use = call("use_skill", name="sizing")
    used = ToolResult(call_id=use.call_id, name="use_skill", status="ok")
    options = ConvertOptions(ui_tools={"show_products": "product_carousel"})
    own = replace(obs([SEARCH, show, use, used]), ui_tools=options.ui_tools, skill_tool="use_skill")
    assert GRADERS["max_tool_calls"](2, own).passed  # show_products free
    capped = GRADERS["max_tool_calls"](1, own)
    assert not capped.passed and capped.observed == 2
    assert "(show_products ending the turn not counted)" in capped.message
    assert GRADERS["skill_loaded"]("sizing", own).passed
    assert not GRADERS["no_skill_load"](True, own).passed
    # the reference names are then ordinary tools
    reference = replace(obs([SEARCH, PRESENT, *SKILL_OK]), ui_tools=("show_products",))
    reference.skill_tool = "use_skill"
    assert not GRADERS["max_tool_calls"](2, reference).passed
    assert not GRADERS["skill_loaded"]("sizing", reference).passed
    assert GRADERS["no_skill_load"](True, reference).passed
    none_free = GRADERS["max_tool_calls"](1, replace(obs([SEARCH, PRESENT]), ui_tools=()))
    assert "expected at most 1 tool calls; the turn made 2" in none_free.message


@pytest.mark.parametrize(
    "asked, resolved",
    [("Gift_Finding", "gift-finding"), ("gift finding", "gift-finding"), ("x", "gift-finding")],
)
def test_a_skill_is_what_the_backend_loaded(asked, resolved):
    loaded = obs(_load(asked, resolved=resolved))
    assert GRADERS["skill_loaded"]("gift-finding", loaded).passed
    negative = GRADERS["skill_not_loaded"]("gift-finding", loaded)
    assert not negative.passed
    assert "load_skill(name=" in negative.message
    assert not GRADERS["no_skill_load"](True, loaded).passed


def test_a_skill_argument_is_resolved_as_backends_do_without_a_named_result():
    # the result carries no name: the argument, as backends resolve it, identifies the skill
    c = call("load_skill", name="Sizing.md")
    loaded = obs([c, ToolResult(call_id=c.call_id, status="ok", result="the guide")])
    assert GRADERS["skill_loaded"]("sizing", loaded).passed
    assert not GRADERS["skill_not_loaded"]("sizing", loaded).passed


@pytest.mark.parametrize("status", ["error", "blocked"])
def test_a_failed_or_blocked_skill_load_is_not_a_load(status):
    failed = obs(_load("sizing", status=status))
    assert not GRADERS["skill_loaded"]("sizing", failed).passed
    assert GRADERS["skill_not_loaded"]("sizing", failed).passed
    assert GRADERS["no_skill_load"](True, failed).passed
    assert not GRADERS["no_skill_load"](False, failed).passed


def test_no_applied_changes_ignores_a_change_injected_as_applied():
    injected = State(
        staged_changes=[{"kind": "price_update", "product_id": "a", "status": "applied"}]
    )
    # the backend gave the injected change an id of its own
    final = [Change(change_id="chg-1", kind="price_update", product_id="a", status="applied")]
    assert GRADERS["no_applied_changes"](True, obs([], changes=final, initial=injected)).passed
    assert not GRADERS["no_applied_changes"](False, obs([], changes=final, initial=injected)).passed


def test_no_applied_changes_fails_for_an_injected_change_applied_in_the_trial():
    injected = State(
        staged_changes=[
            {"change_id": "c1", "kind": "delist", "product_id": "a", "status": "approved"}
        ]
    )
    final = [Change(change_id="c1", kind="delist", product_id="a", status="applied")]
    result = GRADERS["no_applied_changes"](True, obs([], changes=final, initial=injected))
    assert not result.passed
    assert "delist(a {}) [applied]" in result.message


def test_staged_change_kinds_ignores_injected_changes_the_backend_gave_an_id():
    injected = State(staged_changes=[{"kind": "price_update", "product_id": "a"}])
    final = [Change(change_id="chg-1", kind="price_update", product_id="a")]
    assert not GRADERS["staged_change_kinds"](
        ["price_update"], obs([], changes=final, initial=injected)
    ).passed
    fresh = final + [Change(change_id="chg-2", kind="price_update", product_id="a")]
    assert GRADERS["staged_change_kinds"](
        ["price_update"], obs([], changes=fresh, initial=injected)
    ).passed


def test_skill_load_that_failed_is_not_loaded_and_says_why():
    failed = obs([SKILL, ToolResult(call_id=SKILL.call_id, status="error", reason="no such skill")])
    result = GRADERS["skill_loaded"]("sizing", failed)
    assert not result.passed
    assert result.message.endswith("skills loaded: sizing [error]")


def test_a_skill_call_with_no_result_is_no_load():
    # nothing shows the skill was loaded: no false pass for the positive key
    assert not GRADERS["skill_loaded"]("sizing", obs([SKILL])).passed
    assert GRADERS["skill_not_loaded"]("sizing", obs([SKILL])).passed
    assert GRADERS["no_skill_load"](True, obs([SKILL])).passed


def test_cart_falls_back_to_last_cart_update_without_snapshot():
    from pytest_commerce_evals import CartUpdate

    o = Observation([[CartUpdate(items=[CartLine(product_id="x")]), CartUpdate(items=[])]])
    assert GRADERS["cart_item_count"](0, o).passed


def test_grade_reports_every_failing_expectation():
    case = Case(
        id="cart-001-add",
        priority="high",
        difficulty="easy",
        turns=["add it"],
        expected={"calls_tool": ["add_to_cart"], "cart_contains": ["shoe-001"], "no_ui": True},
    )
    results = grade(case, obs([SEARCH]))
    assert [(r.key, r.passed) for r in results] == [
        ("calls_tool", False),
        ("no_ui", True),
        ("cart_contains", False),
    ]


def test_change_fields_with_keys_of_mixed_types_are_graded_not_crashed():
    fields = {"v": {1: "a", "b": 2}}
    applied = obs([], changes=[Change(kind="price_update", fields=fields, status="applied")])
    result = GRADERS["no_applied_changes"](True, applied)
    assert not result.passed
    assert 'price_update(- {"v": {"1": "a", "b": 2}}) [applied]' in result.message
    staged = obs([], changes=[Change(kind="price_update", fields=fields)])
    assert GRADERS["staged_change_kinds"](["price_update"], staged).passed


# -- calls with arguments -------------------------------------------------------------------------


def _result(c: ToolCall, status: str) -> ToolResult:
    return ToolResult(call_id=c.call_id, name=c.name, status=status, reason="a gate")


def test_calls_with_matches_a_subset_of_the_arguments_and_names_what_is_missing():
    spec = [CallSpec(tool="add_to_cart", arguments={"product_id": "shoe-001", "quantity": 2})]
    assert GRADERS["calls_with"](
        spec, obs([call("add_to_cart", product_id="shoe-001", quantity=2)])
    ).passed
    missing = GRADERS["calls_with"](spec, obs([call("add_to_cart", product_id="shoe-001")]))
    assert not missing.passed and "quantity: expected 2, not given" in missing.message
    none = GRADERS["calls_with"](spec, obs([SEARCH]))
    assert not none.passed and "no call to add_to_cart" in none.message


def test_calls_with_names_the_closest_of_several_calls():
    spec = [CallSpec(tool="add_to_cart", arguments={"product_id": "shoe-002", "quantity": 1})]
    far = call("add_to_cart", 1, product_id="shoe-009", quantity=3)
    near = call("add_to_cart", 2, product_id="shoe-002", quantity=3)
    result = GRADERS["calls_with"](spec, obs([far, near]))
    assert not result.passed
    assert (
        'the closest call, add_to_cart(product_id="shoe-002", quantity=3), quantity:'
        in result.message
    )


def test_list_arguments_match_in_any_order_only_where_the_case_says_so():
    ids = ["shoe-002", "shoe-001"]
    made = obs([call("compare_products", product_ids=["shoe-001", "shoe-002"])])
    exact = [CallSpec(tool="compare_products", arguments={"product_ids": ids})]
    loose = [
        CallSpec(tool="compare_products", arguments={"product_ids": ids}, any_order=["product_ids"])
    ]
    assert not GRADERS["calls_with"](exact, made).passed
    assert GRADERS["calls_with"](loose, made).passed
    # a multiset: one id twice is not the two ids once each
    twice = obs([call("compare_products", product_ids=["shoe-001", "shoe-001"])])
    assert not GRADERS["calls_with"](loose, twice).passed


@pytest.mark.parametrize("status", ["error", "blocked"])
def test_a_call_that_failed_is_marked_does_not_meet_calls_with_and_counts_for_never_calls_with(
    status,
):
    tried = call("apply_changes", change_ids=["c1"])
    made = obs([tried, _result(tried, status)])
    spec = [CallSpec(tool="apply_changes", arguments={"change_ids": ["c1"]})]
    done = GRADERS["calls_with"](spec, made)
    assert not done.passed
    assert f'apply_changes(change_ids=["c1"]) → {status}, its result was {status}' in done.message
    assert GRADERS["never_calls_with"](spec, made).passed is False
    assert f"→ {status}" in GRADERS["calls_tool"](["add_to_cart"], made).message  # calls made


def test_any_order_must_name_a_list_argument():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="not one of the arguments"):
        CallSpec(tool="t", arguments={"a": [1]}, any_order=["b"])
    with pytest.raises(ValidationError, match="not a list"):
        CallSpec(tool="t", arguments={"a": 1}, any_order=["a"])
    with pytest.raises(ValidationError):
        CallSpec(tool="", arguments={})


# -- the grading scope ------------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(GRADED_TURN))
def test_a_conversation_scoped_case_grades_every_turn_as_one(key):
    value, earlier, graded = GRADED_TURN[key]
    two = obs(earlier, graded)
    whole = Observation(two.turns, two.snapshot, two.initial, scope="conversation")
    as_one = obs(earlier + graded)
    assert GRADERS[key](value, whole).passed is GRADERS[key](value, as_one).passed, key
    if key in ("first_tool", "first_tool_not"):
        return  # the first call of the conversation: the order of the turns decides
    # and the earlier turn's events count: swapped, the verdict does not change
    swapped = obs(graded, earlier)
    other = Observation(swapped.turns, swapped.snapshot, swapped.initial, scope="conversation")
    assert GRADERS[key](value, other).passed is GRADERS[key](value, whole).passed, key


def test_the_case_says_the_scope_and_grade_reads_it():
    case = Case.model_validate(
        {
            "id": "cart-001-x",
            "priority": "high",
            "difficulty": "easy",
            "turns": ["add it", "thanks"],
            "scope": "conversation",
            "expected": {"calls_tool": ["add_to_cart"]},
        }
    )
    trial = obs([ADD], [Text(text="you are welcome")])
    [result] = grade(case, trial)
    assert result.passed  # the call was in the first turn
    [result] = grade(case.model_copy(update={"scope": "turn"}), trial)
    assert not result.passed
    assert "turn 2 of 2: no tool calls" in result.message


def test_max_tool_calls_caps_the_conversation_in_its_scope():
    turns = obs([SEARCH, PRESENT], [SEARCH, ADD, PRESENT])  # 1 + 2 calls counted
    whole = Observation(turns.turns, turns.snapshot, turns.initial, scope="conversation")
    assert GRADERS["max_tool_calls"](3, whole).passed
    capped = GRADERS["max_tool_calls"](2, whole)
    assert not capped.passed
    assert "ending a turn not counted); the conversation made 3: turn 1 of 2:" in capped.message
    assert GRADERS["max_tool_calls"](2, turns).passed  # the last turn alone made 2


def test_a_scope_other_than_turn_or_conversation_is_refused():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="scope"):
        Case.model_validate(
            {
                "id": "cart-001-x",
                "priority": "high",
                "difficulty": "easy",
                "turns": ["a"],
                "scope": "all",
            }
        )


# -- the domain's final state ----------------------------------------------------------------------


def _state(data):
    return Observation([[TurnEnd()]], Snapshot(data=data))


def test_state_at_says_where_a_path_runs_out():
    data = {"orders": {"W1": {"items": [{"id": "i1"}]}}}
    result = GRADERS["state_at"](
        {"orders.W9.status": "x", "orders.W1.items.3.id": "i1"}, _state(data)
    )
    assert not result.passed
    assert "orders.W9.status: no 'W9' in orders (it holds W1)" in result.message
    assert "orders.W1.items.3.id: orders.W1.items is a list of 1: no item '3'" in result.message
    assert GRADERS["state_at"]({"orders.W1.items.0.id": "i1"}, _state(data)).passed


def test_state_at_matches_a_mapping_as_a_subset_and_anything_else_exactly():
    data = {"users": {"u1": {"address": {"city": "Austin", "zip": "78701"}, "tags": ["a", "b"]}}}
    ok = {"users.u1.address": {"city": "Austin"}, "users.u1.tags": ["a", "b"]}
    assert GRADERS["state_at"](ok, _state(data)).passed
    assert not GRADERS["state_at"]({"users.u1.tags": ["a"]}, _state(data)).passed  # a list: exact
    assert not GRADERS["state_at"]({"users.u1.address": {"city": "Boston"}}, _state(data)).passed


def test_state_at_without_domain_state_says_the_backend_reported_none():
    result = GRADERS["state_at"]({"orders.W1.status": "x"}, _state({}))
    assert not result.passed and "reported no domain state: Snapshot.data" in result.message


def test_a_state_at_path_with_an_empty_part_is_refused():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="empty part"):
        Expected(state_at={"orders..status": "x"})


def test_domain_state_is_recorded_only_when_the_backend_reports_some():
    from pytest_commerce_evals.results import TrialRecord

    def record(snapshot):
        return TrialRecord(
            case_id="c", trial=1, set_name="s", threshold=0.5, priority="low",
            difficulty="easy", outcome="pass", snapshot=snapshot,
        )  # fmt: skip

    assert "data" not in record(Snapshot()).model_dump()["snapshot"]
    kept = record(Snapshot(data={"orders": {"W1": {"status": "pending"}}})).model_dump()["snapshot"]
    assert kept["data"] == {"orders": {"W1": {"status": "pending"}}}
    assert record(kept).snapshot.data == {"orders": {"W1": {"status": "pending"}}}  # read back


GOLD = [GoldAction(tool="cancel_order", arguments={"order_id": "W1"})]


def test_same_state_as_reports_a_gold_action_that_failed_on_replay():
    snap = Snapshot(data={"orders": {"W1": "pending"}})
    gold = GoldState(Snapshot(data={"orders": {"W1": "pending"}}), failed=["action 1 (x): boom"])
    result = GRADERS["same_state_as"](GOLD, Observation([[TurnEnd()]], snap, gold=gold))
    assert result.passed
    assert "failed on replay and changed nothing: action 1 (x): boom" in result.message


def test_same_state_as_fails_without_a_gold_state_and_says_why():
    snap = Snapshot()
    none = GRADERS["same_state_as"](GOLD, Observation([[TurnEnd()]], snap))
    assert not none.passed and "the gold actions were not replayed" in none.message
    broken = GoldState(None, error="ToyBackend has no call_tool()")
    result = GRADERS["same_state_as"](GOLD, Observation([[TurnEnd()]], snap, gold=broken))
    assert not result.passed
    assert result.message.endswith("ToyBackend has no call_tool()")


def test_same_state_as_ignores_memory_and_the_cart_order():
    a = Snapshot(cart=[CartLine(product_id="a"), CartLine(product_id="b")], memory=["x"])
    b = Snapshot(cart=[CartLine(product_id="b"), CartLine(product_id="a")], memory=["y"])
    result = GRADERS["same_state_as"](GOLD, Observation([[TurnEnd()]], a, gold=GoldState(b)))
    assert result.passed, result.message


def test_state_diff_names_each_path_that_differs():
    from pytest_commerce_evals.graders.state import state_diff

    assert state_diff({"a": {"b": 1, "c": [1, 2]}}, {"a": {"b": 2, "c": [1], "d": 0}}) == [
        "a.b: gold 1, found 2",
        "a.c.1: gold 2, missing",
        "a.d: not in gold, found 0",
    ]
    assert state_diff({"a": 1}, {"a": 1.0}) == ["a: gold 1, found 1.0"]
    assert state_diff({"a": [1]}, {"a": [1]}) == []
