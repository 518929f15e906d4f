"""The HTML report of one run: its summary, cost, failing-set diff and every trial, on the
page `html_page` draws."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..cases.case import DIFFICULTIES, PRIORITIES
from ..prices import PriceBook
from ..rates import tally_cases
from ..results import OUTCOMES
from ..runs import RunRecord, pass_k_curve
from ..store.aggregate import case_results
from ..store.cost_regressions import MIN_COST_RISE
from ..store.diff import NOISE_NOTE, DiffEntry, FailingSetDiff
from ..store.history import (
    History,
    describe_run,
    overall_rate,
)
from .html_cost import _cost_section
from .html_page import _badge, _page, _pct, case_anchor, e
from .html_summary import _attacks_table, _meta_table, _sets_table
from .html_trials import _cases_section

__all__ = ["render_run_html"]

TABLE_OUTCOMES = tuple(o for o in OUTCOMES if o != "error")
"""The outcome columns of the by-priority and by-difficulty tables (glue errors are listed with
the trials, not counted in a column)."""


def _by_table(run: RunRecord, attr: str, order: tuple[str, ...]) -> str:
    groups: dict[str, Counter] = {}
    for case in tally_cases(run.trials).values():
        groups.setdefault(getattr(case, attr), Counter()).update(case.by_outcome)
    keys = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
    head = "".join(f"<th>{e(o)}</th>" for o in TABLE_OUTCOMES)
    out = [f"<table><tr><th>{e(attr)}</th><th>pass rate</th>{head}</tr>"]
    for key in keys:
        c = groups[key]
        graded = c["pass"] + c["fail"]
        rate = c["pass"] / graded if graded else None
        cells = "".join(f'<td class="num">{c[o] or ""}</td>' for o in TABLE_OUTCOMES)
        out.append(f'<tr><td>{e(key)}</td><td class="num">{_pct(rate)}</td>{cells}</tr>')
    out.append("</table>")
    return "".join(out)


# -- failing-set diff -------------------------------------------------------------------------


def _tested_rows(entries: list[DiffEntry], decides: bool = False) -> str:
    if not entries:
        return '<p class="note">none</p>'
    out = [
        '<table class="tested"><tr><th>case</th><th>priority</th><th>difficulty</th>'
        "<th>baseline (95% CI)</th><th>this run (95% CI)</th><th>p</th><th>failures</th></tr>"
    ]
    for entry in entries:
        name = f'<a class="nw" href="#{e(case_anchor(entry.case_id))}">{e(entry.case_id)}</a>'
        if entry.flaky:
            name += " " + _badge("flaky") + f' <span class="note">{e(entry.strip)}</span>'
        if entry.note:
            name += f' <span class="note">({e(entry.note)})</span>'
        what = entry.decides() if decides else None
        if what:
            name += f'<br><span class="note">decided at {e(what)}</span>'
        failing = entry.after if entry.after and entry.after.failing else entry.before
        reasons = failing.failures if failing else []
        shown = "".join(f"<li>{e(r)}</li>" for r in reasons[:3])
        more = f'<li class="note">… {len(reasons) - 3} more</li>' if len(reasons) > 3 else ""
        p = "" if entry.p is None else (f"{entry.p:.2g}" if entry.p < 0.01 else f"{entry.p:.2f}")
        out.append(
            f"<tr><td>{name}</td><td>{e(entry.priority)}</td><td>"
            f"{e(entry.difficulty)}</td>"
            f'<td class="nw">{e(entry.baseline_text())}</td>'
            f'<td class="nw">{e(entry.current_text())}</td><td class="num">{e(p)}</td>'
            f"<td><ul>{shown}{more}</ul></td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _diff_section(diff: FailingSetDiff | None, how_chosen: str) -> str:
    out = ['<h2 id="diff">Failing-set diff</h2>']
    if diff is None:
        out.append(f'<p class="note">{e(how_chosen or "no baseline run to compare with")}</p>')
        return "".join(out)
    out.append(
        f"<p>against {e(describe_run(diff.before))}"
        + (f" — {e(how_chosen)}" if how_chosen else "")
        + f"<br>baseline: {e(diff.pool_text())}</p>"
        + f'<p class="note">A case is newly failing (fixed) when the one-sided Fisher exact test '
        f"of its trials against its baseline gives p &lt; {diff.level:g}; inconclusive when its "
        "status changed (or a failing case's rate dropped) but the test does not decide. Rates "
        "carry their 95% Wilson interval.</p>"
    )
    for title, entries in (
        ("Newly failing", diff.newly_failing),
        ("Fixed", diff.fixed),
        ("Inconclusive", diff.closest_inconclusive()),
        ("Still failing", diff.still_failing),
        ("Not compared", diff.not_compared),
    ):
        if title in ("Not compared", "Inconclusive") and not entries:
            continue
        out.append(f"<h3>{e(title)} ({len(entries)})</h3>")
        out.append(_tested_rows(entries, decides=title == "Inconclusive"))
    out.append(_cost_regressions(diff))
    before, after = diff.overall
    out.append(
        f'<p class="noise">overall graded pass rate {_pct(before)} → {_pct(after)}'
        + (
            f" ({(after - before) * 100:+.1f} points)"
            if before is not None and after is not None
            else ""
        )
        + f". {e(NOISE_NOTE)}.</p>"
    )
    return "".join(out)


def _cost_regressions(diff: FailingSetDiff) -> str:
    """The cases whose agent tokens or time per trial rose (apart from the pass/fail changes;
    they decide nothing); empty when none did."""
    found = getattr(diff, "cost_regressions", None) or []
    if not found:
        return ""
    rows = "".join(
        f'<tr><td><a href="#{case_anchor(r.case_id)}">{e(r.case_id)}</a></td>'
        f"<td>{e(r.priority)}</td>"
        f"<td>{e(r.measure)}</td><td>{e(r.text().split(': ', 1)[1])}</td></tr>"
        for r in found
    )
    return (
        f"<h3>Cost and latency regressions ({len(found)})</h3>"
        f'<p class="note">median per trial against the pooled history, Mann–Whitney one-sided '
        f"p &lt; {diff.level:g} and a rise of at least {MIN_COST_RISE:.0%}; listed apart, they "
        "do not change the exit status (a case's budget does)</p>"
        "<table><tr><th>case</th><th>priority</th><th>measure</th><th>baseline → this run</th>"
        f"</tr>{rows}</table>"
    )


# -- the page ---------------------------------------------------------------------------------


def _pass_k(run: RunRecord) -> str:
    """pass^k over cases, k = 1 up to the most graded trials of a case (τ²-bench's measure)."""
    curve = pass_k_curve(run.cases or case_results(run.trials))
    if not curve:
        return ""
    shown = " · ".join(f"k={k}: {v:.3f}" for k, v in curve.items())
    return (
        f'<p>pass^k over cases: {e(shown)} <span class="note">(the chance that k trials of a '
        "case all pass, averaged over the cases with k graded trials)</span></p>"
    )


def render_run_html(
    run: RunRecord,
    diff: FailingSetDiff | None = None,
    how_chosen: str = "",
    extra_sections: Sequence[str] = (),
    history: History | None = None,
    prices: PriceBook | None = None,
) -> str:
    """The report of one run: summary, cost, failing-set diff (when there is a baseline), every
    trial.

    `extra_sections` are HTML fragments (already escaped) placed before the trials; `history`
    (earlier comparable runs) adds each case's outcome strip and flaky mark; `prices` price the
    model calls of the cost section (shown when some trial reported calls or turn times).
    """
    body = [
        "<h2>Run</h2>",
        _meta_table(run),
        "<h2>Sets against their thresholds</h2>",
        _sets_table(run),
        f'<p class="note">overall graded pass rate {_pct(overall_rate(run))} — '
        f"{e(NOISE_NOTE)}.</p>",
        _pass_k(run),
        '<div class="cols"><div><h3>Outcomes by priority</h3>',
        _by_table(run, "priority", PRIORITIES),
        "</div><div><h3>Outcomes by difficulty</h3>",
        _by_table(run, "difficulty", DIFFICULTIES),
        "</div></div>",
        _attacks_table(run),
        _cost_section(run, prices if prices is not None else PriceBook()),
        _diff_section(diff, how_chosen),
        *extra_sections,
        _cases_section(run, history),
    ]
    verdicts = {s.verdict for s in run.sets}
    state = (
        "a set fell short"
        if "short" in verdicts
        else "a set is undecided (nothing graded)"
        if "undecided" in verdicts
        else "every set met its threshold"
    )
    subtitle = (
        f"{run.agent_model or 'agent not named'} · {len(run.trials)} trials · {state}"
        f"{'' if run.complete else ' · INCOMPLETE'}"
    )
    return _page(f"commerce-evals run {run.run_id}", subtitle, "".join(body))
