"""τ²-bench tasks as cases: the user scenario becomes the `user:` block, the gold actions the
final-state replay (`same_state_as`), `communicate_info` the `communicates` key (τ²'s rule: case
and commas ignored), `nl_assertions` rubric dimensions. Only the checks the task's `reward_basis`
lists decide (`DB` the final state, `COMMUNICATE` what must be said, `NL_ASSERTION` the rubric);
the others are kept in the case's notes, reported, not graded. A task whose reward basis lists a
check this does not grade (`ENV_ASSERTION`, `ACTION`: telecom's) is refused by name
(`UngradedTask`): its case would have nothing of τ²'s reward to grade, and always pass.

    case = case_of(task, domain="retail")      # a mapping, as a case file holds it
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..errors import TaskError, UngradedTask

__all__ = [
    "GRADED_BASES",
    "TAU2_COMMIT",
    "TaskError",
    "UngradedTask",
    "case_id",
    "case_of",
    "ungraded_bases",
    "ungraded_reason",
    "ungraded_refusal",
]

TAU2_COMMIT = "a2c024725189473d2d7cea3a5cfdbcc67478e41f"
"""The τ²-bench commit whose task and database format this bridge was written against."""

MAX_TURNS = 30
"""Customer messages a converted task allows (τ² stops a simulation at 200 steps, tool calls
included; its retail conversations run to about 20 customer messages)."""

MAX_SLUG = 60
"""Characters of a task's id kept in its case id (and so its file name)."""

GRADED_BASES = ("DB", "COMMUNICATE", "NL_ASSERTION")
"""The reward bases a case grades: the final state, what must be said, the rubric."""
REWARD_BASES = {*GRADED_BASES, "ACTION", "ENV_ASSERTION"}
"""The reward bases τ² knows: `ACTION` (the gold calls made) and `ENV_ASSERTION` (assertions on
the environment, telecom's) are not graded here."""


def ungraded_bases(task: Any) -> list[str]:
    """The bases of a task's `reward_basis` that are τ²'s but not graded here (`ACTION`,
    `ENV_ASSERTION`), in its order; [] for a task that lists none or cannot be read."""
    criteria = task.get("evaluation_criteria") if isinstance(task, dict) else None
    basis = criteria.get("reward_basis") if isinstance(criteria, dict) else None
    if not isinstance(basis, list):
        return []
    return [b for b in basis if isinstance(b, str) and b in REWARD_BASES - set(GRADED_BASES)]


def ungraded_reason(task: Any, domain: str) -> str:
    """The sentence that refuses a task `ungraded_bases` finds."""
    basis = task["evaluation_criteria"]["reward_basis"]
    return (
        f"τ²-bench {domain[:40]} task {str(task.get('id'))[:80]!r}: its reward_basis "
        f"{str(basis)[:120]} lists {', '.join(ungraded_bases(task))}, which this does not grade "
        f"(it grades {', '.join(GRADED_BASES)}): its case would pass whatever the agent did"
    )


def ungraded_refusal(tasks: Iterable[Any], domain: str) -> str | None:
    """One line refusing the tasks whose reward basis lists a check not graded here: the first
    named in full, then how many more and the first ids; None when there are none."""
    found = [t for t in tasks if ungraded_bases(t)]
    if not found:
        return None
    text = ungraded_reason(found[0], domain)
    if len(found) > 1:
        ids = ", ".join(repr(str(t.get("id"))[:40]) for t in found[1:6])
        text += f"; so do {len(found) - 1} more task(s): {ids}" + (", …" if len(found) > 6 else "")
    return text


def case_id(task_id: Any, domain: str) -> str:
    """`tau2_<domain>-<nnn>-task-<id>`: the three digits are the task's number (τ²'s retail and
    airline ids are numbers), the behaviour its id as written."""
    text = str(task_id)
    number = int(text) if text.isascii() and text.isdigit() else 0
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:MAX_SLUG].strip("-") or "x"
    return f"tau2_{domain}-{number % 1000:03d}-task-{slug}"


def _listed(criteria: dict[str, Any], key: str, where: str) -> list[Any]:
    value = criteria.get(key) or []
    if not isinstance(value, list):
        raise TaskError(f"{where}: evaluation_criteria.{key} is {type(value).__name__}, not a list")
    return value


