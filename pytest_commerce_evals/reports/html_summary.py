"""The run summary both HTML reports show for each run: its metadata and its sets against
their thresholds."""

from __future__ import annotations

from ..runs import RunRecord
from .html_page import _badge, _pct, e


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
