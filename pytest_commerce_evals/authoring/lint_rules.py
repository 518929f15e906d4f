"""The lint's per-case rules on IDs and pairs: fixture IDs and skills exist, an assertion has
its negative in the scenario, a refusal its served case, an approval its refusal or wait, each
rubric dimension its PASS and FAIL, a sensitive turn its memory assertion and a preference case a
search that returns both products. Each rule reports through the `add` the lint gives it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..cases.case import Case
from .lint_types import FixtureIndex

__all__ = ["ID_ARGUMENTS", "READ_TOOLS", "SENSITIVE_TAGS", "SENSITIVE_WORDS"]

READ_TOOLS = {"search_products", "get_product_details", "get_order", "list_orders"}
ID_ARGUMENTS = {"product_id", "order_id"}
"""Arguments of `calls_with`, `never_calls_with` and `same_state_as` that name a fixture."""
SENSITIVE_TAGS = {"health", "errand", "hostile"}
SENSITIVE_WORDS = re.compile(
    r"\b(surgery|diagnos\w*|pregnan\w*|medication|prescri\w*|therapy|chemo\w*|diabet\w*|"
    r"depress\w*|anxiety|illness|injur\w*|allerg\w* reaction|idiot|stupid|hate you|"
    r"just this once|one-off|for my (?:neighbou?r|colleague|boss)'s)\b",
    re.IGNORECASE,
)


def _tag_values(case: Case, prefix: str) -> list[str]:
    return [t.split(":", 1)[1].strip() for t in case.tags if t.startswith(prefix + ":")]


def _ids(case: Case, index: FixtureIndex, add) -> None:
    if not index.ids:
        return
    known = index.ids | set(index.poisoned) | index.benign_eval_only
    named: list[tuple[str, tuple]] = []
    named += [(p, ("state", "seen_products")) for p in case.state.seen_products]
    named += [(line.product_id, ("state", "cart")) for line in case.state.cart]
    named += [
        (c.product_id, ("state", "staged_changes"))
        for c in case.state.staged_changes
        if c.product_id
    ]
    for key in ("cart_contains", "cart_not_contains"):
        named += [(p, ("expected", key)) for p in getattr(case.expected, key) or []]
    for prefix in ("target", "favours", "excludes"):
        named += [(p, ("tags",)) for p in _tag_values(case, prefix)]
    for key in ("calls_with", "never_calls_with", "same_state_as"):
        for n, spec in enumerate(getattr(case.expected, key) or []):
            named += [
                (value, ("expected", key, n))
                for arg, value in spec.arguments.items()
                if arg in ID_ARGUMENTS and isinstance(value, str)
            ]
    for product_id, loc in named:
        if product_id not in known:
            add(
                "fixture-ids",
                f"{product_id!r} is not a fixture ID",
                "use a real ID from fixtures/ or poisoned_fixtures/ (search the catalog)",
                *loc,
            )
    if index.skills:
        for key in ("skill_loaded", "skill_not_loaded"):
            skill = getattr(case.expected, key)
            if skill and skill not in index.skills:
                add(
                    "fixture-ids",
                    f"skill {skill!r} is not a fixture skill "
                    f"(known: {', '.join(sorted(index.skills))})",
                    "name an existing skill",
                    "expected",
                    key,
                )


def _pairing(case: Case, by_scenario: dict[str, list[Case]], add) -> None:
    e = case.expected
    wants: list[tuple[str, str, Callable[[Case], bool], str]] = []
    if e.ui_components:
        wants.append(
            (
                "ui_components",
                f"component {', '.join(e.ui_components)}",
                lambda c: c.expected.no_ui is True,
                "no_ui: true",
            )
        )
    if e.skill_loaded:
        skill = e.skill_loaded
        wants.append(
            (
                "skill_loaded",
                f"skill load {skill!r}",
                lambda c: c.expected.skill_not_loaded == skill or c.expected.no_skill_load is True,
                f"skill_not_loaded: {skill} (or no_skill_load: true)",
            )
        )
    if e.gate_blocked:
        gates = set(e.gate_blocked)
        wants.append(
            (
                "gate_blocked",
                f"gate {', '.join(sorted(gates))}",
                lambda c: gates <= set(c.expected.gate_not_blocked or []),
                f"gate_not_blocked: [{', '.join(sorted(gates))}]",
            )
        )
    if e.memory_contains:
        wants.append(
            (
                "memory_contains",
                "memory write",
                lambda c: (
                    bool(c.expected.memory_not_contains)
                    or "save_memory" in (c.expected.never_calls or [])
                ),
                "memory_not_contains or never_calls: [save_memory]",
            )
        )
    writes = sorted(
        {spec.tool for spec in e.calls_with or []} - READ_TOOLS
        | {action.tool for action in e.same_state_as or []} - READ_TOOLS
    )
    if writes:
        key = "same_state_as" if e.same_state_as else "calls_with"
        wants.append(
            (
                key,
                f"write call {', '.join(writes)}",
                lambda c: bool(
                    set(writes)
                    & (
                        set(c.expected.never_calls or [])
                        | {spec.tool for spec in c.expected.never_calls_with or []}
                    )
                ),
                f"never_calls or never_calls_with naming {' or '.join(writes)}",
            )
        )
    if "disclosure" in case.tags:
        wants.append(
            ("reply_includes", "disclosure", lambda c: bool(c.expected.reply_omits), "reply_omits")
        )
    for key, what, is_negative, negative in wants:
        if case.scenario is None:
            add(
                "pairing",
                f"asserts a {what} but names no scenario",
                "add a scenario:<name> tag and a case in it asserting the opposite",
                "expected",
                key,
            )
            continue
        others = [c for c in by_scenario[case.scenario] if c.id != case.id]
        if not any(is_negative(c) for c in others):
            add(
                "pairing",
                f"asserts a {what}; no case in scenario {case.scenario!r} asserts it "
                "did not happen",
                f"add a case in scenario:{case.scenario} with {negative}",
                "expected",
                key,
            )


def _refusal(case: Case, by_scenario: dict[str, list[Case]], add) -> None:
    if "refusal" not in case.tags:
        return
    others = by_scenario.get(case.scenario, []) if case.scenario else []
    if not any("served" in c.tags for c in others if c.id != case.id):
        add(
            "refusal-pair",
            "a refusal case has no served counterpart in its scenario",
            "add a case tagged served in the same scenario:<name> that the agent should help with",
            "tags",
        )


def _approval_pair(case: Case, by_scenario: dict[str, list[Case]], add) -> None:
    approved = sorted(
        tool
        for tool, decision in (case.approvals or {}).items()
        if tool != "default" and decision == "approve"
    )
    if not approved:
        return
    in_scenario = by_scenario.get(case.scenario, []) if case.scenario else []
    others = [c for c in in_scenario if c.id != case.id]
    for tool in approved:
        if any(
            c.approvals is not None and c.approval_for(tool).decision != "approve" for c in others
        ):
            continue
        where = f"scenario {case.scenario!r}" if case.scenario else "its scenario (it names none)"
        add(
            "approval-pair",
            f"the person approves {tool}; no case in {where} has them refuse it or leave it "
            "waiting",
            f"add a case in the same scenario:<name> with approvals: {{{tool}: refuse}} (or "
            f"{{refuse: <their words>}}, or wait) asserting what the agent does then",
            "approvals",
            tool,
        )


def _rubric(case: Case, add) -> None:
    from ..rubrics import UnknownDimension, resolve_dimensions

    try:
        dimensions = resolve_dimensions(case.expected.rubric_dimensions())
    except UnknownDimension as exc:
        add(
            "rubric-pass-fail",
            str(exc),
            "name a standard dimension (rubrics.py) or write the PASS and FAIL conditions",
            "expected",
            "rubric",
        )
        return
    for name, text in dimensions.items():
        low = text.lower()
        missing = [w for w in ("pass if", "fail if") if w not in low]
        if missing:
            add(
                "rubric-pass-fail",
                f"rubric dimension {name!r} has no {' and no '.join(missing).upper()} condition",
                "write 'PASS if <condition>. FAIL if <incompatible condition>.' naming the "
                "fixture fact",
                "expected",
                "rubric",
            )


def _customer_texts(case: Case) -> list[str]:
    """What the customer says or is told to say: the turns and a simulated customer's brief."""
    texts = list(case.turns)
    if case.user is not None:
        texts += [t for t in (case.user.opening, case.user.instructions, case.user.knows) if t]
    return texts


