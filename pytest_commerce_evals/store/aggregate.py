"""What a run's trials add up to: a trial record from its JSON form, the per-set and per-case
pass rates, and the judge model and fingerprints the trials' verdicts name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..rates import (
    NOT_STARTED,
    CaseTally,
    pass_hat_k,
    set_rate_counts,
    set_verdict,
    tally_cases,
)
from ..results import GRADED, TrialRecord
from ..runs import CaseResult, SetResult
from ..stats import wilson_interval

__all__ = ["case_results", "judge_identity", "set_results"]


def set_results(
    trials: Iterable[TrialRecord], not_started: Iterable[tuple[str, float]] = ()
) -> list[SetResult]:
    """Per-set pass rates over graded (pass or fail) trials, with the same rule as the exit
    status: a set with nothing graded is met only when all its trials were skipped, and a set
    with trials the run's budget left unstarted (`not_started`: their set and threshold, a set
    none of whose trials started included) is undecided."""
    groups: dict[str, dict[str, Any]] = {}
    for set_name, threshold in not_started:
        g = groups.setdefault(
            set_name, {"passed": 0, "graded": 0, "threshold": threshold, "other": {}, "cases": {}}
        )
        g["other"][NOT_STARTED] = g["other"].get(NOT_STARTED, 0) + 1
    for t in trials:
        g = groups.setdefault(
            t.set_name,
            {"passed": 0, "graded": 0, "threshold": t.threshold, "other": {}, "cases": {}},
        )
        case = g["cases"].get(t.case_id)
        if case is None:
            case = g["cases"][t.case_id] = CaseTally.of(t)
        case.add_trial(t)
        if t.outcome in GRADED:
            g["graded"] += 1
            g["passed"] += t.outcome == "pass"
        else:
            g["other"][t.outcome] = g["other"].get(t.outcome, 0) + 1
    out = []
    for name in sorted(groups):
        g = groups[name]
        # pooled trials; under adaptive trials the mean of the cases' unbiased rates
        num, den = set_rate_counts(c.counts() for c in g["cases"].values())
        rate = num / den if den else None
        met = set_verdict(num, den, g["threshold"], g["other"]) in ("ok", "skipped")
        out.append(
            SetResult(
                name=name,
                passed=g["passed"],
                graded=g["graded"],
                rate=rate,
                threshold=g["threshold"],
                met=met,
                other=g["other"],
            )
        )
    return out


def case_results(
    trials: Iterable[TrialRecord],
    strips: dict[str, str] | None = None,
    flaky: Iterable[str] = (),
) -> list[CaseResult]:
    """Per-case pass rates over graded trials with their 95% Wilson interval, in case order;
    `strips` (case id -> per-run strip, oldest first) adds the history, and `flaky` names the
    cases the history calls flaky."""
    flaky = set(flaky)
    found = tally_cases(trials)
    out = []
    for case_id in sorted(found):
        c = found[case_id]
        strip = (strips or {}).get(case_id)
        out.append(
            CaseResult(
                case_id=case_id,
                set_name=c.set_name,
                priority=c.priority,
                passed=c.passed,
                graded=c.graded,
                rate=c.pass_rate,
                interval=list(wilson_interval(c.passed, c.graded)) if c.graded else None,
                flaky=None if strips is None else case_id in flaky,
                history=strip,
                pass_hat_k={
                    str(k): pass_hat_k(c.graded, c.passed, k) for k in range(1, c.graded + 1)
                }
                or None,
            )
        )
    return out


def judge_identity(trials: Iterable[TrialRecord]) -> tuple[str | None, list[str]]:
    """The judge model and the sorted judge fingerprints found in the trials' verdicts."""
    models: list[str] = []
    prints: set[str] = set()
    for t in trials:
        for v in t.verdicts:
            if v.judge_model and v.judge_model not in models:
                models.append(v.judge_model)
            if v.judge_fingerprint:
                prints.add(v.judge_fingerprint)
    return (", ".join(models) or None), sorted(prints)