def _brief(instructions: Any, persona: Any) -> tuple[str, str | None, str | None]:
    if isinstance(instructions, str):
        return instructions, None, None
    if not isinstance(instructions, dict):
        raise TaskError(f"user_scenario.instructions is {type(instructions).__name__}")
    parts = [
        str(instructions.get(key) or "").strip() for key in ("reason_for_call", "task_instructions")
    ]
    if persona:
        parts.insert(0, str(persona).strip())
    text = "\n\n".join(p for p in parts if p and p != ".")
    known = str(instructions.get("known_info") or "").strip() or None
    unknown = str(instructions.get("unknown_info") or "").strip() or None
    return text, known, unknown


def case_of(task: Any, *, domain: str, commit: str | None = None) -> dict[str, Any]:
    """The case of one τ² task, as a mapping (`TaskError` for a task it cannot read, whatever
    is wrong with it: a task that is not a mapping, an action without a name, arguments that
    are not a mapping, an unknown reward basis, values nested past Python's limit). `commit`:
    the checkout's τ²-bench commit the task was read from, kept in the case's notes."""
    if not isinstance(task, dict):
        raise TaskError(f"a task is {type(task).__name__}, not a mapping: {str(task)[:80]!r}")
    try:
        return _case_of(task, domain=domain, commit=commit)
    except TaskError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise TaskError(
            f"task {str(task.get('id'))[:80]!r}: {type(exc).__name__}: {str(exc)[:200]}"
        ) from None


def _case_of(task: dict[str, Any], *, domain: str, commit: str | None) -> dict[str, Any]:
    where = f"task {str(task.get('id'))[:80]!r}"
    try:
        scenario = task["user_scenario"]
        criteria = task.get("evaluation_criteria") or {}
    except (KeyError, TypeError):
        raise TaskError(f"{where}: no user_scenario") from None
    instructions, known, unknown = _brief(scenario.get("instructions"), scenario.get("persona"))
    if not instructions:
        raise TaskError(f"{where}: user_scenario.instructions is empty")
    if not isinstance(scenario, dict) or not isinstance(criteria, dict):
        raise TaskError(f"{where}: user_scenario and evaluation_criteria are mappings")
    basis = criteria.get("reward_basis") or ["DB", "COMMUNICATE"]
    if not isinstance(basis, list) or not all(isinstance(b, str) for b in basis):
        raise TaskError(f"{where}: reward_basis is {str(basis)[:40]!r}, not a list of names")
    unknown_bases = sorted(set(basis) - REWARD_BASES)
    if unknown_bases:
        raise TaskError(f"{where}: reward_basis {unknown_bases} is not one this bridge reads")
    if ungraded_bases(task):
        raise UngradedTask(ungraded_reason(task, domain))
    user: dict[str, Any] = {"instructions": instructions, "max_turns": MAX_TURNS}
    if known:
        user["knows"] = known
    if unknown:
        user["unknown"] = unknown
    expected: dict[str, Any] = {}
    reported: list[str] = []
    actions = []
    for n, a in enumerate(_listed(criteria, "actions", where), 1):
        if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not a["name"]:
            raise TaskError(f"{where}: gold action {n} has no tool name")
        arguments = a.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise TaskError(f"{where}: gold action {n} ({a['name']}): arguments are not a mapping")
        if a.get("requestor", "assistant") == "assistant":
            actions.append({"tool": a["name"], "arguments": dict(arguments)})
    if "DB" in basis:
        expected["same_state_as"] = actions
    elif actions:
        reported.append(f"gold actions (not in reward_basis): {len(actions)}")
    info = [str(i) for i in _listed(criteria, "communicate_info", where) if str(i).strip()]
    if info and "COMMUNICATE" in basis:
        expected["communicates"] = info
    elif info:
        reported.append(f"communicate_info (not in reward_basis): {info}")
    assertions = [str(a) for a in _listed(criteria, "nl_assertions", where) if str(a).strip()]
    if assertions and "NL_ASSERTION" in basis:
        expected["rubric"] = {f"nl_assertion_{n + 1}": text for n, text in enumerate(assertions)}
    elif assertions:
        reported.append(f"nl_assertions (not in reward_basis): {assertions}")
    source = f" (τ²-bench commit {commit})" if commit else ""
    notes = f"τ²-bench {domain} task {task.get('id')}{source}; reward_basis {', '.join(basis)}."
    if reported:
        notes += " Reported, not graded: " + "; ".join(reported) + "."
    return {
        "id": case_id(task.get("id"), domain),
        "priority": "high",
        "difficulty": "hard",
        "tags": ["tau2", f"tau2:{domain}", f"tau2_task:{task.get('id')}"],
        "user": user,
        "expected": expected,
        "notes": notes,
    }
