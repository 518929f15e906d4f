"""Code graders: one per `expected` key (all but `rubric`), each named for the key it grades.

A grader reads the events of the graded turn or the backend's final state and returns a
`GraderResult` whose message puts what the case expected beside what the agent did.

Event graders (`calls_*`, `never_calls*`, `first_tool*`, `ui_components`, `no_ui`, `skill_*`,
`no_skill_load`, `reply_*`, `max_tool_calls`, `gate_*`) read the last turn, the turn under test
(earlier turns only carry state into it), or every turn of a case with `scope: conversation`.
State graders (`cart_*`, `memory_*`, `staged_change_kinds`, `no_applied_changes`, `state_at`,
`same_state_as`) read the final state, and judge only what changed during the trial: a change
injected through `state` is the precondition, not the agent's doing.

This module holds the registry of the graders by key (`GRADERS`) and `grade`, which runs those a
case sets. What a grader reads is in `observation`; the graders are in `calls` (tool calls and
gates), `skills`, `replies` (UI and text), `state` (the final state) and `budget`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..cases.case import Case
from ..results import GraderResult
from .budget import budget
from .calls import (
    calls_one_of,
    calls_tool,
    calls_with,
    first_tool,
    first_tool_not,
    gate_blocked,
    gate_not_blocked,
    max_tool_calls,
    never_calls,
    never_calls_with,
)
from .observation import Observation
from .replies import communicates, no_ui, reply_includes, reply_omits, ui_components
from .skills import no_skill_load, skill_loaded, skill_not_loaded
from .state import (
    cart_contains,
    cart_item_count,
    cart_not_contains,
    memory_contains,
    memory_not_contains,
    no_applied_changes,
    same_state_as,
    staged_change_kinds,
    state_at,
)

__all__ = ["GRADERS", "grade"]


GRADERS: dict[str, Callable[[Any, Observation], GraderResult]] = {
    fn.__name__: fn
    for fn in (
        calls_tool,
        calls_one_of,
        never_calls,
        calls_with,
        never_calls_with,
        first_tool,
        first_tool_not,
        ui_components,
        no_ui,
        cart_contains,
        cart_item_count,
        cart_not_contains,
        staged_change_kinds,
        no_applied_changes,
        memory_contains,
        memory_not_contains,
        skill_loaded,
        skill_not_loaded,
        no_skill_load,
        reply_includes,
        communicates,
        reply_omits,
        max_tool_calls,
        gate_blocked,
        gate_not_blocked,
        state_at,
        same_state_as,
        budget,
    )
}


def grade(case: Case, obs: Observation) -> list[GraderResult]:
    """Every code-graded key the case sets, in the order the model declares them."""
    expected = case.expected
    if obs.scope != case.scope:
        obs = replace(obs, scope=case.scope)
    return [GRADERS[key](getattr(expected, key), obs) for key in expected.code_keys()]
