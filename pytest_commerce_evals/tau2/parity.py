"""Parity with τ²-bench: each published simulation graded by this plugin's code graders (its
task converted to a case, its trajectory to a trial, its final state replayed) beside the reward
τ² gave it, every disagreement classified.

A verdict is `pass` when every grader of the case passes (the conversation ended by the customer,
the final state equal to the gold actions', every `communicate_info` string said); τ²'s is its
`reward` (1.0 a pass). A disagreement is classified:

- `data defect`: the simulation carries a defect (`simulations.Defect`): a task id that is not
  its task's, or a failed tool result without τ²'s error flag;
- `theirs`: the evidence shows τ²'s reward is wrong (a final state that differs from the gold
  actions' while τ² recorded a database match, or the reverse), with that evidence;
- `ours`: anything else, which is a bug of this plugin's to fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cases.case import Case
from ..graders.code import grade
from ..graders.observation import GoldState, Observation
from ..runner.gold import replay
from ..runner.trial import conversation_ending
from .domains import backend_class, check_domain
from .simulations import Defect, Results, graded_tasks, load_results, trial_of
from .tasks import case_of, ungraded_refusal

__all__ = ["FileParity", "Verdict", "grade_simulation", "parity"]


@dataclass
class Verdict:
    """One simulation: ours, τ²'s, and why they differ (None when they agree)."""

    simulation: str
    task: str
    ours: bool
    theirs: bool
    failures: list[str]
    defects: list[Defect]
    kind: str | None = None
    evidence: str = ""
    relabelled: bool | None = None
    """Ours against the task τ² actually graded a mislabelled simulation against (its
    `action_checks` name it); None when the simulation is not mislabelled."""


@dataclass
class FileParity:
    path: Path
    verdicts: list[Verdict] = field(default_factory=list)
    tasks: str = ""
    """Which tasks the simulations were graded against, in words."""

    @property
    def agree(self) -> int:
        return sum(v.ours == v.theirs for v in self.verdicts)

    @property
    def rate(self) -> float:
        return self.agree / len(self.verdicts) if self.verdicts else 0.0

    @property
    def clean(self) -> list[Verdict]:
        """The simulations without a data defect."""
        return [v for v in self.verdicts if not v.defects]

    @property
    def relabelled(self) -> list[Verdict]:
        """The mislabelled simulations graded against the task τ² graded them against."""
        return [v for v in self.verdicts if v.relabelled is not None]

    def disagreements(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.ours != v.theirs]


def grade_simulation(
    results: Results, simulation: dict[str, Any], backend: Callable[[], Any]
) -> Verdict:
    """Our verdict on one simulation, beside τ²'s reward; a mislabelled one is also graded
    against the task τ² graded it against (`Verdict.relabelled`)."""
    verdict = _grade(results, simulation, backend)
    if any(d.kind == "task-id" for d in verdict.defects):
        # tasks τ² could have graded it against; several only when they cannot be told apart,
        # and then they settle the verdict only when they agree on it
        found = {
            _grade(results, {**simulation, "task_id": task}, backend).ours
            for task in graded_tasks(results, simulation)
        }
        if len(found) == 1:
            verdict.relabelled = found.pop()
    return verdict


def _grade(results: Results, simulation: dict[str, Any], backend: Callable[[], Any]) -> Verdict:
    trial, defects = trial_of(results, simulation, backend)
    reward = (simulation.get("reward_info") or {}).get("reward")
    theirs = reward is not None and float(reward) >= 1.0
    task = results.tasks.get(str(simulation.get("task_id")))
    if task is None:
        return Verdict(
            str(simulation.get("id")),
            str(simulation.get("task_id")),
            False,
            theirs,
            ["no task"],
            defects,
        )
    case = Case.model_validate(case_of(task, domain=results.domain))
    gold = None
    if case.expected.same_state_as is not None:
        fresh = backend()
        gold = replay(fresh, case.expected.same_state_as, fresh.snapshot)
    results_ = grade(case, Observation(trial.turns, trial.snapshot, case.state, gold=gold))
    ending = conversation_ending(case, trial)
    if ending is not None:
        results_.append(ending)
    failures = [g.message for g in results_ if not g.passed]
    verdict = Verdict(
        str(simulation.get("id")), str(task.get("id")), not failures, theirs, failures, defects
    )
    if verdict.ours != verdict.theirs:
        _classify(verdict, simulation, gold)
    return verdict


def _classify(verdict: Verdict, simulation: dict[str, Any], gold: GoldState | None) -> None:
    if verdict.defects:
        verdict.kind = "data defect"
        verdict.evidence = "; ".join(f"{d.kind}: {d.evidence}" for d in verdict.defects)
        return
    info = simulation.get("reward_info") or {}
    db = (info.get("db_check") or {}).get("db_match")
    ours_db = not any(f.startswith("same_state_as") for f in verdict.failures)
    if db is not None and db != ours_db:
        verdict.kind = "theirs"
        verdict.evidence = (
            f"τ² recorded db_match={db}; the replayed final state "
            + ("equals" if ours_db else "differs from")
            + " the gold actions'"
            + ("" if ours_db else f": {verdict.failures[0]}")
        )
        return
    verdict.kind = "ours"
    verdict.evidence = "; ".join(verdict.failures) or "we pass what τ² failed"


def parity(path: Path | str, db: Path | str, tasks: Path | str | None = None) -> FileParity:
    """Every simulation of the results file at `path`, graded on the database at `db`, against
    the tasks the file carries (τ²'s tasks change between commits: a file is graded with its
    own); a file that carries none is graded against the tasks file `tasks` (a checkout's
    `tasks.json`), and with neither a `ValueError` says so. So does a file of a domain this does
    not grade, checked first, and tasks whose reward basis lists a check no case grades."""
    results = load_results(path)
    check_domain(results.domain, path)
    backend = backend_class(results.domain)
    out = FileParity(Path(path))
    if results.tasks:
        out.tasks = f"the {len(results.tasks)} tasks the file carries"
    elif tasks is not None:
        import json

        listed = json.loads(Path(tasks).read_text(encoding="utf-8"))
        if not isinstance(listed, list):
            raise ValueError(f"{tasks}: expected a list of tasks")
        results.tasks = {str(t["id"]): t for t in listed if isinstance(t, dict) and "id" in t}
        out.tasks = f"the file carries no tasks: the {len(results.tasks)} of {tasks}"
    else:
        raise ValueError(f"{path}: carries no tasks; give a checkout's tasks.json to grade with")
    refusal = ungraded_refusal(results.tasks.values(), results.domain)
    if refusal is not None:
        raise ValueError(f"{path}: {refusal}")
    for simulation in results.simulations:
        out.verdicts.append(grade_simulation(results, simulation, lambda: backend.load(db)))
    return out
