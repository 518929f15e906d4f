"""Comparing runs: the failing-set diff against a baseline, and one model's run against another's.

A case *fails* in a run when any of its graded trials (pass or fail) failed, i.e. its pass rate
is below 1. A case with no graded trial (skipped, judge or infrastructure errors only) neither
passes nor fails: it cannot move between the failing sets and is listed as not compared.

Whether a case changed is decided on its counts, not on that status: it is *newly failing* only
when the one-sided Fisher exact test of its trials against its baseline (`stats.fisher_drop_p`)
is below the level, *fixed* likewise by `stats.fisher_rise_p`; a case whose status changed
without either test deciding is *inconclusive*. The baseline is a case's graded trials pooled
over earlier comparable runs (`stats.pool_baseline`), or one named run alone. A case whose
per-run outcome flipped across the last comparable runs is *flaky* (docs/run-history.md).

The verdict on a change is the failing sets (and the set thresholds), never the overall rate:
between runs a move of about one percentage point overall is noise.

Beside the failing sets the diff lists *cost and latency regressions*: cases whose agent tokens
or agent time per trial rose against the same baseline trials, by the one-sided Mann–Whitney U
test (`stats.mann_whitney_greater_p`) at the diff's level and a median rise of at least
`MIN_COST_RISE`. They are listed apart and never move a case between the failing sets.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cases.case import PRIORITIES
from ..costs import per_trial_values
from ..results import GRADED
from ..stats import (
    fisher_drop_p,
    fisher_rise_p,
    format_rate,
    mann_whitney_greater_p,
    pool_baseline,
    wilson_interval,
)
from .records import RunRecord, StoredTrial
from .run_store import RunStore

__all__ = [
    "DEFAULT_HISTORY_RUNS",
    "DEFAULT_LEVEL",
    "NOISE_NOTE",
    "COST_MEASURES",
    "MIN_COST_RISE",
    "MIN_COST_TRIALS",
    "MIN_LATENCY_RISE_S",
    "CaseRate",
    "CostRegression",
    "DiffEntry",
    "FailingSetDiff",
    "History",
    "ModelComparison",
    "PastRun",
    "case_lines",
    "case_rates",
    "compare_runs",
    "cost_regressions",
    "describe_run",
    "diff_failing_sets",
    "is_flaky",
    "load_history",
    "overall_rate",
    "strip",
]

DEFAULT_LEVEL = 0.01
"""The level of the one-sided Fisher exact tests (`--commerce-diff-level`)."""
DEFAULT_HISTORY_RUNS = 10
"""Comparable runs per case pooled into its baseline and shown in its strip (M)."""
SCAN_RUNS_PER_CASE_RUN = 5
"""How far back the store is read for a case's M runs: at most this many times M runs."""

PRIORITY_ORDER: dict[str, int] = {name: n for n, name in enumerate(PRIORITIES)}
"""Most urgent first: the order cases are listed in diffs and reports."""

NOISE_NOTE = (
    "a move of ±1 point in the overall rate is noise: the verdict is the failing sets and "
    "the set thresholds, not the total"
)


@dataclass
class CaseRate:
    """One case's trials in one run."""

    case_id: str
    priority: str
    difficulty: str
    set_name: str
    passed: int = 0
    graded: int = 0
    other: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    @property
    def failing(self) -> bool | None:
        """True when a graded trial failed, False when all graded trials passed, None when
        nothing was graded."""
        return None if not self.graded else self.passed < self.graded

    def describe(self) -> str:
        if not self.graded:
            other = ", ".join(f"{n} {o}" for o, n in sorted(self.other.items()))
            return f"not graded ({other})" if other else "not graded"
        return f"{self.rate:.0%} ({self.passed}/{self.graded})"


def case_rates(run: RunRecord) -> dict[str, CaseRate]:
    out: dict[str, CaseRate] = {}
    for t in run.trials:
        rate = out.get(t.case_id)
        if rate is None:
            rate = out[t.case_id] = CaseRate(t.case_id, t.priority, t.difficulty, t.set_name)
        if t.outcome in GRADED:
            rate.graded += 1
            rate.passed += t.outcome == "pass"
        else:
            rate.other[t.outcome] = rate.other.get(t.outcome, 0) + 1
        for message in t.failures:
            if message not in rate.failures:
                rate.failures.append(message)
    return out


