"""The HTML report: one self-contained file (inline CSS and JS, no network) per run or comparison.

Everything taken from a run is escaped: transcripts carry whatever a model or a poisoned fixture
wrote. The script embeds no data; it only filters and expands what the HTML already shows.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import Any

from ..cases.case import DIFFICULTIES, PRIORITIES
from ..costs import CostSummary, Tally
from ..events import (
    CartUpdate,
    ChangeUpdate,
    Event,
    Text,
    ToolCall,
    ToolResult,
    TurnEnd,
    Ui,
)
from ..jsonsafe import json_text
from ..prices import PriceBook, money
from ..results import ENDINGS, GRADED, OUTCOMES, GraderResult, RubricVerdict
from ..stats import format_rate
from ..store.aggregate import case_results
from ..store.compare import ModelComparison
from ..store.cost_regressions import MIN_COST_RISE
from ..store.diff import NOISE_NOTE, DiffEntry, FailingSetDiff
from ..store.history import (
    PRIORITY_ORDER,
    History,
    case_rates,
    describe_run,
    flaky_case,
    overall_rate,
)
from ..store.records import RunRecord, StoredTrial, pass_k_curve

__all__ = ["RunCost", "render_comparison_html", "render_run_html", "write_html"]

TABLE_OUTCOMES = tuple(o for o in OUTCOMES if o != "error")
"""The outcome columns of the by-priority and by-difficulty tables (glue errors are listed with
the trials, not counted in a column)."""
MAX_PAYLOAD_CHARS = 20_000

_CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--mute:#57606a;--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328}
header{background:#24292f;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}
header .sub{color:#d0d7de;font-size:13px}
main{padding:8px 24px 40px;max-width:1400px}
h2{border-bottom:1px solid var(--line);padding-bottom:4px;margin-top:28px}
table{border-collapse:collapse;margin:6px 0}
table.tested{width:100%;max-width:100%}
table.tested td{overflow-wrap:anywhere}
table.tested td:first-child{min-width:14em;max-width:28em}
table.tested td:last-child{width:40%}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--bg)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.meta th{width:170px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;
  color:#fff;background:var(--mute)}
.b-pass,.b-ok{background:var(--ok)}.b-fail,.b-short,.b-blocked{background:var(--bad)}
.b-judge_error,.b-user_error,.b-infra_error,.b-error,.b-incomplete{background:var(--warn)}
.b-skipped{background:#8c959f}.b-flaky,.b-inconclusive{background:var(--warn)}
.strip span{display:inline-block;width:14px;text-align:center;font-weight:700;cursor:help}
.strip .s-ok{color:var(--ok)}.strip .s-fail{color:var(--bad)}
.strip .s-now{text-decoration:underline}
.bar{position:relative;width:220px;height:14px;background:#eaeef2;border-radius:3px}
.bar .fill{position:absolute;left:0;top:0;bottom:0;background:var(--ok);border-radius:3px}
.bar.short .fill{background:var(--bad)}
.bar .mark{position:absolute;top:-3px;bottom:-3px;width:2px;background:#1f2328}
.note{color:var(--mute);font-size:13px}
.noise{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;border-radius:4px}
.controls{position:sticky;top:0;background:#fff;padding:8px 0;border-bottom:1px solid var(--line);
  z-index:2}
.controls input[type=search]{width:260px;padding:3px 6px}
details.case{border:1px solid var(--line);border-radius:6px;margin:8px 0;background:#fff}
details.case>summary{padding:6px 10px;cursor:pointer;background:var(--bg);border-radius:6px}
details.case[open]>summary{border-bottom:1px solid var(--line);border-radius:6px 6px 0 0}
details.trial{margin:8px 12px;border-left:3px solid var(--line);padding-left:10px}
details.trial.fail{border-left-color:var(--bad)}details.trial.pass{border-left-color:var(--ok)}
details.trial>summary{cursor:pointer;font-weight:600}
.hide-passing details.case.passing{display:none}
.hidden{display:none!important}
pre{background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:6px 8px;
  margin:4px 0;
  white-space:pre-wrap;word-break:break-word;max-height:360px;overflow:auto;font-size:12px}
.ev{margin:4px 0;padding:4px 8px;border-radius:4px;border:1px solid var(--line)}
.ev .kind{font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.03em;
  margin-right:6px}
.ev.tool_call{background:#ddf4ff}.ev.tool_result{background:#f6f8fa}
.ev.blocked{background:#ffebe9;border-color:var(--bad)}
.ev.tool_result.error{background:#fff8c5}
.ev.ui{background:#fbefff}.ev.cart_update,.ev.change_update{background:#dafbe1}
.ev.text{background:#fff;border-color:#1f2328}
.ev.turn_end{border:none;border-top:1px dashed var(--line);color:var(--mute);font-size:12px}
.msg{background:#eaeef2;border-radius:4px;padding:4px 8px;margin:8px 0 4px}
.gate{color:var(--bad);font-weight:700}
.ok{color:var(--ok)}.bad{color:var(--bad)}
td.nw,a.nw{white-space:nowrap}
td.json{min-width:200px;max-width:420px}
.cols{display:flex;gap:24px;flex-wrap:wrap}.cols>div{flex:1;min-width:420px}
svg.chart{display:block;margin:6px 0;font-size:12px}
svg.chart text{fill:#1f2328}svg.chart .in{fill:#0969da}svg.chart .out{fill:#d4a72c}
"""

