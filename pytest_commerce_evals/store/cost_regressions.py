"""Cost and latency regressions: the cases whose agent tokens or agent time per trial rose
against their baseline trials, by the one-sided Mann–Whitney U test
(`stats.mann_whitney_greater_p`) at the diff's level and a median rise of at least
`MIN_COST_RISE`. The failing-set diff (`diff`) lists them apart: they never move a case between
the failing sets.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..costs import per_trial_values
from ..results import GRADED, TrialRecord
from ..runs import RunRecord
from ..stats import mann_whitney_greater_p
from .history import PRIORITY_ORDER, CaseRate, format_p

__all__ = [
    "COST_MEASURES",
    "MIN_COST_RISE",
    "MIN_COST_TRIALS",
    "MIN_LATENCY_RISE_S",
    "CostRegression",
    "cost_regressions",
]

COST_MEASURES: dict[str, str] = {"tokens": "tokens", "latency": "agent_s"}
"""What is tested for a rise, per trial (`costs.per_trial_values`): `tokens`, the agent's input
plus output tokens; `latency`, the agent's own time over its turns (`turn_s`), not the customer's
or the judge's."""
MIN_COST_RISE = 0.10
"""A significant rise is listed only when the median per trial rose by at least this share: with
many trials the test finds shifts too small to matter."""
MIN_LATENCY_RISE_S = 0.05
"""Agent time is listed only when its median per trial also rose by at least this many seconds:
below it, the rise is the machine's noise (a scripted agent answers in microseconds), not a wait
a customer notices."""
MIN_COST_TRIALS = 3
"""Trials with the value reported that each side needs before a case is tested."""


@dataclass(frozen=True)
class CostRegression:
    """A case whose agent `measure` (`tokens` or `latency`, in seconds) per trial rose: the
    medians of the baseline's and this run's graded trials that reported it, their counts, and
    the one-sided Mann–Whitney p-value."""

    case_id: str
    priority: str
    measure: str
    base_median: float
    median: float
    p: float
    base_n: int
    n: int

    @property
    def ratio(self) -> float | None:
        """This run's median over the baseline's; None when the baseline's is 0."""
        return self.median / self.base_median if self.base_median > 0 else None

    def text(self) -> str:
        """`checkout-003: tokens 1,840 → 3,910 per trial (2.13×, p=0.004, 10 vs 5 trials)`: the
        medians and counts, baseline first."""
        ratio = "from 0" if self.ratio is None else f"{self.ratio:.2f}×"
        return (
            f"{self.case_id}: {self.measure} {_value(self.measure, self.base_median)} → "
            f"{_value(self.measure, self.median)} per trial ({ratio}, p={format_p(self.p)}, "
            f"{self.base_n} vs {self.n} trials)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "priority": self.priority,
            "measure": self.measure,
            "baseline_median": self.base_median,
            "median": self.median,
            "ratio": self.ratio,
            "p": self.p,
            "baseline_trials": self.base_n,
            "trials": self.n,
        }


def _value(measure: str, value: float) -> str:
    if measure == "tokens":
        return f"{value:,.0f}"
    return f"{value:.2f} s" if value < 10 else f"{value:,.1f} s"


def trial_values(trials: Sequence[TrialRecord], measure: str) -> list[float]:
    """The graded trials' `measure` (a key of `COST_MEASURES`), those that reported it."""
    what = COST_MEASURES[measure]
    values = (per_trial_values(t, what) for t in trials if t.outcome in GRADED)
    return [v for v in values if v is not None]


def cost_regression(
    case_id: str,
    priority: str,
    measure: str,
    values: Sequence[float],
    base_values: Sequence[float],
    level: float,
) -> CostRegression | None:
    """The case's rise in `measure` when the one-sided Mann–Whitney test of this run's values
    against the baseline's gives p < `level` and the median rose by at least `MIN_COST_RISE`;
    None otherwise, or when a side has fewer than `MIN_COST_TRIALS` values."""
    if len(values) < MIN_COST_TRIALS or len(base_values) < MIN_COST_TRIALS:
        return None
    base_median, median = statistics.median(base_values), statistics.median(values)
    if median <= base_median or median < base_median * (1 + MIN_COST_RISE):
        return None
    if measure == "latency" and median - base_median < MIN_LATENCY_RISE_S:
        return None
    p = mann_whitney_greater_p(values, base_values)
    if p >= level:
        return None
    return CostRegression(
        case_id,
        priority,
        measure,
        float(base_median),
        float(median),
        p,
        len(base_values),
        len(values),
    )


def cost_regressions(
    after: RunRecord,
    cases: dict[str, CaseRate],
    baseline_trials: Callable[[str], list[TrialRecord]],
    level: float,
) -> list[CostRegression]:
    """Each of `cases` (this run's) whose agent tokens or agent time per trial rose against its
    baseline trials (`baseline_trials(case_id)`: the trials the pass/fail test pooled), most
    urgent case first, tokens before latency. The baseline's trials are read only for a case
    with enough values here."""
    mine: dict[str, list[TrialRecord]] = {}
    for t in after.trials:
        if t.case_id in cases:
            mine.setdefault(t.case_id, []).append(t)
    out: list[CostRegression] = []
    order = sorted(cases, key=lambda c: (PRIORITY_ORDER.get(cases[c].priority, 9), c))
    for case_id in order:
        values = {m: trial_values(mine.get(case_id, []), m) for m in COST_MEASURES}
        if all(len(v) < MIN_COST_TRIALS for v in values.values()):
            continue
        base = baseline_trials(case_id)
        for measure, here in values.items():
            found = cost_regression(
                case_id, cases[case_id].priority, measure, here, trial_values(base, measure), level
            )
            if found is not None:
                out.append(found)
    return out
