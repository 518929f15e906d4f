"""The cost in the HTML reports: a run's cost section (per purpose, per set, the agent's tokens
per case as an SVG chart) and a comparison's pass rate and cost side by side."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from ..costs import CostSummary, Tally
from ..prices import PriceBook, money
from ..results import TrialRecord
from ..runs import RunRecord
from .html_page import e
from .run_cost import COST_COLUMNS, RunCost, _agent_time, _per_trial_money, _seconds, cost_ratios

if TYPE_CHECKING:  # a comparison's cost section is drawn by `--commerce-compare` alone
    from ..store.compare import ModelComparison

PURPOSE_LABELS = (("agent", "agent"), ("judge", "judge"), ("user", "simulated customer"))
CHART_BARS = 15


def _int(value: int | None) -> str:
    return "not reported" if value is None else f"{value:,}"


def _group_money(tallies: Sequence[Tally]) -> str:
    costs = [t.cost for t in tallies if t.cost is not None]
    unpriced = sum(t.unpriced for t in tallies)
    if not costs and not unpriced:
        return "—"
    return money(sum(costs, Decimal(0)) if costs else None, unpriced)


def _has_usage(trials: Sequence[TrialRecord]) -> bool:
    return any(t.calls or t.turn_s for t in trials)


def _purpose_table(summary: CostSummary) -> str:
    out = [
        "<table><tr><th>purpose</th><th>trials reported</th><th>calls</th><th>input tokens</th>"
        "<th>output tokens</th><th>cached tokens</th><th>latency in calls</th>"
        "<th>tokens / trial</th><th>cost / trial</th><th>cost</th></tr>"
    ]
    for purpose, label in PURPOSE_LABELS:
        t = summary.run[purpose]  # type: ignore[index]
        head = f'<tr><td>{e(label)}</td><td class="num">{t.reported}/{t.trials}</td>'
        if not t.reported:
            # the judge and the customer are the plugin's own calls: none made, none reported
            what = "not reported" if purpose == "agent" else "no calls"
            out.append(f'{head}<td colspan="8" class="note">{what}</td></tr>')
            continue
        per = t.per_trial()
        tokens = "not reported" if per["tokens"] is None else f"{per['tokens']:,.0f}"
        out.append(
            f'{head}<td class="num">{t.calls}</td><td class="num">{e(_int(t.input_tokens))}</td>'
            f'<td class="num">{e(_int(t.output_tokens))}</td>'
            f'<td class="num">{e(_int(t.cached_tokens))}</td>'
            f'<td class="num">{_seconds(t.latency_s)}</td><td class="num">{e(tokens)}</td>'
            f'<td class="num">{e(_per_trial_money(t))}</td>'
            f'<td class="num">{e(money(t.cost, t.unpriced))}</td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _sets_cost_table(summary: CostSummary) -> str:
    out = [
        "<table><tr><th>set</th><th>trials</th><th>agent calls / trial</th>"
        "<th>agent tokens / trial</th><th>agent latency / trial</th><th>agent cost / trial</th>"
        "<th>judge</th><th>simulated customer</th><th>set total</th></tr>"
    ]
    for name, group in sorted(summary.sets.items()):
        agent = group["agent"]
        per = agent.per_trial()
        if per["calls"] is None:
            cells = '<td colspan="4" class="note">not reported</td>'
        else:
            tokens = "not reported" if per["tokens"] is None else f"{per['tokens']:,.0f}"
            cells = (
                f'<td class="num">{per["calls"]:.1f}</td><td class="num">{e(tokens)}</td>'
                f'<td class="num">{_seconds(per["latency_s"])}</td>'
                f'<td class="num">{e(_per_trial_money(agent))}</td>'
            )
        others = "".join(
            f'<td class="num">{e(money(group[p].cost, group[p].unpriced))}</td>'
            if group[p].reported
            else '<td class="note">no calls</td>'
            for p in ("judge", "user")
        )
        out.append(
            f'<tr><td>{e(name)}</td><td class="num">{agent.trials}</td>{cells}{others}'
            f'<td class="num">{e(_group_money(list(group.values())))}</td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _tokens_chart(summary: CostSummary) -> str:
    """The agent's input and output tokens per trial, by case, as stacked horizontal bars: the
    cases with the most tokens per trial first, at most `CHART_BARS`."""
    rows = []
    unreported = 0
    for case_id, group in summary.cases.items():
        t = group["agent"]
        if not t.reported or t.input_tokens is None or t.output_tokens is None:
            unreported += 1
            continue
        cost = t.per_trial()["cost_usd"]
        rows.append(
            (
                case_id,
                t.input_tokens / t.reported,
                t.output_tokens / t.reported,
                Decimal(cost) if cost is not None else None,
            )
        )
    note = (
        f'<p class="note">{unreported} case(s) whose agent reported no tokens: not reported, '
        "not charted.</p>"
        if unreported
        else ""
    )
    if not rows:
        return note
    rows.sort(key=lambda r: (-(r[1] + r[2]), -(r[3] or 0), r[0]))
    shown = rows[:CHART_BARS]
    label_w, bar_w, value_w, row_h, top = 260, 420, 200, 22, 26
    width, height = label_w + bar_w + value_w, top + row_h * len(shown) + 4
    most = max(i + o for _, i, o, _ in shown) or 1
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img" aria-label="agent tokens per trial by case, input and output">'
        f'<rect class="in" x="{label_w}" y="4" width="12" height="12"/>'
        f'<text x="{label_w + 16}" y="14">input tokens</text>'
        f'<rect class="out" x="{label_w + 110}" y="4" width="12" height="12"/>'
        f'<text x="{label_w + 126}" y="14">output tokens (per trial)</text>'
    ]
    for n, (case_id, inp, out, cost) in enumerate(shown):
        y = top + n * row_h
        w_in, w_out = bar_w * inp / most, bar_w * out / most
        name = case_id if len(case_id) <= 38 else case_id[:37] + "…"
        per = "cost unknown" if cost is None else f"{money(cost)} / trial"
        parts.append(
            f"<g><title>{e(case_id)}: {inp:,.0f} input + {out:,.0f} output tokens per trial, "
            f"{e(per)}</title>"
            f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{e(name)}</text>'
            f'<rect class="in" x="{label_w}" y="{y}" width="{w_in:.1f}" height="16"/>'
            f'<rect class="out" x="{label_w + w_in:.1f}" y="{y}" width="{w_out:.1f}" height="16"/>'
            f'<text x="{label_w + w_in + w_out + 6:.1f}" y="{y + 12}">{inp + out:,.0f} · '
            f"{e(per)}</text></g>"
        )
    parts.append("</svg>")
    more = (
        f'<p class="note">{len(rows) - len(shown)} more case(s) with fewer tokens not shown; '
        "the JSON record has every case.</p>"
        if len(rows) > len(shown)
        else ""
    )
    return "".join(parts) + more + note


def _cost_section(run: RunRecord, prices: PriceBook) -> str:
    """The run's model calls, tokens, latency and money, for the agent, the judge and the
    simulated customer apart; only when some trial reported calls or turn times."""
    if not _has_usage(run.trials):
        return ""
    summary = CostSummary.of(run.trials, prices)
    total, unpriced = summary.total()
    mean_s, timed = _agent_time(run.trials)
    priced = ", ".join(
        f"{m} ({source or 'no price: cost unknown'})" for m, source in summary.sources().items()
    )
    agent_time = (
        f"agent time over its turns: {mean_s:.2f} s per trial ({timed} of {len(run.trials)} "
        "trials timed)"
        if mean_s is not None
        else "agent time over its turns: not reported"
    )
    out = [
        '<h2 id="cost">Cost</h2>',
        f"<p>total {e(money(total, unpriced))} "
        '<span class="note">(USD; model calls of the agent, the judge and the simulated '
        "customer; a purpose that reported nothing is not reported, never 0)</span></p>",
        _purpose_table(summary),
        f'<p class="note">{e(agent_time)}'
        + (f"<br>prices: {e(priced)}" if priced else "")
        + "</p>",
        "<h3>Cost by set</h3>",
        _sets_cost_table(summary),
        "<h3>Agent tokens per trial, by case</h3>",
        _tokens_chart(summary),
    ]
    return "".join(out)


def _comparison_cost(comparison: ModelComparison, prices: PriceBook) -> str:
    sides = [
        (f"{side} ({comparison.label(side)})", RunCost.of(comparison.label(side), run, prices))
        for side, run in (("A", comparison.a), ("B", comparison.b))
    ]
    head = "".join(f"<th>{e(c)}</th>" for c in COST_COLUMNS)
    rows = "".join(
        f"<tr><td>{e(name)}</td>"
        + "".join(f'<td class="num">{e(v)}</td>' for v in cost.cells().values())
        + "</tr>"
        for name, cost in sides
    )
    return (
        '<h2 id="cost">Pass rate and cost side by side</h2>'
        f"<table><tr><th>run</th>{head}</tr>{rows}</table>"
        f"<p>{e(cost_ratios(sides[0][1], sides[1][1]))}</p>"
        '<p class="note">per trial: the agent\'s means over the trials that reported its '
        "calls; judge, customer and total: the whole run, in USD</p>"
    )
