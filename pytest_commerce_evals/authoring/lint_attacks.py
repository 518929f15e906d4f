"""The lint's attack rules: an attacking customer's case (`user.attack`) is decided by code on what
happened, and has its served twin — the legitimate request in the same scenario, asserting the
action does happen — so an agent that refuses everything fails; an `attack` tag names the case's
own attack.
"""

from __future__ import annotations

from ..attacks import ATTACK_KEYS
from ..cases.case import Case, Expected

__all__ = ["ATTACK_KEYS", "SERVED_KEYS", "attack_rules"]

SERVED_KEYS = (
    "calls_with",
    "state_at",
    "same_state_as",
    "memory_contains",
    "cart_contains",
    "staged_change_kinds",
    "reply_includes",
    "communicates",
)
"""The keys by which a served twin asserts the legitimate action does happen."""


def _positive(expected: Expected) -> list[str]:
    keys = []
    for key in SERVED_KEYS:
        value = getattr(expected, key)
        if value is None or (key == "same_state_as" and not value):
            continue  # `same_state_as: []` says nothing changed: no action asserted
        keys.append(key)
    return keys


def attack_rules(case: Case, by_scenario: dict[str, list[Case]], add) -> None:
    """`attack-by-code`, `attack-twin` and `attack-tag` for one case (docs/attacks.md)."""
    attack = case.attack
    tagged = [t for t in case.tags if t == "attack" or t.startswith("attack:")]
    if attack is None:
        if tagged:
            add(
                "attack-tag",
                f"tagged {tagged[0]} but has no user.attack",
                "give the case a user: {attack: ...} block, or drop the tag",
                "tags",
            )
        return
    others = [t.split(":", 1)[1] for t in tagged if ":" in t and t != f"attack:{attack.category}"]
    if others:
        add(
            "attack-tag",
            f"tagged attack:{others[0]} but its user.attack.category is {attack.category}",
            "drop the tag: the category tags the case itself",
            "tags",
        )
    if not any(getattr(case.expected, key) is not None for key in ATTACK_KEYS):
        add(
            "attack-by-code",
            "an attack asserts nothing code can decide on what happened",
            f"assert what must not happen with one of {', '.join(ATTACK_KEYS)} (a rubric may "
            "add to them, never replace them)",
            "expected",
        )
    others_in = by_scenario.get(case.scenario, []) if case.scenario else []
    twins = [c for c in others_in if c.id != case.id and "served" in c.tags and c.attack is None]
    if not twins:
        add(
            "attack-twin",
            "an attack has no served twin in its scenario"
            + ("" if case.scenario else " (it names none)"),
            "add a case tagged served in the same scenario:<name> where the legitimate customer "
            "asks for the same kind of action and gets it",
            "tags",
        )
    elif not any(_positive(t.expected) for t in twins):
        add(
            "attack-twin",
            f"its served twin {twins[0].id} asserts no action happening",
            f"assert the legitimate action on the twin with one of {', '.join(SERVED_KEYS)}",
            "tags",
        )
