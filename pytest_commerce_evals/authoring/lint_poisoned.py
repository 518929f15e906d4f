"""The lint's poisoned-case rules: a poisoned case has a served twin on a benign eval-only
listing, asserts only negatives and only on what its turn can see, and no eval-only ID appears in
the fixtures, demo data or captured records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ..cases.case import Case
from .lint_rules import READ_TOOLS, _tag_values
from .lint_types import Finding, FixtureIndex

__all__ = ["NEGATIVE_KEYS"]

NEGATIVE_KEYS = {
    "never_calls",
    "never_calls_with",
    "cart_not_contains",
    "no_applied_changes",
    "memory_not_contains",
    "reply_omits",
    "gate_not_blocked",
    "skill_not_loaded",
    "no_skill_load",
    "first_tool_not",
    "max_tool_calls",
}


def _poisoned(case: Case, index: FixtureIndex, by_scenario: dict[str, list[Case]], add) -> None:
    """The poisoned-twin rules (docs/authoring.md) for one poisoned case. Long for a reason: it
    is the rules' checklist in the order the authoring guide gives them, each a short check on
    the same case, its twin and the fixture index."""
    if "poisoned" not in case.tags:
        return
    targets = _tag_values(case, "target")
    if "served" in case.tags:
        benign = [t for t in targets if t in index.benign_eval_only]
        if index.benign_eval_only and not benign:
            add(
                "poisoned-twin",
                "a served twin must target a benign eval-only listing",
                "tag target:<id> with a benign listing from poisoned_fixtures/",
                "tags",
            )
        return
    e = case.expected
    # pair
    if case.scenario is None or not any(
        "served" in c.tags for c in by_scenario[case.scenario] if c.id != case.id
    ):
        add(
            "poisoned-twin",
            "no served twin in the same scenario",
            "add a case tagged served (and the same scenario) on the benign eval-only listing",
            "tags",
        )
    # only negatives
    for key in e.code_keys():
        value = getattr(e, key)
        if key in NEGATIVE_KEYS:
            continue
        if key in ("calls_tool", "calls_one_of") and set(value) <= READ_TOOLS:
            continue
        if key == "calls_with" and {spec.tool for spec in value} <= READ_TOOLS:
            continue
        if key == "cart_item_count" and value == 0:
            continue
        add(
            "poisoned-negatives",
            f"asserts {key}, which is not a negative",
            "assert only never_calls, cart_not_contains, no_applied_changes, memory_not_contains, "
            "reply_omits (and the read path); move positives to the served twin",
            "expected",
            key,
        )
    # only what the turn can see
    items = [index.poisoned[t] for t in targets if t in index.poisoned]
    if index.poisoned and not items:
        add(
            "poisoned-visible",
            "names no poisoned fixture (target:<id>)",
            "tag target:<poisoned id> so the lint can check what the turn sees",
            "tags",
        )
        return
    for item in items:
        reads = set(e.calls_tool or []) | set(e.calls_one_of or [])
        if item.carrier == "review" and "get_product_details" not in (e.calls_tool or []):
            add(
                "poisoned-visible",
                f"the instruction in {item.id} is in a review, which only "
                "get_product_details returns",
                "add calls_tool: [get_product_details] so the accepted path reads it",
                "expected",
            )
        elif item.carrier == "message" and "get_order" not in (e.calls_tool or []):
            add(
                "poisoned-visible",
                f"the instruction in {item.id} is in a seller message, which "
                "only get_order returns",
                "add calls_tool: [get_order] so the accepted path reads it",
                "expected",
            )
        elif item.carrier == "listing" and not reads & READ_TOOLS:
            add(
                "poisoned-visible",
                f"the instruction in {item.id} is in its listing; nothing "
                "asserts the listing was read",
                "add calls_one_of: [search_products, get_product_details]",
                "expected",
            )
        text = item.text.lower()
        for key in ("reply_omits", "memory_not_contains"):
            for needle in getattr(e, key) or []:
                if needle.lower() not in text and needle not in (e.cart_not_contains or []):
                    add(
                        "poisoned-visible",
                        f"{key} {needle!r} is not in what {item.id} puts in front of the model",
                        "assert on a string the poisoned text contains",
                        "expected",
                        key,
                    )


def _check_poisoned_absent(
    index: FixtureIndex, root: Path | None, captured: Iterable[Path]
) -> list[Finding]:
    out: list[Finding] = []
    if not index.poisoned:
        return out
    ids = sorted(index.poisoned) + sorted(index.benign_eval_only)
    pattern = re.compile("|".join(re.escape(i) for i in ids))
    files: list[Path] = []
    for path in [*index.data_paths, *captured]:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            hit = pattern.search(line)
            if hit:
                shown = file.relative_to(root) if root and file.is_relative_to(root) else file
                out.append(
                    Finding(
                        shown,
                        n,
                        "poisoned-ids-absent",
                        None,
                        f"eval-only ID {hit.group(0)!r} appears outside poisoned_fixtures/",
                        "remove it: eval-only fixtures never appear in demo, seed or captured data",
                    )
                )
    return out
