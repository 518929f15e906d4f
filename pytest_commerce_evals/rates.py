"""A case's pass rate and a set's, and the threshold rule.

`CaseTally` counts one case's trials (`tally_cases` builds one for each case of a run),
`set_rate_counts` gives a set its pass rate from its cases, `meets_threshold` is the threshold rule
and `set_verdict` the verdict a set gets by it. pass^k (`pass_hat_k`) is here too."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction
from math import comb
from typing import Any, Literal

from .results import GRADED, OUTCOMES, Stopping

__all__ = [
    "NOT_STARTED",
    "CaseTally",
    "meets_threshold",
    "pass_hat_k",
    "set_rate_counts",
    "set_verdict",
    "tally_cases",
]


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that k trials drawn from n (c of them passing) all pass.

    The unbiased estimator C(c, k) / C(n, k) that tau-bench reports; 0 when k > c.
    """
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")
    return comb(c, k) / comb(n, k)


SetVerdict = Literal["ok", "short", "undecided", "skipped"]


NOT_STARTED = "not_started"
"""The outcome a set counts for each of its trials the run's budget left unstarted."""


def set_verdict(
    passed: int, graded: int, threshold: float, others: Mapping[str, int] | None = None
) -> SetVerdict:
    """A set's verdict: `ok` when its pass rate over graded (pass or fail) trials reaches the
    threshold, `short` when it does not, `undecided` when trials ran but none was graded (each
    ended in a judge, infrastructure or glue error: nothing was measured). A set whose every case
    carries `skip` is `skipped`: deliberately not run, it neither passes nor fails the run. A set
    with trials the run's budget left unstarted (`not_started` among `others`) is `undecided`
    whatever its rate: it could not finish. `short` and `undecided` fail the run."""
    if (others or {}).get(NOT_STARTED):
        return "undecided"
    if graded <= 0:
        ran = any(n for outcome, n in (others or {}).items() if outcome != "skipped")
        return "undecided" if ran or not others else "skipped"
    return "ok" if meets_threshold(passed, graded, threshold) else "short"


class CaseTally:
    """One case's trials in a run: the one per-case roll-up. The terminal summary, the exit
    status (through its set), the run store's set and case results, the diff, the HTML report
    and the comparison of two runs all count a case's trials here (`tally_cases`): how many were
    recorded, graded (`GRADED`) and passed, each outcome's count (`by_outcome`, `other`), and
    under adaptive trials the outcomes in trial order and the rule that stopped the case."""

    __slots__ = (
        "by_outcome",
        "case_id",
        "difficulty",
        "graded",
        "outcomes",
        "passed",
        "priority",
        "recorded",
        "set_name",
        "stopping",
        "threshold",
    )

    def __init__(
        self, case_id: str = "", set_name: str = "", priority: str = "", difficulty: str = ""
    ) -> None:
        self.case_id, self.set_name = case_id, set_name
        self.priority, self.difficulty = priority, difficulty
        self.passed = self.graded = self.recorded = 0
        self.by_outcome: Counter[str] = Counter()
        self.outcomes: dict[int, bool | None] = {}
        self.stopping: Stopping | None = None
        self.threshold = 0.0

    @classmethod
    def of(cls, trial: Any) -> CaseTally:
        """An empty tally for the case of `trial` (a `TrialRecord`), named as it names it."""
        return cls(trial.case_id, trial.set_name, trial.priority, trial.difficulty)

    def add(self, trial: int, outcome: str, threshold: float, stopping: Stopping | None) -> None:
        self.recorded += 1
        self.by_outcome[outcome] += 1
        graded = outcome in GRADED
        self.graded += graded
        self.passed += outcome == "pass"
        self.outcomes[trial] = (outcome == "pass") if graded else None
        self.threshold = threshold
        if stopping is not None:
            self.stopping = stopping

    def add_trial(self, trial: Any) -> None:
        """Count one trial (a `TrialRecord`) of this case."""
        self.add(trial.trial, trial.outcome, trial.threshold, trial.stopping)

    @property
    def other(self) -> dict[str, int]:
        """The count of each outcome that is not graded (skipped, errors), in outcome order."""
        return {o: n for o in OUTCOMES if o not in GRADED and (n := self.by_outcome[o])}

    @property
    def pass_rate(self) -> float | None:
        """passed / graded; None when nothing was graded."""
        return self.passed / self.graded if self.graded else None

    def pass_hat(self, k: int) -> float | None:
        """pass^k over the graded trials (`pass_hat_k`); None past them."""
        if not 1 <= k <= self.graded:
            return None
        return pass_hat_k(self.graded, self.passed, k)

    def rate(self) -> Fraction | None:
        """`stats.adaptive_rate` for a case adaptive trials stopped; None otherwise (its rate is
        its counts)."""
        if self.stopping is None or not self.graded:
            return None
        from .stats import adaptive_rate

        path = tuple(self.outcomes[t] for t in sorted(self.outcomes))
        rule = self.stopping
        return adaptive_rate(
            path,
            minimum=rule.minimum,
            maximum=rule.maximum,
            baseline=rule.baseline,
            threshold=self.threshold,
            level=rule.level,
            delta=rule.delta,
        )

    def counts(self) -> tuple[int, int, int, Fraction | None]:
        return self.passed, self.graded, self.recorded, self.rate()


def tally_cases(trials: Iterable[Any]) -> dict[str, CaseTally]:
    """Each case's tally over `trials` (`TrialRecord`s), in the order the cases first appear."""
    out: dict[str, CaseTally] = {}
    for t in trials:
        tally = out.get(t.case_id)
        if tally is None:
            tally = out[t.case_id] = CaseTally.of(t)
        tally.add_trial(t)
    return out


def set_rate_counts(cases: Iterable[tuple[int, ...] | tuple[Any, ...]]) -> tuple[int, int]:
    """A set's pass rate as (numerator, denominator) from each case's (passed, graded,
    recorded[, rate]) trials; (0, 0) when nothing was graded. Pass it to `set_verdict`.

    When every case recorded the same number of trials (a fixed count), the rate is the set's
    graded trials pooled: passed / graded. Under adaptive trials (`--commerce-trials=auto`, a
    `rate` given: `CaseTally.rate`) it is the mean of each case's rate as `stats.adaptive_rate`
    reads it, which stopping early on good results does not bias. When cases recorded different
    numbers of trials otherwise, it is the mean of their pass rates. Each case weighs the same,
    as under a fixed count. (Pooled, the cases run longest, the flaky ones, would weigh most and
    pull the rate down.)"""
    cases = [tuple(c) for c in cases]
    graded = [c for c in cases if c[1] > 0]
    if not graded:
        return 0, 0
    rates = [c[3] if len(c) > 3 else None for c in graded]
    if all(r is None for r in rates) and len({c[2] for c in cases}) <= 1:
        return sum(c[0] for c in graded), sum(c[1] for c in graded)
    mean = sum(
        (
            Fraction(r) if r is not None else Fraction(c[0], c[1])
            for c, r in zip(graded, rates, strict=True)
        ),
        Fraction(0),
    ) / len(graded)
    return mean.numerator, mean.denominator


def meets_threshold(passed: int, graded: int, threshold: float) -> bool:
    """The threshold rule: `passed` of `graded` trials reach `threshold` (a share, 0..1).

    The one place the rule is written; nothing graded meets no threshold (`set_verdict` says
    what such a set is)."""
    if graded <= 0:
        return False
    # the tolerance keeps 4/5 at a threshold of 0.8 from failing on float rounding
    return passed / graded + 1e-12 >= threshold
