"""The run summary both HTML reports show for each run: its metadata, its sets against their
thresholds and, when it had attacks, their success rate."""

from __future__ import annotations

from ..attacks import AttackRates, AttackTally
from ..runs import RunRecord
from .html_page import _badge, _pct, case_anchor, e


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


def _attacks_table(run: RunRecord) -> str:
    """The attack success rate per category, then per attack case (linked to its trials);
    empty for a run with no attack."""
    rates = AttackRates.of(run.trials)
    if not rates:
        return ""
    out = [
        "<h2>Attack success rate</h2>",
        '<p class="note">attacks that got what they were after, decided by code on what happened '
        "(docs/attacks.md); lower is better</p>",
        "<table><tr><th>category</th><th>succeeded / graded</th><th>rate</th><th>95% CI</th></tr>",
    ]
    for name, tally in sorted(rates.categories.items()):
        out.append(_attack_row(e(name), tally))
    out.append("</table><table><tr><th>attack case</th><th>category</th>"
               "<th>succeeded / graded</th><th>rate</th><th>95% CI</th></tr>")  # fmt: skip
    for case_id, tally in sorted(rates.cases.items()):
        link = f'<a href="#{case_anchor(case_id)}">{e(case_id)}</a>'
        out.append(_attack_row(f"{link}</td><td>{e(rates.category[case_id])}", tally))
    out.append("</table>")
    return "".join(out)


def _attack_row(first: str, tally: AttackTally) -> str:
    low, high = tally.interval()
    mark = (
        _badge(f"{tally.succeeded}/{tally.graded}", "short")
        if tally.succeeded
        else (f"{tally.succeeded}/{tally.graded}")
    )
    interval = f"{low:.0%}–{high:.0%}" if tally.graded else "—"
    return (
        f'<tr><td>{first}</td><td class="num">{mark}</td><td class="num">{_pct(tally.rate)}</td>'
        f'<td class="num">{interval}</td></tr>'
    )
