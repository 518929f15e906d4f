"""The trend: the pass rate of each rubric dimension over the live runs, and its chart.

`--commerce-trend` prints the pass rate of each dimension over the live runs with a Wilson 95%
interval and flags the moves larger than the noise; `--commerce-trend-svg` draws it. The
interval and the test are `stats`', the one place statistics live.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from ..results import RubricVerdict
from ..rubrics import STANDARD
from ..stats import two_proportion_p, wilson_interval

__all__ = [
    "NOISE_POINTS",
    "DimensionTrend",
    "Trend",
    "TrendPoint",
    "compute_trend",
    "read_live_runs",
    "render_trend_svg",
    "trend_html_section",
]

NOISE_POINTS = 1.0
"""A move of one percentage point or less between live runs is noise, whatever a test says."""


@dataclass
class TrendPoint:
    """One dimension in one live run: passes over graded verdicts, with its 95% interval."""

    run_id: str
    started_at: str
    passed: int
    graded: int
    errors: int = 0
    rubric_fingerprints: tuple[str, ...] = ()
    judge_fingerprints: tuple[str, ...] = ()
    flag: str = ""
    """'' (noise, or the first point), 'up' or 'down' (a move beyond the noise), 'changed' (the
    judge or the rubric changed since the previous point, so the two are not comparable)."""
    p_value: float | None = None

    @property
    def rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed, self.graded)


@dataclass
class DimensionTrend:
    dimension: str
    points: list[TrendPoint]


@dataclass
class Trend:
    """Pass rate per dimension across live runs, oldest first."""

    runs: list[tuple[str, str]]  # (run_id, started_at)
    dimensions: list[DimensionTrend]
    overall: list[TrendPoint]
    alpha: float = 0.05

    def lines(self) -> list[str]:
        if not self.runs:
            return ["no complete live runs in the run store yet: run pytest --commerce-live=PATH"]
        out = [
            f"pass rate per rubric dimension over {len(self.runs)} live run(s), oldest first; "
            f"[95% Wilson interval] n = graded verdicts",
            f"a move is flagged when a two-proportion test gives p < {self.alpha:g} and it is "
            f"larger than {NOISE_POINTS:g} point; smaller moves are noise",
        ]
        for dim in [*self.dimensions, DimensionTrend("overall", self.overall)]:
            out.append("")
            out.append(dim.dimension)
            for pt in dim.points:
                out.append("  " + _point_line(pt))
        return out


def _pct(x: float | None) -> str:
    return "  n/a " if x is None else f"{100 * x:5.1f}%"


def _point_line(pt: TrendPoint) -> str:
    low, high = pt.interval
    p = f"{pt.p_value:.3g}" if pt.p_value is not None else "n/a"
    mark = {
        "up": f"  ▲ up, beyond noise (p={p})",
        "down": f"  ▼ DOWN, beyond noise (p={p})",
        "changed": "  ≠ judge or rubric changed: not comparable with the previous run",
    }.get(pt.flag, "")
    errors = f", {pt.errors} not graded" if pt.errors else ""
    return (
        f"{pt.started_at[:16].replace('T', ' ')}  {pt.run_id}  {_pct(pt.rate)} "
        f"[{100 * low:5.1f}–{100 * high:5.1f}]  n={pt.graded}{errors}{mark}"
    )


def _flag(points: list[TrendPoint], alpha: float) -> None:
    previous: TrendPoint | None = None
    for pt in points:
        if pt.graded == 0:
            continue
        if previous is not None:
            if (
                pt.rubric_fingerprints != previous.rubric_fingerprints
                or pt.judge_fingerprints != previous.judge_fingerprints
            ):
                pt.flag = "changed"
            else:
                pt.p_value = two_proportion_p(
                    previous.passed, previous.graded, pt.passed, pt.graded
                )
                move = 100 * ((pt.rate or 0) - (previous.rate or 0))
                if pt.p_value < alpha and abs(move) > NOISE_POINTS:
                    pt.flag = "up" if move > 0 else "down"
        previous = pt


def compute_trend(
    runs: Sequence[tuple[str, str, Iterable[RubricVerdict]]],
    dimensions: Sequence[str] | None = None,
    *,
    alpha: float = 0.05,
) -> Trend:
    """The trend over `runs`: (run_id, started_at, the verdicts of every trial), any order.

    A verdict counts toward its dimension when its outcome is pass or fail; judge and
    infrastructure errors are counted apart and never as a fail.
    """
    ordered = sorted(runs, key=lambda r: (r[1], r[0]))
    per: dict[str, list[TrendPoint]] = {}
    overall: list[TrendPoint] = []
    for run_id, started_at, verdicts in ordered:
        counts: dict[str, dict[str, Any]] = {}
        for v in verdicts:
            dim = v.dimension
            if not dim or (dimensions is not None and dim not in dimensions):
                continue
            c = counts.setdefault(dim, {"p": 0, "n": 0, "e": 0, "r": set(), "j": set()})
            if v.outcome in ("pass", "fail"):
                c["n"] += 1
                c["p"] += v.outcome == "pass"
            else:
                c["e"] += 1
            if v.rubric_fingerprint:
                c["r"].add(v.rubric_fingerprint)
            if v.judge_fingerprint:
                c["j"].add(v.judge_fingerprint)
        for dim, c in counts.items():
            per.setdefault(dim, []).append(
                TrendPoint(
                    run_id,
                    started_at,
                    c["p"],
                    c["n"],
                    c["e"],
                    tuple(sorted(c["r"])),
                    tuple(sorted(c["j"])),
                )
            )
        overall.append(
            TrendPoint(
                run_id,
                started_at,
                sum(c["p"] for c in counts.values()),
                sum(c["n"] for c in counts.values()),
                sum(c["e"] for c in counts.values()),
                tuple(sorted({r for c in counts.values() for r in c["r"]})),
                tuple(sorted({j for c in counts.values() for j in c["j"]})),
            )
        )
    order = [d for d in STANDARD if d in per] + sorted(d for d in per if d not in STANDARD)
    dims = [DimensionTrend(d, per[d]) for d in order]
    for d in dims:
        _flag(d.points, alpha)
    _flag(overall, alpha)
    return Trend([(r[0], r[1]) for r in ordered], dims, overall, alpha)


def read_live_runs(store: Any, limit: int = 12) -> list[tuple[str, str, list[RubricVerdict]]]:
    """The verdicts of the newest `limit` complete live runs of a `store.RunStore`."""
    runs = store.runs(kind="live", complete=True, limit=limit)
    return [(run.run_id, run.started_at, store.verdicts(run.run_id)) for run in runs]


# --------------------------------------------------------------------------------------------
# The chart


_W, _H, _PAD_L, _PAD_R, _PAD_T, _PAD_B = 360, 170, 44, 12, 26, 34
_COLS = 2


def _panel(
    dim: DimensionTrend, x0: int, y0: int, run_ids: list[str], labels: list[str]
) -> list[str]:
    inner_w, inner_h = _W - _PAD_L - _PAD_R, _H - _PAD_T - _PAD_B
    count = max(len(labels), 1)

    def px(i: int) -> float:
        return x0 + _PAD_L + (inner_w * (i + 0.5) / count)

    def py(rate: float) -> float:
        return y0 + _PAD_T + inner_h * (1 - rate)

    index = {run_id: i for i, run_id in enumerate(run_ids)}
    out = [
        f'<g class="panel"><text x="{x0 + _PAD_L}" y="{y0 + 16}" font-weight="600">'
        f"{escape(dim.dimension)}</text>",
        f'<rect x="{x0 + _PAD_L}" y="{y0 + _PAD_T}" width="{inner_w}" height="{inner_h}" '
        'fill="#fff" stroke="#d0d7de"/>',
    ]
    for tick in (0.0, 0.5, 1.0):
        y = py(tick)
        out.append(
            f'<line x1="{x0 + _PAD_L}" x2="{x0 + _PAD_L + inner_w}" y1="{y:.1f}" '
            f'y2="{y:.1f}" stroke="#eaeef2"/>'
        )
        out.append(
            f'<text x="{x0 + _PAD_L - 4}" y="{y + 4:.1f}" text-anchor="end" '
            f'font-size="10" fill="#57606a">{int(tick * 100)}%</text>'
        )
    pts = [(index[p.run_id], p) for p in dim.points if p.graded and p.run_id in index]
    if len(pts) > 1:
        upper = [f"{px(i):.1f},{py(p.interval[1]):.1f}" for i, p in pts]
        lower = [f"{px(i):.1f},{py(p.interval[0]):.1f}" for i, p in reversed(pts)]
        out.append(
            f'<polygon points="{" ".join(upper + lower)}" fill="#0969da" '
            'fill-opacity="0.15" stroke="none"/>'
        )
        line = " ".join(f"{px(i):.1f},{py(p.rate or 0):.1f}" for i, p in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="#0969da" stroke-width="1.5"/>')
    for i, p in pts:
        low, high = p.interval
        colour = {"down": "#cf222e", "up": "#1a7f37", "changed": "#9a6700"}.get(p.flag, "#0969da")
        radius = 4.5 if p.flag else 3
        out.append(
            f'<line x1="{px(i):.1f}" x2="{px(i):.1f}" y1="{py(low):.1f}" '
            f'y2="{py(high):.1f}" stroke="{colour}" stroke-opacity="0.6"/>'
        )
        title = escape(
            f"{p.run_id}: {100 * (p.rate or 0):.1f}% "
            f"[{100 * low:.1f}–{100 * high:.1f}] n={p.graded}" + (f" {p.flag}" if p.flag else "")
        )
        out.append(
            f'<circle cx="{px(i):.1f}" cy="{py(p.rate or 0):.1f}" r="{radius}" '
            f'fill="{colour}"><title>{title}</title></circle>'
        )
    step = max(1, math.ceil(count / 6))
    for i, label in enumerate(labels):
        if i % step == 0 or i == count - 1:
            out.append(
                f'<text x="{px(i):.1f}" y="{y0 + _H - _PAD_B + 14}" text-anchor="middle" '
                f'font-size="10" fill="#57606a">{escape(label)}</text>'
            )
    out.append("</g>")
    return out


def render_trend_svg(trend: Trend) -> str:
    """The trend as one self-contained SVG: a panel per dimension and one overall, pass rate with
    its 95% band per live run; flagged moves in red (down) or green (up)."""
    labels = [started[:10] for _, started in trend.runs]
    run_ids = [run_id for run_id, _ in trend.runs]
    panels = [*trend.dimensions, DimensionTrend("overall (all dimensions)", trend.overall)]
    rows = math.ceil(len(panels) / _COLS)
    width, height = _COLS * _W, rows * _H + 40
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="system-ui,sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#f6f8fa"/>',
        f'<text x="12" y="20" font-size="14" font-weight="600">Live pass rate per rubric '
        f"dimension ({len(trend.runs)} runs, 95% Wilson band; ±{NOISE_POINTS:g} point is noise)"
        "</text>",
    ]
    for n, dim in enumerate(panels):
        body += _panel(dim, (n % _COLS) * _W, 30 + (n // _COLS) * _H, run_ids, labels)
    body.append("</svg>")
    return "\n".join(body)


def trend_html_section(trend: Trend) -> str:
    """An HTML section (heading, inline SVG, table) the HTML report can embed as it is."""
    rows = []
    for dim in [*trend.dimensions, DimensionTrend("overall", trend.overall)]:
        for pt in dim.points:
            low, high = pt.interval
            rows.append(
                f"<tr><td>{escape(dim.dimension)}</td><td>{escape(pt.run_id)}</td>"
                f'<td class="num">{_pct(pt.rate)}</td>'
                f'<td class="num">{100 * low:.1f}–{100 * high:.1f}</td>'
                f'<td class="num">{pt.graded}</td><td>{escape(pt.flag)}</td></tr>'
            )
    return (
        '<section id="live-trend"><h2>Live trend per rubric dimension</h2>'
        f'<p class="noise">A move of ±{NOISE_POINTS:g} point is noise; flagged moves pass a '
        f"two-proportion test at p &lt; {trend.alpha:g}.</p>"
        + render_trend_svg(trend)
        + "<table><tr><th>dimension</th><th>run</th><th>pass rate</th><th>95% interval</th>"
        "<th>n</th><th>flag</th></tr>" + "".join(rows) + "</table></section>"
    )