_JS = """
(function () {
  var body = document.body;
  var search = document.getElementById('case-filter');
  var failing = document.getElementById('failing-only');
  var cases = Array.prototype.slice.call(document.querySelectorAll('details.case'));
  function apply() {
    var q = search ? search.value.trim().toLowerCase() : '';
    var shown = 0;
    cases.forEach(function (el) {
      var hit = !q || (el.getAttribute('data-search') || '').indexOf(q) !== -1;
      el.classList.toggle('hidden', !hit);
      if (hit && !(failing && failing.checked && el.classList.contains('passing'))) shown++;
    });
    if (failing) body.classList.toggle('hide-passing', failing.checked);
    var count = document.getElementById('shown-count');
    if (count) count.textContent = String(shown);
  }
  function expand(open) {
    document.querySelectorAll('details.case, details.trial').forEach(function (el) {
      if (!el.classList.contains('hidden')) el.open = open;
    });
  }
  if (search) search.addEventListener('input', apply);
  if (failing) failing.addEventListener('change', apply);
  var more = document.getElementById('expand-all');
  var less = document.getElementById('collapse-all');
  if (more) more.addEventListener('click', function () { expand(true); });
  if (less) less.addEventListener('click', function () { expand(false); });
  if (location.hash) {
    var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target && target.tagName === 'DETAILS') target.open = true;
  }
  apply();
  document.documentElement.setAttribute('data-report-ready', '1');
})();
"""