def overall_rate(run: RunRecord) -> float | None:
    graded = [t for t in run.trials if t.outcome in GRADED]
    return sum(t.outcome == "pass" for t in graded) / len(graded) if graded else None


def describe_run(run: RunRecord) -> str:
    commit = (run.git_commit or "no git")[:10] + (" (dirty)" if run.git_dirty else "")
    state = "" if run.complete else ", INCOMPLETE"
    return (
        f"run {run.run_id} ({run.started_at[:16].replace('T', ' ')} UTC, agent "
        f"{run.agent_model or 'not named'}, commit {commit}{state})"
    )


def _order(entry: DiffEntry) -> tuple:
    return (PRIORITY_ORDER.get(entry.priority, 9), entry.case_id)


# -- what the store knows about earlier runs ---------------------------------------------------


@dataclass(frozen=True)
class PastRun:
    """One case in one earlier comparable run: its graded trials there."""

    run_id: str
    started_at: str
    agent_model: str | None
    git_commit: str | None
    passed: int
    graded: int

    @property
    def mark(self) -> str:
        """`✓` when every graded trial passed, `✗` when one failed."""
        return "✓" if self.passed == self.graded else "✗"

    def describe(self) -> str:
        commit = (self.git_commit or "no git")[:10]
        return (
            f"{self.started_at[:16].replace('T', ' ')} · run {self.run_id} · agent "
            f"{self.agent_model or 'not named'} · commit {commit} · {self.passed}/{self.graded}"
        )


@dataclass
class History:
    """Earlier comparable runs (complete, same kind, same agent model), newest first, with each
    run's per-case counts; `max_runs` is how many runs per case count (M)."""

    runs: list[RunRecord] = field(default_factory=list)
    counts: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    max_runs: int = DEFAULT_HISTORY_RUNS
    loader: Callable[[str], RunRecord] | None = None
    """Reads a run with its trials (`RunStore.load_run`), for the runs in `runs` that came
    without them: their per-trial costs are read only when a cost test needs them."""
    _trials: dict[str, list[StoredTrial]] = field(default_factory=dict, repr=False)

    def trials(self, run_id: str) -> list[StoredTrial]:
        """The trials of an earlier run: as held in `runs`, else read once with `loader`; none
        when it cannot be read (a damaged run gives no per-trial values, it is not an error)."""
        if run_id in self._trials:
            return self._trials[run_id]
        run = next((r for r in self.runs if r.run_id == run_id), None)
        found: list[StoredTrial] = list(run.trials) if run is not None else []
        if not found and self.loader is not None:
            try:
                found = list(self.loader(run_id).trials)
            except Exception:  # a run that cannot be read is left out of the cost tests
                found = []
        self._trials[run_id] = found
        return found

    def past(self, case_id: str) -> list[PastRun]:
        """The case's graded trials in up to `max_runs` earlier runs that graded it, newest
        first."""
        out: list[PastRun] = []
        for run in self.runs:
            passed, graded = self.counts.get(run.run_id, {}).get(case_id, (0, 0))
            if graded:
                out.append(
                    PastRun(
                        run.run_id,
                        run.started_at,
                        run.agent_model,
                        run.git_commit,
                        passed,
                        graded,
                    )
                )
                if len(out) >= self.max_runs:
                    break
        return out

    def candidates(self, case_ids: set[str]) -> list[RunRecord]:
        """Baseline runs in order of preference: the runs that ran every one of `case_ids`,
        newest first, then the others that ran some, the most first (newest on a tie)."""
        ran = [
            (len(case_ids & set(self.counts.get(r.run_id, {}))), n, r)
            for n, r in enumerate(self.runs)
        ]
        return [r for count, _, r in sorted(ran, key=lambda x: (-x[0], x[1])) if count]


