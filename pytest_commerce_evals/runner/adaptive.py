"""Adaptive trials (`--commerce-trials=auto[:MIN:MAX]`): when a case has run enough trials.

`decide` is the whole stopping rule, a pure function of counts (docs/run-history.md, "Adaptive
trials", explains it and gives the measured numbers); `benchmarks/bench_regressions.py` calls this
same function. `AdaptiveRun` keeps one process's decisions: each case's counts so far, its
baseline from the case-history hook, and which of its trials still need to run. Decisions are
made in the process that runs a case's trials (under xdist every trial of a case is sent to one
worker).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ..results import GRADED
from ..settings import AutoTrials
from ..stats import (
    beta_cdf,
    chance_flagged_at_max,
    fisher_drop_p,
    jeffreys_posterior,
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
    "decide",
]

LEVEL = 0.01
"""The level of the drop test a case is reported newly failing at (the failing-set diff's)."""
INTERIM_FACTOR = 10
"""Before the last trial a case stops as dropped only at LEVEL / INTERIM_FACTOR, so looking after
every trial does not add false alarms."""
DELTA = 0.1
"""A case stops as consistent with its baseline when the predictive chance that running on to the
maximum would flag it is below DELTA."""
CONFIDENCE = 0.95
"""Without history: stop when the Jeffreys posterior puts at least this much probability on one
side of the set threshold."""


@dataclass(frozen=True)
class Decision:
    """Why a case stopped: `reason` is `dropped`, `consistent`, `passing`, `failing` or `max`."""

    reason: str
    trials: int

    def text(self) -> str:
        words = {
            "dropped": "dropped against its baseline",
            "consistent": "consistent with its baseline",
            "passing": "clearly above the set threshold",
            "failing": "clearly below the set threshold",
            "max": "the maximum was reached",
        }[self.reason]
        return f"decided after {self.trials} trials: {words}"


def decide(
    passed: int,
    graded: int,
    ran: int,
    *,
    minimum: int,
    maximum: int,
    baseline: tuple[int, int] | None,
    threshold: float,
    level: float = LEVEL,
    delta: float = DELTA,
    confidence: float = CONFIDENCE,
) -> Decision | None:
    """Whether a case that ran `ran` trials (`passed` of `graded` graded) has run enough; None
    while it needs another trial.

    - Fewer than `minimum` trials: go on. `maximum` trials: stop.
    - With a baseline pool (`baseline` = (passed, graded) of earlier comparable runs, n0 > 0):
      stop `dropped` when the one-sided Fisher test of the counts against the pool is below
      `level / INTERIM_FACTOR`; stop `consistent` when the predictive chance that running on to
      `maximum` ends below `level` is under `delta`.
    - Without one (a first run, a new case): stop `passing` when the Jeffreys posterior gives
      P(rate >= threshold) >= `confidence`, `failing` when it is <= 1 - `confidence`.
    Trials that ended without a grade (judge, infrastructure or glue errors) count toward the
    maximum but not as evidence."""
    if ran >= maximum:
        return Decision("max", ran)
    if ran < minimum:
        return None
    if baseline is not None and baseline[1] > 0:
        base_passed, base_n = baseline
        if fisher_drop_p(passed, graded, base_passed, base_n) < level / INTERIM_FACTOR:
            return Decision("dropped", ran)
        left = maximum - ran
        chance = chance_flagged_at_max(passed, graded, base_passed, base_n, graded + left, level)
        if chance < delta:
            return Decision("consistent", ran)
        return None
    a, b = jeffreys_posterior(passed, graded)
    above = 1.0 - beta_cdf(threshold, a, b)
    if above >= confidence:
        return Decision("passing", ran)
    if above <= 1.0 - confidence:
        return Decision("failing", ran)
    return None


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
