"""Comparing runs: the failing-set diff against a baseline, and one model's run against another's.

A case *fails* in a run when any of its graded trials (pass or fail) failed, i.e. its pass rate
is below 1. A case with no graded trial (skipped, judge or infrastructure errors only) neither
passes nor fails: it cannot move between the failing sets and is listed as not compared.

The verdict on a change is the failing sets (and the set thresholds), never the overall rate:
between runs a move of about one percentage point overall is noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cases.case import PRIORITIES
from ..results import GRADED
from .run_store import RunRecord

__all__ = [
    "NOISE_NOTE",
    "CaseRate",
    "DiffEntry",
    "FailingSetDiff",
    "ModelComparison",
    "case_rates",
    "compare_runs",
    "describe_run",
    "diff_failing_sets",
    "overall_rate",
]

PRIORITY_ORDER = {name: n for n, name in enumerate(PRIORITIES)}
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


@dataclass
class DiffEntry:
    """One case on both sides of a comparison; `before`/`after` are None where it did not run."""

    case_id: str
    priority: str
    difficulty: str
    before: CaseRate | None
    after: CaseRate | None
    note: str = ""

    def rates(self) -> str:
        left = self.before.describe() if self.before else "not run"
        right = self.after.describe() if self.after else "not run"
        return f"{left} → {right}"


@dataclass
class FailingSetDiff:
    """The failing set of `after` against the failing set of `before`."""

    before: RunRecord
    after: RunRecord
    newly_failing: list[DiffEntry] = field(default_factory=list)
    fixed: list[DiffEntry] = field(default_factory=list)
    still_failing: list[DiffEntry] = field(default_factory=list)
    not_compared: list[DiffEntry] = field(default_factory=list)

    @property
    def entries(self) -> list[DiffEntry]:
        return self.newly_failing + self.fixed + self.still_failing + self.not_compared

    @property
    def overall(self) -> tuple[float | None, float | None]:
        return overall_rate(self.before), overall_rate(self.after)

    def lines(self, how_chosen: str = "") -> list[str]:
        out = [
            f"baseline: {describe_run(self.before)}" + (f" — {how_chosen}" if how_chosen else "")
        ]
        if self.before.agent_model != self.after.agent_model:
            out.append(
                f"note: the baseline ran agent {self.before.agent_model or '(not named)'}, "
                f"this run {self.after.agent_model or '(not named)'}"
            )
        width = max([len(e.case_id) for e in self.entries] + [4])
        for title, entries in (
            ("newly failing", self.newly_failing),
            ("fixed", self.fixed),
            ("still failing", self.still_failing),
            ("not compared (not graded or not run on one side)", self.not_compared),
        ):
            if not entries and title.startswith("not compared"):
                continue
            out.append(f"{title} ({len(entries)}):")
            for e in entries:
                note = f"  [{e.note}]" if e.note else ""
                out.append(f"  {e.case_id:<{width}}  {e.priority:<8}  {e.rates()}{note}")
        out.append(overall_line(*self.overall))
        return out


def overall_line(before: float | None, after: float | None, labels=("", "")) -> str:
    def pct(x: float | None) -> str:
        return f"{x:.1%}" if x is not None else "n/a"

    left, right = labels
    text = f"overall graded pass rate: {left}{pct(before)} → {right}{pct(after)}"
    if before is not None and after is not None:
        text += f" ({(after - before) * 100:+.1f} points)"
    return f"{text}; {NOISE_NOTE}"


def diff_failing_sets(before: RunRecord, after: RunRecord) -> FailingSetDiff:
    old, new = case_rates(before), case_rates(after)
    diff = FailingSetDiff(before, after)
    for case_id in sorted(set(old) | set(new)):
        b, a = old.get(case_id), new.get(case_id)
        ref = a or b
        assert ref is not None
        entry = DiffEntry(case_id, ref.priority, ref.difficulty, b, a)
        was = b.failing if b else None
        now = a.failing if a else None
        if now is True and was is True:
            diff.still_failing.append(entry)
        elif now is True and was is False:
            diff.newly_failing.append(entry)
        elif now is True and b is None:
            entry.note = "new case"
            diff.newly_failing.append(entry)
        elif now is False and was is True:
            diff.fixed.append(entry)
        elif now is True or was is True:
            entry.note = "not run in this run" if a is None else "not graded on one side"
            diff.not_compared.append(entry)
    for bucket in (diff.newly_failing, diff.fixed, diff.still_failing, diff.not_compared):
        bucket.sort(key=_order)
    return diff


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
    diff = diff_failing_sets(a, b)
    result = ModelComparison(a, b)
    # in diff terms A is "before": fixed = failing only under A, newly failing = only under B
    result.only_a = diff.fixed
    result.only_b = [e for e in diff.newly_failing if e.before is not None]
    result.both = diff.still_failing
    result.not_compared = diff.not_compared + [e for e in diff.newly_failing if e.before is None]
    for e in result.not_compared:
        e.note = ""
    result.not_compared.sort(key=_order)
    return result
