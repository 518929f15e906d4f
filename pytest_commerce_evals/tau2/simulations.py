"""τ²-bench's published simulations as trials: each simulation of a results file becomes the
`TrialRecord` a run of its task's case would have recorded (the customer's messages, the agent's
text, tool calls and results as events, why it ended), with the final state τ² itself grades: the
simulation's tool calls replayed, in order, on a fresh backend of its domain (`RetailBackend`,
`AirlineBackend`).

Defects in the data are found and reported, never absorbed:

- `task-id`: a simulation labelled with a task the file does not hold, or with another task's
  id (the gold actions τ²'s reward records are not the task's, none recorded for a task that
  has some included, or the customer it authenticated is not the one the task's gold actions
  serve);
- `unflagged-error`: a tool result τ²'s tool refuses on replay (or whose text is an error) that
  the file does not flag as an error.

    results = load_results(path)
    trial, defects = trial_of(results, simulation, backend_factory)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..events import Text, ToolCall, ToolResult, TurnEnd
from ..results import Ended, TrialRecord
from .retail import RetailError
from .tasks import case_id

__all__ = [
    "Defect",
    "Results",
    "ended_as",
    "graded_tasks",
    "load_results",
    "recorded_actions",
    "trial_of",
]

STOP = "###STOP###"
_ENDED: dict[str, Ended] = {
    "user_stop": "customer",
    "agent_stop": "customer",
    "max_steps": "max_turns",
    "too_many_errors": "agent_error",
    "agent_error": "agent_error",
    "user_error": "user_error",
}
PREMATURE = "Simulation terminated prematurely. Termination reason: "
"""How τ²'s evaluator opens the note of a reward it gave without grading the task's criteria."""
NO_ACTIONS = "No actions to evaluate"
"""The note τ²'s action evaluator leaves, with no `action_checks`, for a task without actions."""


@dataclass(frozen=True)
class Defect:
    """A fault in the published data, with the evidence."""

    kind: str
    simulation: str
    task: str
    evidence: str


@dataclass
class Results:
    """One τ² results file: its info, tasks by id, simulations, and where it was read from."""

    path: Path
    domain: str
    tasks: dict[str, dict[str, Any]]
    simulations: list[dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)


