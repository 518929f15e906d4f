"""Aggregating trial outcomes: per case, per set (against its threshold), per priority."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..attacks import AttackRates
from ..cases.case import DIFFICULTIES, PRIORITIES
from ..costs import CostSummary
from ..prices import PriceBook
from ..rates import CaseTally, set_rate_counts, set_verdict
from ..results import GRADED, OUTCOMES, TrialRecord
from ..settings import AutoTrials

FIXED_TRIALS = 5
"""The fixed trial count an adaptive run is measured against (the every-merge run it replaces)."""


@dataclass
class SetStats:
    name: str
    threshold: float
    passed: int = 0
    graded: int = 0
    other: Counter = field(default_factory=Counter)
    cases: dict[str, CaseTally] = field(default_factory=dict)
    not_started: int = 0
    """Trials the run's budget (`--commerce-budget`) left unstarted: the set could not finish."""

    def _rate_counts(self) -> tuple[int, int]:
        """Pooled trials, or the mean of per-case rates when cases ran unequal counts
        (`rates.set_rate_counts`, the rule the run store's set results use too); the set's
        own counts when no case is known."""
        if not self.cases:
            return self.passed, self.graded
        return set_rate_counts(c.counts() for c in self.cases.values())

    @property
    def per_case(self) -> bool:
        """The rate is the mean of per-case rates (adaptive trials, or cases that recorded
        unequal numbers of trials)."""
        cases = self.cases.values()
        return len({c.recorded for c in cases}) > 1 or any(c.stopping for c in cases)

    @property
    def rate(self) -> float | None:
        num, den = self._rate_counts()
        return num / den if den else None

    @property
    def verdict(self) -> str:
        if self.not_started:
            return "undecided"  # it could not finish: its rate measures part of it
        num, den = self._rate_counts()
        return set_verdict(num, den, self.threshold, self.other)

    @property
    def met(self) -> bool:
        return self.verdict in ("ok", "skipped")

    def why_undecided(self) -> str | None:
        if self.verdict != "undecided":
            return None
        if self.not_started:
            rate = f"{self.rate:.1%}" if self.rate is not None else "n/a"
            return (
                f"{self.name}: {self.not_started} trial(s) not started, the run's budget being "
                f"spent; {self.passed}/{self.graded} graded trials passed ({rate}) of those "
                f"that ran, not measured against the threshold {self.threshold:.0%}"
            )
        other = ", ".join(f"{n} {o}" for o, n in sorted(self.other.items()))
        return (
            f"{self.name}: no graded trial (pass or fail) to measure against the threshold "
            f"{self.threshold:.0%}" + (f"; trials: {other}" if other else "")
        )

    def shortfall(self) -> str | None:
        if self.verdict != "short":
            return None
        counted = (
            f"mean of per-case rates {self.rate:.1%} ({self.passed}/{self.graded} graded trials "
            "passed)"
            if self.per_case
            else f"{self.passed}/{self.graded} graded trials passed = {self.rate:.1%}"
        )
        assert self.rate is not None  # a short set has a graded trial
        return (
            f"{self.name}: {counted}, "
            f"threshold {self.threshold:.0%}, "
            f"short by {(self.threshold - self.rate) * 100:.1f} points"
        )


