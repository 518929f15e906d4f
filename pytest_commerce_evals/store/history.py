"""Per-case pass rates, and what the run store's past says about a case: its graded trials in
each earlier comparable run, its outcome per run (the strip), and whether it is flaky.

A case *fails* in a run when any of its graded trials (pass or fail) failed, i.e. its pass rate
is below 1. A case with no graded trial (skipped, judge or infrastructure errors only) neither
passes nor fails.

A case whose per-run outcome flipped across the last comparable runs, and whose pass rate over
them is clearly below 1, is *flaky* (`is_flaky`, docs/run-history.md). The failing-set diff
(`diff`) pools a case's earlier runs into its baseline from here. `with_cases` puts each case's
rate, strip and cost in a finished run's record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..attacks import AttackRates
from ..cases.case import PRIORITIES
from ..costs import CostSummary
from ..prices import PriceBook
from ..rates import tally_cases
from ..results import GRADED, TrialRecord
from ..runs import RunRecord
from ..stats import format_rate, wilson_interval
from .aggregate import case_results
from .run_store import RunStore

__all__ = [
    "CASE_LINES",
    "DEFAULT_HISTORY_RUNS",
    "CaseRate",
    "History",
    "PastRun",
    "case_lines",
    "case_rates",
    "describe_run",
    "is_flaky",
    "load_history",
    "overall_rate",
    "strip",
    "with_cases",
]

DEFAULT_HISTORY_RUNS = 10
"""Comparable runs per case pooled into its baseline and shown in its strip (M)."""
SCAN_RUNS_PER_CASE_RUN = 5
"""How far back the store is read for a case's M runs: at most this many times M runs."""

PRIORITY_ORDER: dict[str, int] = {name: n for n, name in enumerate(PRIORITIES)}
"""Most urgent first: the order cases are listed in diffs and reports."""


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
    """Each case's trials in `run` (`rates.tally_cases`), with the failures they gave."""
    failures: dict[str, list[str]] = {}
    for t in run.trials:
        seen = failures.setdefault(t.case_id, [])
        for message in t.failures:
            if message not in seen:
                seen.append(message)
    return {
        case_id: CaseRate(
            case_id,
            c.priority,
            c.difficulty,
            c.set_name,
            passed=c.passed,
            graded=c.graded,
            other={o: n for o, n in c.by_outcome.items() if o not in GRADED},
            failures=failures[case_id],
        )
        for case_id, c in tally_cases(run.trials).items()
    }


def overall_rate(run: RunRecord) -> float | None:
    """The run's graded trials pooled: passed / graded; None when nothing was graded."""
    tallies = tally_cases(run.trials).values()
    graded = sum(c.graded for c in tallies)
    return sum(c.passed for c in tallies) / graded if graded else None


def describe_run(run: RunRecord) -> str:
    commit = (run.git_commit or "no git")[:10] + (" (dirty)" if run.git_dirty else "")
    state = "" if run.complete else ", INCOMPLETE"
    return (
        f"run {run.run_id} ({run.started_at[:16].replace('T', ' ')} UTC, agent "
        f"{run.agent_model or 'not named'}, commit {commit}{state})"
    )


def format_p(p: float) -> str:
    return f"{p:.2g}" if p < 0.01 else f"{p:.2f}"


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
    _trials: dict[str, list[TrialRecord]] = field(default_factory=dict, repr=False)

    def trials(self, run_id: str) -> list[TrialRecord]:
        """The trials of an earlier run: as held in `runs`, else read once with `loader`; none
        when it cannot be read (a damaged run gives no per-trial values, it is not an error)."""
        if run_id in self._trials:
            return self._trials[run_id]
        run = next((r for r in self.runs if r.run_id == run_id), None)
        found: list[TrialRecord] = list(run.trials) if run is not None else []
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


CASE_LINES = 40
"""Cases the run history section lists at most without `-v`, counting the ones that did not pass
every graded trial, which are always listed."""


def case_lines(run: RunRecord, history: History | None, limit: int | None = None) -> list[str]:
    """Every case's pass rate with its 95% Wilson interval (failing and flaky cases first), and
    its per-run strip when earlier runs are known. With a `limit`, the cases that passed every
    graded trial and are not flaky are listed only while the lines stay within it, the rest
    counted in one line; a case that failed, is flaky or had nothing graded is always listed."""
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
    hidden = 0
    if limit is not None and len(order) > limit:
        shown = [c for c in order if rates[c].failing is not False or c in flaky]
        room = max(0, limit - len(shown))
        kept = {*shown, *[c for c in order if c not in shown][:room]}
        hidden = len(order) - len(kept)
        order = [c for c in order if c in kept]
    width = max([len(c) for c in order] + [4])
    runs = max((len(marks) for marks in strips.values()), default=0)
    over = f"; outcome per run over the last {runs} comparable runs, oldest first"
    out = [f"case pass rates (graded trials, 95% Wilson interval{over if runs > 1 else ''}):"]
    for c in order:
        r = rates[c]
        rate = format_rate(r.passed, r.graded) if r.graded else r.describe()
        mark = "  flaky" if c in flaky else ""
        shown_strip = f"  {strips[c]}" if len(strips[c]) > 1 else ""
        out.append(f"  {c:<{width}}  {r.priority:<8}  {rate}{shown_strip}{mark}".rstrip())
    if hidden:
        out.append(f"  … and {hidden} more that passed every graded trial (-v lists every case)")
    return out


def with_cases(
    record: RunRecord, history: History | None, prices: PriceBook | None = None
) -> RunRecord:
    """The record with its per-case results (rate, interval, the strip when there is history,
    what each case's trials cost, priced by `prices`; none without them), the run's cost and
    its attack success rates, for the JSON record and the reports."""
    strips, flaky = None, []
    if history is not None:
        current = case_rates(record)
        strips = {c: strip(history, c, rate) for c, rate in current.items()}
        flaky = [c for c, rate in current.items() if flaky_case(history, c, rate)]
    cases = case_results(record.trials, strips, flaky)
    update: dict[str, Any] = {"cases": cases, "attacks": AttackRates.of(record.trials).to_json()}
    if prices is not None and any(t.calls or t.turn_s for t in record.trials):
        spent = CostSummary.of(record.trials, prices)
        for case in cases:
            case.cost = spent.case_json(case.case_id)
        update["cost"] = spent.to_json()
    return record.model_copy(update=update)