def load_results(path: Path | str) -> Results:
    """Read a τ² results file (`timestamp`, `info`, `tasks`, `simulations`); a `ValueError`
    names the file and what is missing."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(
            f"{path}: not a τ² results file ({type(exc).__name__}: {exc})"[:400]
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("simulations"), list):
        raise ValueError(f"{path}: not a τ² results file: no simulations list")
    raw_info = data.get("info")
    info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
    environment = info.get("environment_info")
    domain = (environment.get("domain_name") if isinstance(environment, dict) else None) or "retail"
    raw_tasks = data.get("tasks")
    listed: list[Any] = raw_tasks if isinstance(raw_tasks, list) else []
    tasks = {str(t["id"]): t for t in listed if isinstance(t, dict) and "id" in t}
    return Results(path, str(domain), tasks, data["simulations"], info)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {"_unparsed": raw}
    return raw if isinstance(raw, dict) else {"_unparsed": raw}


def _flagged(message: dict[str, Any]) -> bool:
    flag = message.get("error")
    return flag is True or str(flag).lower() == "true"


def ended_as(simulation: dict[str, Any]) -> Ended:
    """Why a simulation ended, as a trial records it. Its `termination_reason` when it has one
    (a reason this does not know: the agent's error). τ²'s earlier results files record none:
    τ²'s evaluator of that time gave a reward without grading the task's criteria only to a
    simulation terminated prematurely (too many errors, the step limit), and its reward's note
    says so (`Simulation terminated prematurely. Termination reason: ...`); that reason is taken
    from the note, and a simulation without either was graded on its criteria as one the
    conversation ended normally (the customer)."""
    reason = simulation.get("termination_reason")
    if reason is None:
        info = simulation.get("reward_info")
        notes = info.get("info") if isinstance(info, dict) else None
        note = notes.get("note") if isinstance(notes, dict) else None
        if not (isinstance(note, str) and note.startswith(PREMATURE)):
            return "customer"
        # the earlier evaluator wrote the enum itself (`TerminationReason.MAX_STEPS`)
        reason = note.removeprefix(PREMATURE).strip().rsplit(".", 1)[-1].lower()
    return _ENDED.get(str(reason), "agent_error")


def _gold_user(task: dict[str, Any]) -> str | None:
    for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
        user = (action.get("arguments") or {}).get("user_id")
        if user:
            return str(user)
    return None


def _actions(actions: Any) -> list[tuple[str, str]]:
    return [
        (str(a.get("name")), json.dumps(a.get("arguments") or {}, sort_keys=True))
        for a in actions or []
        if isinstance(a, dict)
    ]


def recorded_actions(simulation: dict[str, Any]) -> list[tuple[str, str]] | None:
    """The gold actions τ² graded the simulation against, as its reward records them: those of
    its `action_checks`; none when τ²'s action evaluator noted that the task had none to evaluate
    (it records no `action_checks` then); None when the reward records no action check at all
    (τ² did not grade the task's criteria, as for a simulation terminated prematurely)."""
    info = simulation.get("reward_info")
    if not isinstance(info, dict):
        return None
    checks = info.get("action_checks")
    if isinstance(checks, list):
        return _actions([c.get("action") for c in checks if isinstance(c, dict)])
    notes = info.get("info")
    action = notes.get("action") if isinstance(notes, dict) else None
    if isinstance(action, dict) and action.get("note") == NO_ACTIONS:
        return []
    return None


def graded_tasks(results: Results, simulation: dict[str, Any]) -> list[str]:
    """The ids of the file's tasks whose gold actions (and `communicate_info`) are the ones τ²
    graded the simulation against, from its `action_checks` (`recorded_actions`) and
    `communicate_checks`: one task, or several that cannot be told apart; [] when none matches
    or the reward records no action check."""
    graded = recorded_actions(simulation)
    if graded is None:
        return []
    info = simulation["reward_info"]
    said = sorted(str(c.get("info")) for c in info.get("communicate_checks") or [])
    match = [
        i
        for i, t in results.tasks.items()
        if _actions((t.get("evaluation_criteria") or {}).get("actions")) == graded
    ]
    if len(match) > 1:  # tasks with the same gold actions: told apart by what must be said
        match = [
            i
            for i in match
            if sorted(
                str(x)
                for x in (results.tasks[i].get("evaluation_criteria") or {}).get("communicate_info")
                or []
            )
            == said
        ]
    return match


def _graded_against(
    results: Results, simulation: dict[str, Any], task: dict[str, Any] | None
) -> str | None:
    """Why the reward τ² recorded was not given against this task, or None: the gold actions its
    reward records (`recorded_actions`: none, for a task without actions) are not the task's
    (and which task's they are, when the file holds it)."""
    graded = recorded_actions(simulation)
    if graded is None or task is None:
        return None
    own = _actions((task.get("evaluation_criteria") or {}).get("actions"))
    if graded == own:
        return None
    match = [
        i
        for i, t in results.tasks.items()
        if _actions((t.get("evaluation_criteria") or {}).get("actions")) == graded
    ]
    whose = f" but task {', '.join(match)}'s" if match else ""
    if not graded:  # τ²'s reward notes no actions to evaluate: a task without any
        return f"τ² graded it against no gold actions, not task {task.get('id')}'s {len(own)}" + (
            f" (the file's tasks without any: {', '.join(match)})" if match else ""
        )
    return (
        f"τ² graded it against {len(graded)} gold action(s) that are not task "
        f"{task.get('id')}'s" + whose
    )


def trial_of(
    results: Results,
    simulation: dict[str, Any],
    backend: Callable[[], Any],
) -> tuple[TrialRecord, list[Defect]]:
    """The trial a simulation is, and the data defects found in it. `backend()` makes the fresh
    backend its tool calls are replayed on."""
    task_id = str(simulation.get("task_id"))
    sim_id = str(simulation.get("id"))
    defects: list[Defect] = []
    task = results.tasks.get(task_id)
    if task is None:
        defects.append(Defect("task-id", sim_id, task_id, "the file holds no task with this id"))
    messages: list[str] = []
    turns: list[list[Any]] = [[]]
    calls: dict[str, ToolCall] = {}
    replay = backend()
    authenticated: set[str] = set()
    for n, message in enumerate(simulation.get("messages") or []):
        role = message.get("role")
        if role == "user":
            # τ²'s agent greets first: the greeting and the answer to the first customer
            # message are one turn; each later message closes the agent's turn before it
            text = str(message.get("content") or "")
            if messages:
                turns[-1].append(TurnEnd(turn=len(turns) - 1))
                if STOP in text:
                    messages.append(text)
                    break
                turns.append([])
            messages.append(text)
        elif role == "assistant":
            for i, call in enumerate(message.get("tool_calls") or []):
                event = ToolCall(
                    call_id=str(call.get("id") or f"m{n}-{i}"),
                    name=str(call.get("name")),
                    arguments=_arguments(call.get("arguments")),
                )
                calls[event.call_id] = event
                turns[-1].append(event)
            if message.get("content"):
                turns[-1].append(Text(text=str(message["content"])))
        elif role == "tool":
            call = calls.get(str(message.get("id")))
            content = message.get("content")
            flagged = _flagged(message)
            refused: str | None = None
            if call is not None:
                try:
                    replay.call_tool(call.name, dict(call.arguments))
                except RetailError as exc:
                    refused = str(exc)
                if call.name == "find_user_id_by_name_zip" or call.name == "find_user_id_by_email":
                    if not flagged and isinstance(content, str):
                        authenticated.add(content.strip())
            if not flagged and (refused is not None or str(content).startswith("Error:")):
                defects.append(
                    Defect(
                        "unflagged-error",
                        sim_id,
                        task_id,
                        f"message {n}: {call.name if call else '?'} result {str(content)[:120]!r}"
                        f" is not flagged as an error"
                        + (f"; the tool refuses it on replay: {refused}" if refused else ""),
                    )
                )
            turns[-1].append(
                ToolResult(
                    call_id=str(message.get("id")),
                    name=call.name if call else None,
                    status="error" if flagged or refused is not None else "ok",
                    reason=str(content)[:500] if flagged or refused is not None else None,
                    result=content,
                )
            )
    if turns and turns[-1] and not isinstance(turns[-1][-1], TurnEnd):
        turns[-1].append(TurnEnd(turn=len(turns) - 1))
    graded_as = _graded_against(results, simulation, task)
    if graded_as is not None:
        defects.append(Defect("task-id", sim_id, task_id, graded_as))
    gold = _gold_user(task) if task is not None else None
    if gold is not None and authenticated and gold not in authenticated:
        defects.append(
            Defect(
                "task-id",
                sim_id,
                task_id,
                f"the conversation authenticated {', '.join(sorted(authenticated))}; task "
                f"{task_id}'s gold actions serve {gold}",
            )
        )
    record = TrialRecord(
        case_id=case_id(task_id, results.domain),
        trial=int(simulation.get("trial") or 0) + 1,
        trials=1,
        set_name=f"tau2-{results.domain}",
        threshold=0.0,
        priority="high",
        difficulty="hard",
        tags=["tau2"],
        outcome="pass",
        turns=turns,
        messages=messages,
        ended=ended_as(simulation),
        snapshot=replay.snapshot(),
    )
    return record, defects
