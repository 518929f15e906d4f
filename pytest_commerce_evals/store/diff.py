"""The failing-set diff: each case of a run against its baseline, newly failing, fixed,
inconclusive or still failing.

A case with no graded trial (skipped, judge or infrastructure errors only) neither passes nor
fails: it cannot move between the failing sets and is listed as not compared.

Whether a case changed is decided on its counts, not on that status: it is *newly failing* only
when the one-sided Fisher exact test of its trials against its baseline (`stats.fisher_drop_p`)
is below the level, *fixed* likewise by `stats.fisher_rise_p`; a case whose status changed
without either test deciding is *inconclusive*. The baseline is a case's graded trials pooled
over earlier comparable runs (`stats.pool_baseline`, the runs `history` reads), or one named run
alone. Each case shows its strip, and whether it is flaky, from `history`.

The verdict on a change is the failing sets (and the set thresholds), never the overall rate:
between runs a move of about one percentage point overall is noise.

Beside the failing sets the diff lists the cost and latency regressions (`cost_regressions`)
against the same baseline trials. They are listed apart and never move a case between the
failing sets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..results import TrialRecord
from ..runs import RunRecord
from ..stats import fisher_drop_p, fisher_rise_p, format_rate, pool_baseline
from .cost_regressions import CostRegression, cost_regressions
from .history import (
    PRIORITY_ORDER,
    CaseRate,
    History,
    case_rates,
    describe_run,
    format_p,
    is_flaky,
    overall_rate,
    strip,
    strip_counts,
)

__all__ = [
    "DEFAULT_LEVEL",
    "NOISE_NOTE",
    "DiffEntry",
    "FailingSetDiff",
    "diff_failing_sets",
]

DEFAULT_LEVEL = 0.01
"""The level of the one-sided Fisher exact tests (`--commerce-diff-level`)."""

NOISE_NOTE = (
    "a move of ±1 point in the overall rate is noise: the verdict is the failing sets and "
    "the set thresholds, not the total"
)


def _order(entry: DiffEntry) -> tuple:
    return (PRIORITY_ORDER.get(entry.priority, 9), entry.case_id)


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

            def baseline_trials(case_id: str) -> list[TrialRecord]:
                return [
                    t
                    for run_id in pools.get(case_id, [])
                    for t in history.trials(run_id)
                    if t.case_id == case_id
                ]
        else:

            def baseline_trials(case_id: str) -> list[TrialRecord]:
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