def load_history(
    store: RunStore, record: RunRecord, case_ids: set[str] | list[str], max_runs: int
) -> History:
    """The runs comparable with `record` in `store` (newest first) until every case of
    `case_ids` has `max_runs` graded runs, or `SCAN_RUNS_PER_CASE_RUN` × `max_runs` runs were
    read."""
    history = History(max_runs=max_runs, loader=store.load_run)
    wanted = set(case_ids)
    seen: dict[str, int] = dict.fromkeys(wanted, 0)
    for run in store.comparable_runs(record, limit=max(SCAN_RUNS_PER_CASE_RUN * max_runs, 50)):
        counts = store.case_counts(run.run_id)
        if not wanted & set(counts):
            continue
        history.runs.append(run)
        history.counts[run.run_id] = counts
        for case_id in wanted & set(counts):
            seen[case_id] += counts[case_id][1] > 0
        if all(n >= max_runs for n in seen.values()):
            break
    return history


def strip(history: History | None, case_id: str, current: CaseRate | None) -> str:
    """The case's per-run outcome over the last `max_runs` comparable runs, the current one
    included, oldest first: `✓` every graded trial passed, `✗` not (runs that graded nothing
    are left out)."""
    marks = []
    if current is not None and current.graded:
        marks.append("✓" if current.passed == current.graded else "✗")
    if history is not None:
        marks += [p.mark for p in history.past(case_id)]
        marks = marks[: history.max_runs]
    return "".join(reversed(marks))


FLAKY_BAR = 0.95
"""A case is flaky only when, besides flipping, it fails more than 1 trial in 20 with 95%
confidence: the Wilson upper bound of its pass rate over the strip's runs is below this."""


def strip_counts(
    history: History | None, case_id: str, current: CaseRate | None
) -> tuple[int, int]:
    """The case's (passed, graded) trials over the runs its strip shows."""
    runs: list[tuple[int, int]] = []
    if current is not None and current.graded:
        runs.append((current.passed, current.graded))
    if history is not None:
        runs += [(p.passed, p.graded) for p in history.past(case_id)]
        runs = runs[: history.max_runs]
    return sum(p for p, _ in runs), sum(g for _, g in runs)


def is_flaky(marks: str, passed: int, graded: int) -> bool:
    """Flaky: the per-run outcome flipped back and forth across the runs of the strip (at least
    two changes: `✓✗✓`, `✗✓✗`; one change, `✓✓✓✗`, is a change, which the diff's tests judge),
    and its pass rate over those runs is clearly below 1 (`FLAKY_BAR`). A case that passes 98%
    of its trials fails a 5-trial run now and then, and its strip flips; over ten runs its 49/50
    is not clearly below 0.95, so it is not called flaky. 40/50 is."""
    flips = sum(a != b for a, b in zip(marks, marks[1:], strict=False)) >= 2
    return flips and graded > 0 and wilson_interval(passed, graded)[1] < FLAKY_BAR


def flaky_case(history: History | None, case_id: str, current: CaseRate | None) -> bool:
    """`is_flaky` over the case's strip and its trials in the strip's runs."""
    return is_flaky(strip(history, case_id, current), *strip_counts(history, case_id, current))


# -- the diff -----------------------------------------------------------------------------------


