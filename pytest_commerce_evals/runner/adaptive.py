"""Adaptive trials (`--commerce-trials=auto[:MIN:MAX]`): when a case has run enough trials.

`decide` is the whole stopping rule, a pure function of counts (docs/run-history.md, "Adaptive
trials", explains it and gives the measured numbers); `benchmarks/bench_regressions.py` calls this
same function. `AdaptiveTrials` (in `runner/_adaptive_run.py`... no: below) keeps a run's
decisions: which trials of a case still need to run, and what each case used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..stats import beta_cdf, chance_flagged_at_max, fisher_drop_p, jeffreys_posterior

__all__ = [
    "CONFIDENCE",
    "DELTA",
    "LEVEL",
    "INTERIM_FACTOR",
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
        chance = chance_flagged_at_max(
            passed, graded, base_passed, base_n, graded + left, level
        )
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
    outcomes: list[str] = field(default_factory=list)
