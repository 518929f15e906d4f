"""Adaptive trials (`--commerce-trials=auto[:MIN:MAX]`): when a case has run enough trials.

`stats.decide` is the whole stopping rule, a pure function of counts (docs/run-history.md,
"Adaptive trials", explains it and gives the measured numbers), and `stats.adaptive_rate` the case
rate it leaves, which optional stopping does not bias; `benchmarks/bench_regressions.py` calls
these same functions. `AdaptiveRun` keeps one process's decisions: each case's counts so far, its
baseline from the case-history hook, and which of its trials still need to run. Decisions are
made in the process that runs a case's trials (under xdist every trial of a case is sent to one
worker).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ..results import GRADED, Stopping
from ..settings import AutoTrials
from ..stats import (
    CONFIDENCE,
    DELTA,
    INTERIM_FACTOR,
    LEVEL,
    Decision,
    adaptive_rate,
    decide,
    pool_baseline,
)

__all__ = [
    "CONFIDENCE",
    "DELTA",
    "LEVEL",
    "INTERIM_FACTOR",
    "AdaptiveRun",
    "CaseTrials",
    "Decision",
    "adaptive_rate",
    "decide",
]


@dataclass
class CaseTrials:
    """One case's trials so far in an adaptive run."""

    passed: int = 0
    graded: int = 0
    ran: int = 0
    decision: Decision | None = None
    items: list[Any] = field(default_factory=list)  # the case's trial items, trial 1 first
    baseline: tuple[int, int] | None = None
    threshold: float = 0.8


ADAPTIVE = pytest.StashKey["AdaptiveRun"]()


class AdaptiveRun:
    """One process's adaptive trials: what each case ran, and whether it has run enough."""

    def __init__(self, spec: AutoTrials, level: float = LEVEL, delta: float = DELTA) -> None:
        self.spec = spec
        self.level = level
        self.delta = delta
        self.cases: dict[str, CaseTrials] = {}
        self._history_asked = False

    def add_items(self, items: list[Any]) -> None:
        """Learn the session's case trials (items with `case`, `trial`, `threshold`)."""
        for item in items:
            state = self.cases.setdefault(item.case.id, CaseTrials(threshold=item.threshold))
            if item not in state.items:
                state.items.append(item)
        for state in self.cases.values():
            state.items.sort(key=lambda i: i.trial)

    def ask_history(self, config: pytest.Config) -> None:
        """Each case's baseline pool from `pytest_commerce_evals_case_history`, asked once."""
        if self._history_asked:
            return
        self._history_asked = True
        answer = config.hook.pytest_commerce_evals_case_history(
            config=config, case_ids=sorted(self.cases)
        )
        for case_id, runs in (answer or {}).items():
            state = self.cases.get(case_id)
            if state is None or not runs:
                continue
            passed, graded, _ = pool_baseline([tuple(r) for r in runs], self.level)
            state.baseline = (passed, graded) if graded else None

    def stopping(self, case_id: str) -> Stopping:
        """The rule this run stops the case by, as its trials record it."""
        state = self.cases.get(case_id)
        return Stopping(
            minimum=self.spec.minimum,
            maximum=self.spec.maximum,
            baseline=state.baseline if state is not None else None,
            level=self.level,
            delta=self.delta,
        )

    def first_wave(self, item: Any) -> bool:
        """A trial every case runs (one of the first MIN)."""
        return item.trial <= self.spec.minimum

    def decision(self, case_id: str) -> Decision | None:
        state = self.cases.get(case_id)
        return state.decision if state else None

    def record(self, case_id: str, outcome: str) -> Decision | None:
        """Count one finished trial of the case; its decision once it has run enough."""
        state = self.cases.setdefault(case_id, CaseTrials())
        state.ran += 1
        if outcome in GRADED:
            state.graded += 1
            state.passed += outcome == "pass"
        if state.decision is None:
            state.decision = decide(
                state.passed,
                state.graded,
                state.ran,
                minimum=self.spec.minimum,
                maximum=self.spec.maximum,
                baseline=state.baseline,
                threshold=state.threshold,
                level=self.level,
                delta=self.delta,
            )
        return state.decision

    def next_trial(self, case_id: str, after: int, submitted: Any) -> Any | None:
        """The case's first trial after trial `after` not yet `submitted` (a predicate), once
        the case has run its first MIN trials (they are submitted together) and while it is
        undecided; None otherwise or when none is left."""
        state = self.cases.get(case_id)
        if state is None or state.decision is not None or state.ran < self.spec.minimum:
            return None
        return next((i for i in state.items if i.trial > after and not submitted(i)), None)


def adaptive_run(config: pytest.Config) -> AdaptiveRun | None:
    """This process's adaptive trials; None when the run has a fixed count."""
    return config.stash.get(ADAPTIVE, None)