@dataclass
class DiffEntry:
    """One case on both sides of a comparison; `before`/`after` are None where it did not run.

    `base_passed`/`base_graded` are the baseline the tests used (pooled over `base_runs` runs),
    `p` the p-value of the test that decided (or the smaller one when none did), `strip` the
    case's outcome per run (oldest first) and `flaky` whether it flipped."""

    case_id: str
    priority: str
    difficulty: str
    before: CaseRate | None
    after: CaseRate | None
    note: str = ""
    base_passed: int = 0
    base_graded: int = 0
    base_runs: int = 0
    p: float | None = None
    strip: str = ""
    strip_counts: tuple[int, int] = (0, 0)
    level: float = DEFAULT_LEVEL

    def decides(self) -> str | None:
        """What would decide this case (`what_decides`), for an inconclusive one."""
        if self.after is None:
            return None
        return what_decides(
            self.after.passed,
            self.after.graded,
            self.base_passed,
            self.base_graded,
            self.base_runs,
            self.level,
        )

    @property
    def flaky(self) -> bool:
        return is_flaky(self.strip, *self.strip_counts)

    def rates(self) -> str:
        """`before → after` as rates and counts (the model comparison's and the old diff's
        wording)."""
        left = self.before.describe() if self.before else "not run"
        right = self.after.describe() if self.after else "not run"
        return f"{left} → {right}"

    def baseline_text(self) -> str:
        if not self.base_graded:
            return self.before.describe() if self.before else "not run"
        pooled = f" over {self.base_runs} runs" if self.base_runs > 1 else ""
        return format_rate(self.base_passed, self.base_graded) + pooled

    def current_text(self) -> str:
        if self.after is None:
            return "not run"
        if not self.after.graded:
            return self.after.describe()
        return format_rate(self.after.passed, self.after.graded)

    def tested(self) -> str:
        """`baseline → current  p=…  flaky ✓✗✓`: both rates with their 95% intervals."""
        text = f"{self.baseline_text()} → {self.current_text()}"
        if self.p is not None:
            text += f"  p={format_p(self.p)}"
        if self.flaky:
            text += f"  flaky {self.strip}"
        return text


def format_p(p: float) -> str:
    return f"{p:.2g}" if p < 0.01 else f"{p:.2f}"


MOST_TRIALS = 100
"""The most trials `what_decides` considers for one run (`--commerce-trials` allows 100)."""
SHOWN_INCONCLUSIVE = 3
"""Inconclusive cases the terminal's diff lists without `-v`: those closest to deciding."""


