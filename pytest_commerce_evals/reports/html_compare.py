"""The HTML report of `--commerce-compare`: two runs' failing sets side by side, then their
pass rates and cost."""

from __future__ import annotations

from ..prices import PriceBook
from ..store.compare import ModelComparison
from ..store.diff import NOISE_NOTE, DiffEntry
from ..store.history import overall_rate
from .html_cost import _comparison_cost
from .html_page import _page, _pct, case_anchor, e
from .html_summary import _attacks_table, _meta_table, _sets_table

__all__ = ["render_comparison_html"]


def _entry_rows(entries: list[DiffEntry], left: str, right: str, link: bool) -> str:
    if not entries:
        return '<p class="note">none</p>'
    out = [
        f"<table><tr><th>case</th><th>priority</th><th>difficulty</th><th>{e(left)}</th>"
        f"<th>{e(right)}</th><th>failures</th></tr>"
    ]
    for entry in entries:
        name = e(entry.case_id)
        if link:
            name = f'<a href="#{e(case_anchor(entry.case_id))}">{name}</a>'
        if entry.note:
            name += f' <span class="note">({e(entry.note)})</span>'
        either = entry.after or entry.before
        reasons = either.failures if either is not None else []
        failing = entry.after if entry.after and entry.after.failing else entry.before
        reasons = failing.failures if failing else reasons
        shown = "".join(f"<li>{e(r)}</li>" for r in reasons[:3])
        more = f'<li class="note">… {len(reasons) - 3} more</li>' if len(reasons) > 3 else ""
        out.append(
            f"<tr><td>{name}</td><td>{e(entry.priority)}</td><td>"
            f"{e(entry.difficulty)}</td>"
            f'<td class="nw">{e(entry.before.describe() if entry.before else "not run")}</td>'
            f'<td class="nw">{e(entry.after.describe() if entry.after else "not run")}</td>'
            f"<td><ul>{shown}{more}</ul></td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def render_comparison_html(comparison: ModelComparison, prices: PriceBook | None = None) -> str:
    """Two runs' failing sets side by side, then their pass rates and cost (`prices`)."""
    a, b = comparison.a, comparison.b
    body = ['<div class="cols">']
    for side, run in (("A", a), ("B", b)):
        body.append(
            f"<div><h2>{side}: {e(run.agent_model or run.run_id)}</h2>{_meta_table(run)}"
            f"<h3>Sets</h3>{_sets_table(run)}{_attacks_table(run)}</div>"
        )
    body.append("</div>")
    if a.signature != b.signature:
        body.append(
            '<p class="noise">The two runs selected different cases or trials; only cases '
            "run in both are compared.</p>"
        )
    la, lb = f"A ({comparison.label('A')})", f"B ({comparison.label('B')})"
    for title, entries in (
        (f"Failing only under {la}", comparison.only_a),
        (f"Failing only under {lb}", comparison.only_b),
        ("Failing under both", comparison.both),
        ("Not compared", comparison.not_compared),
    ):
        if title == "Not compared" and not entries:
            continue
        body.append(f"<h2>{e(title)} ({len(entries)})</h2>")
        body.append(_entry_rows(entries, la, lb, link=False))
    ra, rb = overall_rate(a), overall_rate(b)
    body.append(
        f'<p class="noise">overall graded pass rate: A {_pct(ra)}, B {_pct(rb)}. '
        f"{e(NOISE_NOTE)}.</p>"
    )
    body.append(_comparison_cost(comparison, prices if prices is not None else PriceBook()))
    return _page(
        f"commerce-evals: {comparison.label('A')} against {comparison.label('B')}",
        f"A = run {a.run_id} · B = run {b.run_id}",
        "".join(body),
    )