def e(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def _anchor(case_id: str) -> str:
    return "case-" + re.sub(r"[^A-Za-z0-9_-]", "_", case_id)


def _json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        if len(text) > 100:  # short payloads read best on one line; long ones indented
            text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (RecursionError, TypeError, ValueError):
        # nested past what json.dumps recurses into, or keys of mixed types that do not sort
        text = json_text(value)
    if len(text) > MAX_PAYLOAD_CHARS:
        cut = len(text) - MAX_PAYLOAD_CHARS
        text = (
            text[:MAX_PAYLOAD_CHARS]
            + f"\n… ({cut} more characters not shown; the JSON record has them)"
        )
    return f"<pre>{e(text)}</pre>"


def _badge(label: str, kind: str | None = None) -> str:
    return f'<span class="badge b-{e(kind or label)}">{e(label)}</span>'


def _pct(x: float | None) -> str:
    return f"{x:.1%}" if x is not None else "n/a"


def _page(title: str, subtitle: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>{e(title)}</h1><div class="sub">{e(subtitle)}</div></header>'
        f"<main>{body}</main><script>{_JS}</script></body></html>\n"
    )


# -- run summary ------------------------------------------------------------------------------


def _meta_table(run: RunRecord) -> str:
    commit = run.git_commit or "not a git checkout"
    if run.git_dirty:
        commit += " (uncommitted changes)"
    rows = [
        ("run", run.run_id),
        ("kind", run.kind),
        ("started / ended (UTC)", f"{run.started_at} / {run.ended_at or '—'}"),
        ("state", None),
        ("exit status", run.exit_status),
        ("git commit", commit),
        (
            "agent model",
            f"{run.agent_model or 'not named (--commerce-agent)'}"
            + (f" at {run.agent_base_url}" if run.agent_base_url else ""),
        ),
        ("judge model", run.judge_model or "no rubric judged"),
        ("judge fingerprints", ", ".join(run.judge_fingerprints) or "—"),
        ("selection", run.selection.describe()),
        ("trials recorded", len(run.trials)),
    ]
    out = ['<table class="meta">']
    for name, value in rows:
        if name == "state":
            cell = (
                _badge("complete", "ok")
                if run.complete
                else (
                    _badge("incomplete", "incomplete")
                    + ' <span class="note">interrupted or still running: only finished trials '
                    "are here</span>"
                )
            )
        else:
            cell = e(value)
        out.append(f"<tr><th>{e(name)}</th><td>{cell}</td></tr>")
    out.append("</table>")
    return "".join(out)


def _sets_table(run: RunRecord) -> str:
    if not run.sets:
        return '<p class="note">no sets recorded</p>'
    out = [
        "<table><tr><th>set</th><th>passed / graded</th><th>rate</th><th>threshold</th>"
        "<th></th><th>verdict</th><th>other outcomes</th></tr>"
    ]
    for s in run.sets:
        rate = s.rate or 0.0
        short = "" if s.met else " short"
        bar = (
            f'<div class="bar{short}"><div class="fill" style="width:{rate * 100:.1f}%"></div>'
            f'<div class="mark" style="left:{s.threshold * 100:.1f}%" '
            f'title="threshold {s.threshold:.0%}"></div></div>'
        )
        if s.verdict == "ok":
            verdict = _badge("ok")
        elif s.verdict == "skipped":
            verdict = _badge("skip", "skipped") + " every case skipped"
        elif s.verdict == "undecided":
            verdict = _badge("UNDECIDED", "short") + " nothing graded"
        else:
            verdict = (
                _badge("SHORT", "short") + f" by {(s.threshold - (s.rate or 0.0)) * 100:.1f} points"
            )
        other = ", ".join(f"{n} {o}" for o, n in sorted(s.other.items())) or "—"
        out.append(
            f'<tr><td>{e(s.name)}</td><td class="num">{s.passed}/{s.graded}</td>'
            f'<td class="num">{_pct(s.rate)}</td><td class="num">{s.threshold:.0%}</td>'
            f"<td>{bar}</td><td>{verdict}</td><td>{e(other)}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _by_table(run: RunRecord, attr: str, order: tuple[str, ...]) -> str:
    groups: dict[str, Counter] = {}
    for t in run.trials:
        groups.setdefault(getattr(t, attr), Counter())[t.outcome] += 1
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


# -- diff and comparison ----------------------------------------------------------------------


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
            name = f'<a href="#{e(_anchor(entry.case_id))}">{name}</a>'
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


def _tested_rows(entries: list[DiffEntry], decides: bool = False) -> str:
    if not entries:
        return '<p class="note">none</p>'
    out = [
        '<table class="tested"><tr><th>case</th><th>priority</th><th>difficulty</th>'
        "<th>baseline (95% CI)</th><th>this run (95% CI)</th><th>p</th><th>failures</th></tr>"
    ]
    for entry in entries:
        name = f'<a class="nw" href="#{e(_anchor(entry.case_id))}">{e(entry.case_id)}</a>'
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
        f'<tr><td><a href="#{_anchor(r.case_id)}">{e(r.case_id)}</a></td><td>{e(r.priority)}</td>'
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


def _strip_html(run: RunRecord, history: History | None, case_id: str, rate: Any) -> str:
    """The case's outcome per comparable run, oldest first, each mark titled with the run's
    date, agent model, commit and counts; the current run underlined."""
    if history is None:
        return ""
    runs = [(p.mark, p.describe(), False) for p in history.past(case_id)[: history.max_runs - 1]]
    if rate.graded:
        mark = "✓" if rate.passed == rate.graded else "✗"
        commit = (run.git_commit or "no git")[:10]
        now = (
            f"{run.started_at[:16].replace('T', ' ')} · this run {run.run_id} · agent "
            f"{run.agent_model or 'not named'} · commit {commit} · {rate.passed}/{rate.graded}"
        )
        runs.insert(0, (mark, now, True))
    if len(runs) < 2:
        return ""
    spans = "".join(
        f'<span class="{"s-ok" if m == "✓" else "s-fail"}{" s-now" if cur else ""}" '
        f'title="{e(title)}">{m}</span>'
        for m, title, cur in reversed(runs)
    )
    return f' <span class="strip" title="outcome per comparable run, oldest first">{spans}</span>'


def _history_table(run: RunRecord, history: History | None, case_id: str, rate: Any) -> str:
    """The case's outcomes across the store's recent comparable runs, newest first: date, run,
    agent model, commit and counts, the same runs as its strip."""
    if history is None:
        return ""
    rows = []
    if rate.graded:
        rows.append(
            (
                run.started_at,
                f"{run.run_id} (this run)",
                run.agent_model,
                run.git_commit,
                rate.passed,
                rate.graded,
            )
        )
    rows += [
        (p.started_at, p.run_id, p.agent_model, p.git_commit, p.passed, p.graded)
        for p in history.past(case_id)[: history.max_runs - 1]
    ]
    if len(rows) < 2:
        return ""
    body = "".join(
        f"<tr><td>{e(started[:16].replace('T', ' '))}</td><td>{e(run_id)}</td>"
        f"<td>{e(model or 'not named')}</td><td>{e((commit or 'no git')[:10])}</td>"
        f'<td class="num">{passed}/{graded}</td>'
        f"<td>{_badge('pass') if passed == graded else _badge('fail')}</td></tr>"
        for started, run_id, model, commit, passed, graded in rows
    )
    return (
        '<div class="history"><b>Outcomes across comparable runs</b> (newest first)'
        "<table><tr><th>started (UTC)</th><th>run</th><th>agent</th><th>commit</th>"
        f"<th>passed / graded</th><th>outcome</th></tr>{body}</table></div>"
    )


# -- cases and trials -------------------------------------------------------------------------


def _event(ev: Event, turn: int | None = None) -> str:
    """One event of the timeline; `turn` is the 1-based number the timeline's header gave the
    turn (a `turn_end` event's own `turn` field is the agent's, often 0-based)."""
    if isinstance(ev, ToolCall):
        return (
            f'<div class="ev tool_call"><span class="kind">tool call</span><b>'
            f"{e(ev.name)}</b>"
            f' <span class="note">{e(ev.call_id)}</span>'
            f"{_json(ev.arguments)}</div>"
        )
    if isinstance(ev, ToolResult):
        status = ev.status
        cls = {"blocked": "blocked", "error": "error"}.get(status, "")
        head = (
            f'<span class="kind">tool result</span>{e(ev.name or "")} '
            f"{_badge(status, status if status != 'ok' else 'pass')}"
        )
        if status == "blocked":
            head += f' <span class="gate">BLOCKED by gate: {e(ev.reason)}</span>'
        elif ev.reason:
            head += f" reason: {e(ev.reason)}"
        body = _json(ev.result) if ev.result is not None else ""
        return (
            f'<div class="ev tool_result {cls}">{head} <span class="note">'
            f"{e(ev.call_id)}</span>{body}</div>"
        )
    if isinstance(ev, Ui):
        return (
            f'<div class="ev ui"><span class="kind">ui component</span><b>'
            f"{e(ev.component)}</b>"
            f"{_json(ev.payload)}</div>"
        )
    if isinstance(ev, CartUpdate):
        lines = (
            ", ".join(
                f"{i.product_id}{'/' + str(i.variant) if i.variant else ''} ×{i.quantity}"
                for i in ev.items
            )
            or "empty"
        )
        return f'<div class="ev cart_update"><span class="kind">cart</span>{e(lines)}</div>'
    if isinstance(ev, ChangeUpdate):
        rows = "".join(
            f"<li>{e(c.kind)} {e(c.product_id or '')} — {e(c.status)}"
            + (" " + e(json.dumps(c.fields, ensure_ascii=False)) if c.fields else "")
            + "</li>"
            for c in ev.changes
        )
        return (
            f'<div class="ev change_update"><span class="kind">staged changes</span><ul>'
            f"{rows}</ul></div>"
        )
    if isinstance(ev, Text):
        return f'<div class="ev text"><span class="kind">reply</span><pre>{e(ev.text)}</pre></div>'
    if isinstance(ev, TurnEnd):
        number = turn if turn is not None else ev.turn
        return f'<div class="ev turn_end">end of turn {e(number)}</div>'
    kind = getattr(ev, "type", "?")
    return f'<div class="ev"><span class="kind">{e(kind)}</span>{_json(ev)}</div>'


def _graders(trial: StoredTrial) -> str:
    if not trial.grader_results:
        return ""
    out = [
        "<h4>Code graders</h4><table><tr><th></th><th>key</th><th>expected</th>"
        "<th>observed</th><th>message</th></tr>"
    ]
    for g in trial.grader_results:
        out.append(_grader_row(g))
    out.append("</table>")
    return "".join(out)


def _grader_row(g: GraderResult) -> str:
    mark = '<span class="ok">✓</span>' if g.passed else '<span class="bad">✗</span>'
    return (
        f"<tr><td>{mark}</td><td>{e(g.key)}</td>"
        f'<td class="json">{_json(g.expected)}</td>'
        f'<td class="json">{_json(g.observed)}</td>'
        f"<td>{e(g.message)}</td></tr>"
    )


def _verdicts(trial: StoredTrial) -> str:
    if not trial.verdicts:
        return ""
    out = [
        "<h4>Judge verdicts</h4><table><tr><th>dimension</th><th>verdict</th><th>reasoning</th>"
        "<th>judge</th><th>transcript</th></tr>"
    ]
    for v in trial.verdicts:
        out.append(_verdict_row(v))
    out.append("</table>")
    return "".join(out)


def _verdict_row(v: RubricVerdict) -> str:
    label = (v.verdict or v.outcome) + (" (advisory)" if v.advisory else "")
    reasoning = v.reasoning or v.error or ""
    if v.truncated_chars or v.truncated_turns:
        cut = (
            f'<span class="bad">cut from the start: {e(v.truncated_turns)} turns, '
            f"{e(v.truncated_chars)} characters dropped</span>"
        )
    else:
        cut = "complete"
    reused = " (stored verdict reused)" if v.reused else ""
    judge = (
        f'{e(v.judge_model or "")}<br><span class="note">judge '
        f"{e((v.judge_fingerprint or '')[:12])} · rubric "
        f"{e((v.rubric_fingerprint or '')[:12])}{e(reused)}</span>"
    )
    trust = f'<br><span class="note">{e(v.calibration)}</span>' if v.calibration else ""
    if v.advisory:
        trust += (
            f'<br><span class="note">advisory, does not decide the outcome: {e(v.advisory)}</span>'
        )
    return (
        f'<tr><td>{e(v.dimension)}<br><span class="note">{e(v.rubric)}</span>'
        f"</td>"
        f"<td>{_badge(label, v.outcome)}{trust}</td><td>{e(reasoning)}</td><td>{judge}</td><td>"
        f"{cut}</td></tr>"
    )


def _timeline(trial: StoredTrial) -> str:
    if not trial.turns:
        return ""
    out = ["<h4>Event timeline</h4>"]
    last = len(trial.turns) - 1
    whole = trial.ended is not None  # a conversation with a simulated customer: every turn read
    cached = set(trial.cached)
    for n, events in enumerate(trial.turns):
        message = trial.messages[n] if n < len(trial.messages) else None
        graded = " (graded)" if n == last and last > 0 and not whole else ""
        if message is not None:
            out.append(
                f'<div class="msg"><b>turn {n + 1}{graded}:</b>{_from_cache(n, cached)} '
                f"{e(message)}</div>"
            )
        elif len(trial.turns) > 1:
            out.append(f'<div class="msg"><b>turn {n + 1}{graded}</b></div>')
        out.extend(_event(ev, n + 1) for ev in events)
    for n, message in enumerate(trial.messages[len(trial.turns) :], len(trial.turns)):
        # the customer's closing message
        out.append(
            f'<div class="msg"><b>customer, closing:</b>{_from_cache(n, cached)} {e(message)}</div>'
        )
    if trial.ended is not None:
        why = ENDINGS.get(trial.ended, trial.ended)
        out.append(
            f'<div class="note">conversation ended: {e(why)} ({len(trial.turns)} turns)</div>'
        )
    return "".join(out)


def _from_cache(n: int, cached: set[int]) -> str:
    """The mark of a customer message the reply cache answered rather than the model."""
    if n not in cached:
        return ""
    return (
        ' <span class="note cached" title="replayed from the reply cache '
        '(--commerce-judge-store), not generated in this run">(from the reply cache)</span>'
    )


def _snapshot(trial: StoredTrial) -> str:
    if trial.snapshot is None:
        return ""
    snap = trial.model_dump(mode="json", include={"snapshot"})["snapshot"]
    return f"<h4>Final state</h4>{_json(snap)}"


def _trial(trial: StoredTrial) -> str:
    failing = trial.outcome != "pass"
    where = f"{trial.file}:{trial.line}" if trial.file else ""
    head = (
        f"<summary>trial {trial.trial}/{trial.trials} {_badge(trial.outcome)} "
        f'<span class="note">{trial.duration_s:.2f}s {e(where)}</span></summary>'
    )
    parts = [head]
    if trial.error:
        parts.append(f"<h4>Error</h4><pre>{e(trial.error)}</pre>")
    parts += [_graders(trial), _verdicts(trial), _timeline(trial), _snapshot(trial)]
    open_ = " open" if failing and trial.outcome != "skipped" else ""
    return f'<details class="trial {e(trial.outcome)}"{open_}>{"".join(parts)}</details>'


def _cases_section(run: RunRecord, history: History | None = None) -> str:
    rates = case_rates(run)
    by_case: dict[str, list[StoredTrial]] = {}
    for t in run.trials:
        by_case.setdefault(t.case_id, []).append(t)
    order = sorted(
        by_case, key=lambda c: (not rates[c].failing, PRIORITY_ORDER.get(rates[c].priority, 9), c)
    )
    out = [
        '<h2 id="cases">Cases and trials</h2><div class="controls">'
        '<input type="search" id="case-filter" placeholder="filter by id, tag, set, priority">'
        ' <label><input type="checkbox" id="failing-only"> failing only</label>'
        ' <button type="button" id="expand-all">expand all</button>'
        ' <button type="button" id="collapse-all">collapse all</button>'
        f' <span class="note"><span id="shown-count">{len(order)}</span> of {len(order)} cases '
        f"shown</span></div>"
    ]
    for case_id in order:
        trials = sorted(by_case[case_id], key=lambda t: t.trial)
        rate = rates[case_id]
        first = trials[0]
        state = "failing" if rate.failing else ("passing" if rate.failing is False else "ungraded")
        badge = (
            _badge("fail")
            if rate.failing
            else (_badge("pass") if rate.failing is False else _badge("not graded", "skipped"))
        )
        search = " ".join(
            [case_id, first.set_name, first.priority, first.difficulty, *first.tags]
        ).lower()
        tags = " ".join(f"#{t}" for t in first.tags)
        shown = (
            format_rate(rate.passed, rate.graded) + " (95% CI)" if rate.graded else rate.describe()
        )
        if flaky_case(history, case_id, rate):
            badge += " " + _badge("flaky")
        out.append(
            f'<details class="case {state}" id="{e(_anchor(case_id))}" data-search="{e(search)}"'
            f"{' open' if rate.failing else ''}><summary>{badge} <b>{e(case_id)}</b> "
            f"{e(first.priority)} · {e(first.difficulty)} · set {e(first.set_name)} · "
            f"{e(shown)}{_strip_html(run, history, case_id, rate)} "
            f'<span class="note">{e(tags)}</span></summary>'
            + _history_table(run, history, case_id, rate)
            + "".join(_trial(t) for t in trials)
            + "</details>"
        )
    return "".join(out)


# -- cost -------------------------------------------------------------------------------------

PURPOSE_LABELS = (("agent", "agent"), ("judge", "judge"), ("user", "simulated customer"))
CHART_BARS = 15


def _int(value: int | None) -> str:
    return "not reported" if value is None else f"{value:,}"


def _per_trial_money(t: Tally) -> str:
    cost = t.per_trial()["cost_usd"]
    return "unknown" if cost is None else money(Decimal(cost))


def _group_money(tallies: Sequence[Tally]) -> str:
    costs = [t.cost for t in tallies if t.cost is not None]
    unpriced = sum(t.unpriced for t in tallies)
    if not costs and not unpriced:
        return "—"
    return money(sum(costs, Decimal(0)) if costs else None, unpriced)


def _has_usage(trials: Sequence[StoredTrial]) -> bool:
    return any(t.calls or t.turn_s for t in trials)


def _agent_time(trials: Sequence[StoredTrial]) -> tuple[float | None, int]:
    """The agent's wall time over its turns, averaged over the trials that timed their turns
    (None when none did), and how many did."""
    timed = [sum(t.turn_s) for t in trials if t.turn_s]
    return (sum(timed) / len(timed) if timed else None), len(timed)


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


def _seconds(value: float | None) -> str:
    """A latency, or "not reported" when a call did not report one (never 0)."""
    return "not reported" if value is None else f"{value:.2f} s"


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


@dataclass
class RunCost:
    """One side of a comparison: its graded pass rate and what its trials cost."""

    label: str
    passed: int
    graded: int
    summary: CostSummary
    agent_s: float | None

    @classmethod
    def of(cls, label: str, run: RunRecord, prices: PriceBook) -> RunCost:
        graded = [t for t in run.trials if t.outcome in GRADED]
        return cls(
            label,
            sum(t.outcome == "pass" for t in graded),
            len(graded),
            CostSummary.of(run.trials, prices),
            _agent_time(run.trials)[0],
        )

    @property
    def agent(self) -> Tally:
        return self.summary.run["agent"]

    def rate(self) -> str:
        if not self.graded:
            return "n/a (nothing graded)"
        return f"{self.passed / self.graded:.1%} ({self.passed}/{self.graded})"

    def cells(self) -> dict[str, str]:
        """The side's figures as the terminal and the HTML show them."""
        per = self.agent.per_trial()
        total, unpriced = self.summary.total()
        reported = per["calls"] is not None

        def other(purpose: str) -> str:
            t = self.summary.run[purpose]  # type: ignore[index]
            return money(t.cost, t.unpriced) if t.reported else "no calls"

        return {
            "pass rate": self.rate(),
            "calls/trial": f"{per['calls']:.1f}" if reported else "not reported",
            "tokens/trial": (
                f"{per['tokens']:,.0f}"
                if reported and per["tokens"] is not None
                else "not reported"
            ),
            "cost/trial": _per_trial_money(self.agent) if reported else "not reported",
            "latency/trial": _seconds(per["latency_s"]) if reported else "not reported",
            "agent time/trial": (
                "not reported" if self.agent_s is None else f"{self.agent_s:.2f} s"
            ),
            "judge": other("judge"),
            "customer": other("user"),
            "total": money(total, unpriced) if total is not None or unpriced else "unknown",
        }


COST_COLUMNS = (
    "pass rate",
    "calls/trial",
    "tokens/trial",
    "cost/trial",
    "latency/trial",
    "agent time/trial",
    "judge",
    "customer",
    "total",
)
"""The comparison's pass-rate-and-cost columns: the agent's means per trial (over the trials that
reported its calls), then the run's judge, customer and total money."""


def cost_ratios(a: RunCost, b: RunCost) -> str:
    """How B's agent compares with A's per trial: `B uses 2.10× A's tokens per trial, …`."""
    pa, pb = a.agent.per_trial(), b.agent.per_trial()
    parts = []
    ta, tb = pa["tokens"], pb["tokens"]
    if ta is None or tb is None:
        missing = " and ".join(s for s, v in (("A", ta), ("B", tb)) if v is None)
        parts.append(f"tokens per trial not reported under {missing}: not compared")
    elif not ta:
        parts.append(f"A used no tokens per trial, B {tb:,.0f}")
    else:
        parts.append(f"B uses {tb / ta:.2f}× A's agent tokens per trial")
    ca, cb = pa["cost_usd"], pb["cost_usd"]
    if ca is not None and cb is not None and Decimal(ca):
        parts.append(f"{Decimal(cb) / Decimal(ca):.2f}× its agent cost per trial")
    elif pa["calls"] is not None and pb["calls"] is not None:
        parts.append("agent cost per trial not compared (a price is unknown)")
    la, lb = a.agent_s, b.agent_s
    # below a hundredth of a second both agents did no work worth a ratio (scripted agents)
    if la is not None and lb is not None and max(la, lb) >= 0.01 and la > 0:
        parts.append(f"{lb / la:.2f}× its agent time per trial")
    return "; ".join(parts)


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


# -- pages ------------------------------------------------------------------------------------


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


def render_comparison_html(comparison: ModelComparison, prices: PriceBook | None = None) -> str:
    """Two runs' failing sets side by side, then their pass rates and cost (`prices`)."""
    a, b = comparison.a, comparison.b
    body = ['<div class="cols">']
    for side, run in (("A", a), ("B", b)):
        body.append(
            f"<div><h2>{side}: {e(run.agent_model or run.run_id)}</h2>{_meta_table(run)}"
            f"<h3>Sets</h3>{_sets_table(run)}</div>"
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


def write_html(text: str, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="backslashreplace")  # never a lone surrogate
    return path
