"""Comparing one model's run against another's: which cases fail (any graded trial failed)
under A only, under B only, under both, and which fail on one side and were not graded or not
run on the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..runs import RunRecord
from .diff import DiffEntry, _order, overall_line
from .history import case_rates, describe_run, overall_rate

__all__ = ["ModelComparison", "compare_runs"]


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