def _sensitive(case: Case, add) -> None:
    tagged = SENSITIVE_TAGS & set(case.tags)
    worded = [t for t in _customer_texts(case) if SENSITIVE_WORDS.search(t)]
    if not tagged and not worded:
        return
    e = case.expected
    if e.memory_not_contains or "save_memory" in (e.never_calls or []):
        return
    if tagged:
        why = f"tagged {', '.join(sorted(tagged))}"
    else:
        found = SENSITIVE_WORDS.search(worded[0])
        assert found is not None  # worded holds only the turns it matches
        why = f"turn mentions {found.group(0)!r}"
    add(
        "sensitive-memory",
        f"{why} but does not assert the final memory state",
        "add memory_not_contains: [<the sensitive words>] or never_calls: [save_memory]",
        "expected",
    )


def _preference(case: Case, index: FixtureIndex, add) -> None:
    if "preference" not in case.tags:
        return
    favours, excludes, queries = (
        _tag_values(case, "favours"),
        _tag_values(case, "excludes"),
        _tag_values(case, "search"),
    )
    if not (favours and excludes and queries):
        add(
            "preference-search",
            "a preference case must name favours:<id>, excludes:<id> and search:<query>",
            "run the search, then tag the product the fact favours and the one it rules out",
            "tags",
        )
        return
    if index.search is None:
        add(
            "preference-search",
            "no backend search is available to verify the products",
            "implement pytest_commerce_evals_fixture_index with a search function",
            "tags",
        )
        return
    results = set()
    for query in queries:
        results |= set(index.search(query))
    missing = [p for p in favours + excludes if p not in results]
    if missing:
        add(
            "preference-search",
            f"search {queries!r} does not return {', '.join(missing)}",
            "change the query (or the products) so the results hold both the favoured and the "
            "excluded product",
            "tags",
        )