class Summary:
    def __init__(self, adaptive: AutoTrials | None = None, prices: PriceBook | None = None) -> None:
        self.cases: dict[str, CaseTally] = {}
        self.sets: dict[str, SetStats] = {}
        self.invalid: list[str] = []
        self.not_judged = 0
        self.not_judged_reason = "no judge: --commerce-no-judge"  # the judge's plugin says why
        self.adaptive = adaptive  # `--commerce-trials=auto:MIN:MAX`
        self.decided: dict[str, str] = {}  # case id: why adaptive trials stopped it
        self.costs = CostSummary(prices or PriceBook())
        self.budget_stop: str | None = None  # what of the run's budget ran out, and the spend
        self.attacks = AttackRates()

    def not_started(self, set_name: str, threshold: float) -> None:
        """Count a trial the run's budget left unstarted toward its set."""
        group = self.sets.get(set_name)
        if group is None:
            group = self.sets[set_name] = SetStats(set_name, threshold)
        group.not_started += 1

    def add(self, record: TrialRecord) -> None:
        """Count one trial toward its case and its set (held to the record's threshold)."""
        group = self.sets.get(record.set_name)
        if group is None:
            group = self.sets[record.set_name] = SetStats(record.set_name, record.threshold)
        case = self.cases.get(record.case_id)
        if case is None:
            # one tally per case, the run's and its set's
            case = self.cases[record.case_id] = group.cases[record.case_id] = CaseTally.of(record)
        case.add_trial(record)
        if record.outcome != "skipped":
            self.costs.add(record)
        self.attacks.add(record)
        if record.outcome in GRADED:
            group.graded += 1
            group.passed += record.outcome == "pass"
        else:
            group.other[record.outcome] += 1

    @property
    def shortfalls(self) -> list[str]:
        return [s for g in self.sets.values() if (s := g.shortfall())]

    @property
    def undecided(self) -> list[str]:
        return [s for g in self.sets.values() if (s := g.why_undecided())]

    @property
    def glue_errors(self) -> int:
        return sum(c.by_outcome["error"] for c in self.cases.values())

    def by(self, attr: str, order: tuple[str, ...]) -> dict[str, Counter]:
        groups: dict[str, Counter] = defaultdict(Counter)
        for stats in self.cases.values():
            groups[getattr(stats, attr)].update(stats.by_outcome)
        return {key: groups[key] for key in order if key in groups}

    def pass_hat_curve(self) -> dict[int, float]:
        """pass^k averaged over the cases that have at least k graded trials."""
        if not self.cases:
            return {}
        top = max(s.graded for s in self.cases.values())
        curve = {}
        for k in range(1, top + 1):
            values = [v for s in self.cases.values() if (v := s.pass_hat(k)) is not None]
            if values:
                curve[k] = sum(values) / len(values)
        return curve

    def adaptive_lines(self) -> list[str]:
        """What adaptive trials ran and saved against a fixed count of FIXED_TRIALS."""
        spec = self.adaptive
        if spec is None or not self.cases:
            return []
        cases = len(self.cases)
        ran = sum(s.recorded for s in self.cases.values())
        fixed = cases * FIXED_TRIALS
        saved = fixed - ran
        compared = (
            f"{saved} trials saved ({saved / fixed:.0%})"
            if saved >= 0
            else f"{-saved} more trials ({-saved / fixed:.0%} more)"
        )
        out = [
            f"adaptive trials {spec}: {ran} of {cases * spec.maximum} possible trials ran "
            f"(fixed {FIXED_TRIALS} would run {fixed}): {compared}"
        ]
        calls = self.calls_saved()
        if calls is not None:
            made, would, unknown = calls
            part = (
                f" ({unknown} case(s) whose trials reported no calls left out)" if unknown else ""
            )
            out.append(
                f"  model calls: {made:,} made; fixed {FIXED_TRIALS} would make about "
                f"{would:,.0f} at each case's calls per trial: {would - made:,.0f} "
                f"{'saved' if would >= made else 'more'}{part}"
            )
        reasons = Counter(self.decided.values())
        undecided = cases - sum(reasons.values())
        words = {
            "consistent": "consistent with their baseline",
            "dropped": "dropped against their baseline",
            "passing": "clearly passing (no history)",
            "failing": "clearly failing (no history)",
            "max": f"ran to the maximum of {spec.maximum}",
        }
        parts = [f"{n} {words.get(reason, reason)}" for reason, n in sorted(reasons.items())]
        if undecided:
            parts.append(f"{undecided} stopped early (interrupted or not run to a decision)")
        out.append("  cases decided: " + ", ".join(parts))
        return out

    def calls_saved(self) -> tuple[int, float, int] | None:
        """Adaptive trials' model calls as the trials recorded them (agent, judge and simulated
        customer): (made, what FIXED_TRIALS per case would make at each case's mean calls per
        trial, cases left out for reporting none); None when no trial reported a call."""
        made, would, unknown = 0, 0.0, 0
        for group in self.costs.cases.values():
            tallies = list(group.values())
            calls = sum(t.calls for t in tallies)
            trials = max(t.trials for t in tallies)
            if not calls or not trials:
                unknown += 1
                continue
            made += calls
            would += calls / trials * FIXED_TRIALS
        return None if not made else (made, would, unknown)

    def lines(self, verbose: bool = False) -> list[str]:
        out: list[str] = []
        if not self.cases and not self.invalid:
            return out
        width = max([len(c) for c in self.cases] + [4])
        shown = [
            s
            for s in sorted(self.cases.values(), key=lambda s: (s.set_name, s.case_id))
            if verbose or s.passed != s.recorded
        ]
        if not shown and self.cases:
            graded = sum(s.graded for s in self.cases.values())
            out.append(
                f"all {len(self.cases)} cases passed every graded trial ({graded} graded trials)"
            )
        if shown:
            out.append(
                f"{'case':<{width}}  {'priority':<8}  {'diff':<6}  pass/graded   rate  "
                f"pass^n  other"
            )
            for s in shown:
                rate = f"{s.pass_rate:.0%}" if s.pass_rate is not None else "-"
                hat = s.pass_hat(s.graded)
                hat_text = f"{hat:.2f}" if hat is not None else "-"
                other = ", ".join(f"{n} {o}" for o, n in s.other.items())
                out.append(
                    f"{s.case_id:<{width}}  {s.priority:<8}  {s.difficulty:<6}  "
                    f"{s.passed:>4}/{s.graded:<6} {rate:>5}  {hat_text:>6}  {other}"
                )
            if not verbose:
                out.append(
                    f"({len(self.cases) - len(shown)} cases passed every trial; -v lists them)"
                )
        out += self.adaptive_lines()
        out.append("")
        out.append("sets (threshold on the pass rate of graded trials):")
        for g in sorted(self.sets.values(), key=lambda g: g.name):
            rate = f"{g.rate:.1%}" if g.rate is not None else "n/a"
            verdict = {"ok": "ok", "short": "SHORT", "skipped": "skip"}.get(g.verdict, "UNDECIDED")
            extra = "".join(f", {n} {o}" for o, n in sorted(g.other.items()))
            how = f"mean of per-case rates {rate}" if g.per_case else f"= {rate}"
            out.append(
                f"  {verdict:<5} {g.name}: {g.passed}/{g.graded} {how} "
                f"(threshold {g.threshold:.0%}{extra})"
            )
        curve = self.pass_hat_curve()
        if curve:
            out.append(
                "pass^k over cases: " + "  ".join(f"k={k}: {v:.3f}" for k, v in curve.items())
            )
        for title, attr, order in (
            ("by priority", "priority", PRIORITIES),
            ("by difficulty", "difficulty", DIFFICULTIES),
        ):
            out.append(f"{title}:")
            for key, counts in self.by(attr, order).items():
                graded = counts["pass"] + counts["fail"]
                rate = f"{counts['pass'] / graded:.1%}" if graded else "n/a"
                parts = ", ".join(f"{n} {o}" for o in OUTCOMES if (n := counts[o]))
                out.append(f"  {key:<8} {rate:>6}  ({parts})")
        out += self.attacks.lines(verbose=verbose)
        if self.not_judged:
            out.append(
                f"rubrics not judged on {self.not_judged} trial(s) "
                f"({self.not_judged_reason}); "
                "those trials were decided by their code graders alone"
            )
        if self.glue_errors:
            out.append(
                f"glue errors: {self.glue_errors} trial(s) ended because the conftest's hooks "
                "failed or returned the wrong type (see errors above); not counted against the "
                "agent, but the run cannot pass until they are fixed"
            )
        if self.invalid:
            out.append(f"invalid case entries: {len(self.invalid)} (see errors above)")
        cost = self.costs.lines(verbose=verbose)
        if cost:
            out.append("")
            out += cost
        if self.budget_stop:
            out.append("")
            out.append(f"run stopped early: {self.budget_stop}")
        return out
