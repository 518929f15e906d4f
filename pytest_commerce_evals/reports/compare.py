"""`--commerce-compare=A,B`: two runs (ids, agent models or JSON records), their failing sets,
then their pass rates, cost and attack success rates, side by side in the terminal and, with
`--commerce-html`, in an HTML report."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..attacks import AttackRates, AttackTally
from ..compat import line_writer
from ..errors import StoreError
from ..models.pricing import price_book
from ..prices import PriceBook
from ..settings import settings
from ..store.commands import open_store, resolve_run
from ..store.compare import ModelComparison, compare_runs
from ..store.paths import output_path
from ..store.run_store import damaged_lines
from .html_compare import render_comparison_html
from .html_page import write_html
from .run_cost import COST_COLUMNS, RunCost, cost_ratios

__all__ = ["attack_lines", "compare_main", "cost_lines"]


def compare_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    write = line_writer(config)

    compare = settings(config).compare
    assert compare is not None  # run for a --commerce-compare (reports/_plugin)
    refs = [r for r in compare.split(",") if r.strip()]
    if len(refs) != 2:
        write(
            f"commerce-evals: --commerce-compare takes two runs or models, A,B; got {compare!r}",
            red=True,
        )
        return pytest.ExitCode.USAGE_ERROR
    try:
        needs_store = any(not (Path(r).suffix == ".json" or Path(r).is_file()) for r in refs)
        # comparing only reads: a store on a read-only disk, or one CI mounted read-only, works
        store = open_store(config, read_only=True) if needs_store else None
        a = resolve_run(store, refs[0], "A")
        b = resolve_run(store, refs[1], "B")
    except (StoreError, pytest.UsageError) as exc:
        write(f"commerce-evals: {exc}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    comparison: ModelComparison = compare_runs(a, b)
    if reporter is not None:
        reporter.section("commerce-evals: failing sets side by side")
    for line in comparison.lines():
        write(line, **_compare_markup(line))
    prices = price_book(config)
    for line in cost_lines(comparison, prices) + attack_lines(comparison):
        write(line, **_compare_markup(line))
    if store is not None and store.damaged:
        for line, markup in damaged_lines(store):
            write(line, **markup)
    html = settings(config).html
    if html:
        path = output_path(config, html)
        try:
            page = render_comparison_html(comparison, prices)
            write(f"HTML report written to {write_html(page, path)}")
        except OSError as exc:
            write(f"could not write the HTML report to {path}: {exc}", red=True)
            return pytest.ExitCode.USAGE_ERROR
    return pytest.ExitCode.OK


def cost_lines(comparison: ModelComparison, prices: PriceBook) -> list[str]:
    """The two runs' graded pass rates and cost side by side: the agent's calls, tokens, cost
    and latency per trial, the judge's, the customer's and the run's money, then how B's agent
    compares with A's."""
    sides = [
        (f"{side} ({comparison.label(side)})", RunCost.of(comparison.label(side), run, prices))
        for side, run in (("A", comparison.a), ("B", comparison.b))
    ]
    table = [["", *COST_COLUMNS]] + [[name, *cost.cells().values()] for name, cost in sides]
    widths = [max(len(row[n]) for row in table) for n in range(len(table[0]))]
    out = [
        "pass rate and cost side by side (agent per trial; judge, customer, total per run; USD):"
    ]
    for row in table:
        out.append(
            "  " + "  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=True)).rstrip()
        )
    out.append("  " + cost_ratios(sides[0][1], sides[1][1]))
    return out


def attack_lines(comparison: ModelComparison) -> list[str]:
    """The attack success rate per category under A and under B (nothing when neither run had
    an attack); a category whose rate rose under B is marked."""
    a, b = (AttackRates.of(run.trials) for run in (comparison.a, comparison.b))
    names = sorted(set(a.categories) | set(b.categories))
    if not names:
        return []
    out = ["attack success rate side by side (attacks that got what they were after):"]
    width = max(len(n) for n in names)
    empty = AttackTally()
    for name in names:
        ta, tb = a.categories.get(name, empty), b.categories.get(name, empty)
        rose = ta.rate is not None and tb.rate is not None and tb.rate > ta.rate
        out.append(
            f"  {name:<{width}}  A {ta.text()}  B {tb.text()}"
            + ("  ← rose under B" if rose else "")
        )
    return out


def _compare_markup(line: str) -> dict[str, bool]:
    if line.endswith("← rose under B"):
        return {"red": True}
    starts = ("failing", "A:", "B:", "pass rate and cost", "attack success rate")
    return {"bold": True} if line.startswith(starts) else {}
