"""The cases and trials of the HTML run report: each case with its outcomes across comparable
runs, and each trial's code graders, judge verdicts, event timeline and final state."""

from __future__ import annotations

import json
from typing import Any

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
from ..results import ENDINGS, GraderResult, RubricVerdict, TrialRecord
from ..runs import RunRecord
from ..stats import format_rate
from ..store.history import PRIORITY_ORDER, History, case_rates, flaky_case
from .html_page import _badge, _json, case_anchor, e


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


def _graders(trial: TrialRecord) -> str:
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


def _verdicts(trial: TrialRecord) -> str:
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


def _timeline(trial: TrialRecord) -> str:
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


def _snapshot(trial: TrialRecord) -> str:
    if trial.snapshot is None:
        return ""
    snap = trial.model_dump(mode="json", include={"snapshot"})["snapshot"]
    return f"<h4>Final state</h4>{_json(snap)}"


def _trial(trial: TrialRecord) -> str:
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
    by_case: dict[str, list[TrialRecord]] = {}
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
            f'<details class="case {state}" id="{e(case_anchor(case_id))}" '
            f'data-search="{e(search)}"'
            f"{' open' if rate.failing else ''}><summary>{badge} <b>{e(case_id)}</b> "
            f"{e(first.priority)} · {e(first.difficulty)} · set {e(first.set_name)} · "
            f"{e(shown)}{_strip_html(run, history, case_id, rate)} "
            f'<span class="note">{e(tags)}</span></summary>'
            + _history_table(run, history, case_id, rate)
            + "".join(_trial(t) for t in trials)
            + "</details>"
        )
    return "".join(out)