def what_decides(
    passed: int, graded: int, base_passed: int, base_graded: int, base_runs: int, level: float
) -> str | None:
    """What would take an inconclusive case past the diff's test, in words: the trials this run
    would need at its rate against the baseline as it is, and the baseline trials (and about how
    many more runs) against this run as it is, each up to `MOST_TRIALS` a run. None when either
    side has no graded trial."""
    if graded <= 0 or base_graded <= 0:
        return None
    rate, base = passed / graded, base_passed / base_graded
    if rate == base:
        return "its rate equals its baseline's: no number of trials at these rates decides it"
    test = fisher_drop_p if rate < base else fisher_rise_p

    def decided(n: int, m: int) -> bool:
        return test(round(rate * n), n, round(base * m), m) < level

    here = next((n for n in range(graded + 1, MOST_TRIALS + 1) if decided(n, base_graded)), None)
    per_run = max(1, round(base_graded / max(base_runs, 1)))
    most_base = base_graded + MOST_TRIALS * 10
    pool = next((m for m in range(base_graded + 1, most_base + 1) if decided(graded, m)), None)
    parts = []
    if here is not None:
        parts.append(f"{here} trials in this run at its rate (--commerce-trials={here})")
    if pool is not None:
        runs = -(-(pool - base_graded) // per_run)
        parts.append(
            f"a baseline of {pool} trials at its rate (about {runs} more "
            f"run{'s' if runs != 1 else ''} of {per_run})"
        )
    if not parts:  # neither side alone: both, at one count each
        start = max(graded, base_graded) + 1
        both = next(
            (k for k in range(start, most_base + 1) if decided(min(k, MOST_TRIALS), k)), None
        )
        if both is None or both > MOST_TRIALS:
            return (
                f"the rates are too close for {MOST_TRIALS} trials in this run, or "
                f"{most_base} in the baseline, to decide it"
            )
        runs = -(-(both - base_graded) // per_run)
        parts.append(
            f"{both} trials in this run (--commerce-trials={both}) and a baseline of {both} "
            f"(about {runs} more run{'s' if runs != 1 else ''} of {per_run}), both at their rates"
        )
    return f"p < {level:g} with " + ", or with ".join(parts)


@dataclass
class FailingSetDiff:
    """The cases of `after` against their baseline: `before` alone, or each case's trials pooled
    over earlier comparable runs (`pooled_runs`, newest first)."""

    before: RunRecord
    after: RunRecord
    level: float = DEFAULT_LEVEL
    newly_failing: list[DiffEntry] = field(default_factory=list)
    fixed: list[DiffEntry] = field(default_factory=list)
    inconclusive: list[DiffEntry] = field(default_factory=list)
    still_failing: list[DiffEntry] = field(default_factory=list)
    not_compared: list[DiffEntry] = field(default_factory=list)
    pooled_runs: list[str] = field(default_factory=list)
    explicit: bool = True
    restricted: int | None = None
    paired: bool = False
    cost_regressions: list[CostRegression] = field(default_factory=list)
    """Cases whose agent tokens or agent time per trial rose (`cost_regressions`): listed apart,
    never in the failing sets."""

    @property
    def entries(self) -> list[DiffEntry]:
        return (
            self.newly_failing
            + self.fixed
            + self.inconclusive
            + self.still_failing
            + self.not_compared
        )

    @property
    def overall(self) -> tuple[float | None, float | None]:
        """Both runs' overall graded pass rates; over the selected cases only when restricted."""
        before = self.before
        if self.restricted is not None:
            mine = {t.case_id for t in self.after.trials}
            kept = [t for t in before.trials if t.case_id in mine]
            before = before.model_copy(update={"trials": kept})
        return overall_rate(before), overall_rate(self.after)

    def pool_text(self) -> str:
        """What the baseline is, in words, for the header."""
        if self.explicit:
            text = "this run alone"
        else:
            n = len(self.pooled_runs)
            newest = self.pooled_runs[0] if self.pooled_runs else self.before.run_id
            text = (
                f"{n} comparable run{'s' if n != 1 else ''} pooled per case, newest {newest}; "
                "per-case pools stop at a change"
            )
        if self.restricted is not None:
            n = self.restricted
            text += f"; restricted to the {n} selected case{'s' if n != 1 else ''}"
        return text

    def closest_inconclusive(self) -> list[DiffEntry]:
        """The inconclusive cases, closest to deciding first (smallest p)."""
        return sorted(self.inconclusive, key=lambda e: (e.p if e.p is not None else 1.0, e.case_id))

    def lines(self, how_chosen: str = "", verbose: bool = False) -> list[str]:
        out = [
            f"baseline: {describe_run(self.before)}" + (f" — {how_chosen}" if how_chosen else ""),
            f"baseline: {self.pool_text()}",
            (
                "the same transcripts graded again: a case is newly failing (fixed) when fewer "
                "(more) of its trials pass; there is no sampling noise to allow for"
                if self.paired
                else f"a case is newly failing (fixed) when the one-sided Fisher exact test of its "
                f"trials against its baseline gives p < {self.level:g}; rates are shown with "
                "their 95% Wilson interval"
            ),
        ]
        if (
            not self.paired
            and max((r.graded for r in case_rates(self.after).values()), default=0) == 1
        ):
            out.append(
                "note: one trial per case cannot show a drop beyond noise (0/1 against n/n "
                "gives p = 1/(n+1)); run --commerce-trials=5 or --commerce-trials=auto on "
                "merges to catch regressions"
            )
        if self.before.agent_model != self.after.agent_model:
            out.append(
                f"note: the baseline ran agent {self.before.agent_model or '(not named)'}, "
                f"this run {self.after.agent_model or '(not named)'}"
            )
        width = max([len(e.case_id) for e in self.entries] + [4])

        def entry_line(e: DiffEntry) -> str:
            note = f"  [{e.note}]" if e.note else ""
            return f"  {e.case_id:<{width}}  {e.priority:<8}  {e.tested()}{note}"

        for title, entries in (
            ("newly failing", self.newly_failing),
            ("fixed", self.fixed),
        ):
            out.append(f"{title} ({len(entries)}):")
            out += [entry_line(e) for e in entries]
        if self.inconclusive:
            n = len(self.inconclusive)
            shown = self.closest_inconclusive()
            if verbose or n <= SHOWN_INCONCLUSIVE:
                out.append(f"inconclusive ({n}): changed, but within noise:")
            else:
                shown = shown[:SHOWN_INCONCLUSIVE]
                out.append(
                    f"inconclusive ({n}): changed, but within noise; the {len(shown)} closest to "
                    f"deciding (-v lists all {n}, as do the HTML report and the JSON record):"
                )
            for e in shown:
                out.append(entry_line(e))
                decides = e.decides()
                if decides:
                    out.append(f"  {'':<{width}}  {'':<8}  decided at {decides}")
        for title, entries in (
            ("still failing", self.still_failing),
            ("not compared (not graded, not run or no baseline on one side)", self.not_compared),
        ):
            if not entries and title.startswith("not compared"):
                continue
            out.append(f"{title} ({len(entries)}):")
            out += [entry_line(e) for e in entries]
        if self.cost_regressions:
            out.append(
                "cost and latency regressions (median per trial, Mann–Whitney one-sided "
                f"p < {self.level:g}):"
            )
            out += [f"  {c.text()}" for c in self.cost_regressions]
        out.append(overall_line(*self.overall))
        return out

    def summary(self) -> dict[str, Any]:
        """The diff as plain data, for the JSON record: every case it lists, by bucket, with
        both sides' counts, the p-value and, for an inconclusive case, what would decide it."""

        def side(rate: CaseRate | None) -> list[int] | None:
            return [rate.passed, rate.graded] if rate is not None else None

        buckets = {
            "newly_failing": self.newly_failing,
            "fixed": self.fixed,
            "inconclusive": self.closest_inconclusive(),
            "still_failing": self.still_failing,
            "not_compared": self.not_compared,
        }
        return {
            "baseline": self.before.run_id,
            "pooled_runs": list(self.pooled_runs),
            "level": self.level,
            "paired": self.paired,
            **{
                name: [
                    {
                        "case_id": e.case_id,
                        "priority": e.priority,
                        "baseline": [e.base_passed, e.base_graded],
                        "baseline_runs": e.base_runs,
                        "current": side(e.after),
                        "p": e.p,
                        "note": e.note or None,
                        **({"decides": e.decides()} if name == "inconclusive" else {}),
                    }
                    for e in entries
                ]
                for name, entries in buckets.items()
            },
            "cost_regressions": [c.to_json() for c in self.cost_regressions],
        }


# -- cost and latency regressions --------------------------------------------------------------

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


def trial_values(trials: Sequence[StoredTrial], measure: str) -> list[float]:
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
    baseline_trials: Callable[[str], list[StoredTrial]],
    level: float,
) -> list[CostRegression]:
    """Each of `cases` (this run's) whose agent tokens or agent time per trial rose against its
    baseline trials (`baseline_trials(case_id)`: the trials the pass/fail test pooled), most
    urgent case first, tokens before latency. The baseline's trials are read only for a case
    with enough values here."""
    mine: dict[str, list[StoredTrial]] = {}
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


def overall_line(before: float | None, after: float | None, labels=("", "")) -> str:
    def pct(x: float | None) -> str:
        return f"{x:.1%}" if x is not None else "n/a"

    left, right = labels
    text = f"overall graded pass rate: {left}{pct(before)} → {right}{pct(after)}"
    if before is not None and after is not None:
        text += f" ({(after - before) * 100:+.1f} points)"
    return f"{text}; {NOISE_NOTE}"


def classify(
    passed: int, graded: int, base_passed: int, base_graded: int, *, was: bool, level: float
) -> tuple[str | None, float]:
    """The diff's rule for one case with graded trials on both sides: its bucket
    (`newly_failing`, `fixed`, `inconclusive`, `still_failing`, or None for nothing to report)
    and the p-value shown. `was` is whether the case failed a trial in the latest run that graded
    it. The benchmark (`benchmarks/bench_regressions.py`) calls this same function."""
    drop = fisher_drop_p(passed, graded, base_passed, base_graded)
    rise = fisher_rise_p(passed, graded, base_passed, base_graded)
    now = passed < graded
    if drop < level:
        return "newly_failing", drop
    if rise < level:
        return "fixed", rise
    if was != now or (now and passed * base_graded < base_passed * graded):
        # the status changed, or a failing case's rate dropped: not beyond noise
        return "inconclusive", min(drop, rise)
    if was and now:
        return "still_failing", min(drop, rise)
    return None, min(drop, rise)


def diff_failing_sets(
    before: RunRecord,
    after: RunRecord,
    *,
    level: float = DEFAULT_LEVEL,
    history: History | None = None,
    pooled: bool = False,
    restrict: bool = False,
    paired: bool = False,
) -> FailingSetDiff:
    """Each case of `after` against its baseline, by the one-sided Fisher exact tests.

    The baseline is `before` alone, or with `pooled` each case's trials in `history` pooled by
    `stats.pool_baseline`. `history` also gives each case's strip (flaky or not). With
    `restrict`, only the cases `after` ran are compared (a targeted run). With `paired`, `after`
    graded `before`'s own transcripts again (a regrade): any change in a case's passing trials is
    the grading's, so it is newly failing or fixed without a test."""
    old, new = case_rates(before), case_rates(after)
    diff = FailingSetDiff(before, after, level=level, explicit=not pooled, paired=paired)
    wanted = set(new) if restrict else set(old) | set(new)
    if restrict:
        diff.restricted = len(new)
    used: set[str] = set()
    pools: dict[str, list[str]] = {}  # per case, the earlier runs its baseline pooled
    for case_id in sorted(wanted):
        b, a = old.get(case_id), new.get(case_id)
        ref = a or b
        assert ref is not None
        entry = DiffEntry(case_id, ref.priority, ref.difficulty, b, a)
        entry.strip = strip(history, case_id, a)
        entry.strip_counts = strip_counts(history, case_id, a)
        if pooled and history is not None:
            past = history.past(case_id)
            bp, bg, runs = pool_baseline([(p.passed, p.graded) for p in past], level)
            used.update(p.run_id for p in past[:runs])
            pools[case_id] = [p.run_id for p in past[:runs]]
        else:
            bp, bg, runs = (b.passed, b.graded, 1) if b is not None and b.graded else (0, 0, 0)
        entry.base_passed, entry.base_graded, entry.base_runs = bp, bg, runs
        entry.level = level
        # the case's status in the latest run that graded it (what a diff of single runs
        # compares): a change of it that the tests do not decide is inconclusive. Not the pool's
        # any-fail status: a pool of 50 trials of a 98% case nearly always holds a failure.
        if b is not None and b.graded:
            was: bool | None = b.passed < b.graded
        elif pooled and history is not None and history.past(case_id):
            latest = history.past(case_id)[0]
            was = latest.passed < latest.graded
        else:
            was = None if not bg else bp < bg
        now = a.failing if a else None
        if now is None or was is None:
            if now is True or was is True:
                if a is None:
                    entry.note = "not run in this run"
                elif b is None and not bg:
                    entry.note = "new case: no baseline"
                else:
                    entry.note = "not graded on one side"
                diff.not_compared.append(entry)
            continue
        assert a is not None
        if paired:
            if a.passed * bg < bp * a.graded:
                diff.newly_failing.append(entry)
            elif a.passed * bg > bp * a.graded:
                diff.fixed.append(entry)
            elif now:
                diff.still_failing.append(entry)
            continue
        bucket, entry.p = classify(a.passed, a.graded, bp, bg, was=was, level=level)
        if bucket:
            getattr(diff, bucket).append(entry)
    diff.pooled_runs = [r.run_id for r in history.runs if r.run_id in used] if history else []
    if not paired:  # a regrade ran no agent: its costs are the source run's
        if pooled and history is not None:
            if before.trials:  # the baseline run as already read: not read again
                history._trials.setdefault(before.run_id, list(before.trials))

            def baseline_trials(case_id: str) -> list[StoredTrial]:
                return [
                    t
                    for run_id in pools.get(case_id, [])
                    for t in history.trials(run_id)
                    if t.case_id == case_id
                ]
        else:

            def baseline_trials(case_id: str) -> list[StoredTrial]:
                return [t for t in before.trials if t.case_id == case_id]

        diff.cost_regressions = cost_regressions(after, new, baseline_trials, level)
    for entries in (
        diff.newly_failing,
        diff.fixed,
        diff.inconclusive,
        diff.still_failing,
        diff.not_compared,
    ):
        entries.sort(key=_order)
    return diff


def case_lines(run: RunRecord, history: History | None) -> list[str]:
    """Every case's pass rate with its 95% Wilson interval (failing and flaky cases first), and
    its per-run strip when earlier runs are known."""
    rates = case_rates(run)
    strips = {c: strip(history, c, r) for c, r in rates.items()}
    flaky = {c for c, r in rates.items() if flaky_case(history, c, r)}
    order = sorted(
        rates,
        key=lambda c: (
            not (rates[c].failing or c in flaky),
            PRIORITY_ORDER.get(rates[c].priority, 9),
            c,
        ),
    )
    width = max([len(c) for c in rates] + [4])
    runs = max((len(marks) for marks in strips.values()), default=0)
    over = f"; outcome per run over the last {runs} comparable runs, oldest first"
    out = [f"case pass rates (graded trials, 95% Wilson interval{over if runs > 1 else ''}):"]
    for c in order:
        r = rates[c]
        rate = format_rate(r.passed, r.graded) if r.graded else r.describe()
        mark = "  flaky" if c in flaky else ""
        shown = f"  {strips[c]}" if len(strips[c]) > 1 else ""
        out.append(f"  {c:<{width}}  {r.priority:<8}  {rate}{shown}{mark}".rstrip())
    return out


@dataclass
class ModelComparison:
    """Two runs' failing sets side by side: failing only under A, only under B, under both."""

    a: RunRecord
    b: RunRecord
    only_a: list[DiffEntry] = field(default_factory=list)
    only_b: list[DiffEntry] = field(default_factory=list)
    both: list[DiffEntry] = field(default_factory=list)
    not_compared: list[DiffEntry] = field(default_factory=list)

    def label(self, side: str) -> str:
        run = self.a if side == "A" else self.b
        return run.agent_model or run.run_id

    def lines(self) -> list[str]:
        out = [
            f"A: {describe_run(self.a)}",
            f"   selection: {self.a.selection.describe()}",
            f"B: {describe_run(self.b)}",
            f"   selection: {self.b.selection.describe()}",
        ]
        if self.a.signature != self.b.selection.signature:
            out.append(
                "note: the two runs selected different cases or trials; only cases run "
                "in both are compared"
            )
        every = self.only_a + self.only_b + self.both + self.not_compared
        width = max([len(e.case_id) for e in every] + [4])
        side = max([len(e.before.describe() if e.before else "not run") for e in every] + [7])
        for title, entries in (
            (f"failing only under A ({self.label('A')})", self.only_a),
            (f"failing only under B ({self.label('B')})", self.only_b),
            ("failing under both", self.both),
            (
                "not compared (failing on one side, not graded or not run on the other)",
                self.not_compared,
            ),
        ):
            if not entries and title.startswith("not compared"):
                continue
            out.append(f"{title} ({len(entries)}):")
            for e in entries:
                left = e.before.describe() if e.before else "not run"
                right = e.after.describe() if e.after else "not run"
                out.append(f"  {e.case_id:<{width}}  {e.priority:<8}  A {left:<{side}}  B {right}")
        out.append(overall_line(overall_rate(self.a), overall_rate(self.b), ("A ", "B ")))
        return out


def compare_runs(a: RunRecord, b: RunRecord) -> ModelComparison:
    """Which cases fail (any graded trial failed) under A only, under B only, under both."""
    old, new = case_rates(a), case_rates(b)
    result = ModelComparison(a, b)
    for case_id in sorted(set(old) | set(new)):
        x, y = old.get(case_id), new.get(case_id)
        ref = y or x
        assert ref is not None
        entry = DiffEntry(case_id, ref.priority, ref.difficulty, x, y)
        in_a = x.failing if x else None
        in_b = y.failing if y else None
        if in_a and in_b:
            result.both.append(entry)
        elif in_a and in_b is False:
            result.only_a.append(entry)
        elif in_b and in_a is False:
            result.only_b.append(entry)
        elif in_a or in_b:
            result.not_compared.append(entry)
    for bucket in (result.only_a, result.only_b, result.both, result.not_compared):
        bucket.sort(key=_order)
    return result
