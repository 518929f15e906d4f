"""Re-grading a stored run (`--commerce-regrade=RUN`): today's cases (their `expected` and rubric)
and today's judge applied to the transcripts a run recorded, without calling the agent.

The runner's hooks (`_plugin`) call in here: `start` resolves the source run at configure time
and hands its stored trials to the trials (`regrade.STORED_TRIALS`), `plan_items` keeps
the collected trials the source run holds (in its trial count per case), `identity` copies the
source's agent and commit into the new run, and `summary_lines` says what was regraded, what was
added or removed since, and, when the judge changed, how the stored and the new verdicts agree.

The new run is of kind `regrade` (run store schema 3), names its source in
`options["regrade_of"]` and diffs against it (its baseline). Being of its own kind, it is never
the baseline of a later regression run, nor a model's latest run for `--commerce-compare`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import StoreError
from ..results import RubricVerdict, TrialRecord
from ..runs import RunRecord
from ..settings import RUN_CONFIG, run_config, settings
from ..store.paths import store_folder
from ..store.record_file import load_record
from ..store.run_store import RunStore
from .regrade import NOT_REGRADED, STORED_TRIALS

if TYPE_CHECKING:  # the judge's calibration is imported by a regrade that compares judges
    from ..judge.calibration import DimensionAgreement

__all__ = [
    "REGRADE",
    "Regrade",
    "identity",
    "is_regrade",
    "judge_agreement",
    "plan_items",
    "resolve_source",
    "start",
    "summary_lines",
]

REGRADE = pytest.StashKey["Regrade | None"]()
OPTION = "--commerce-regrade"
ALLOWED = (
    "give a stored run's id, a unique prefix of one (8 characters or more), or a run record "
    "JSON file (--commerce-json)"
)


@dataclass
class Regrade:
    """The source run and what collecting today's cases made of it."""

    source: RunRecord
    collected: set[str] = field(default_factory=set)
    added: list[str] = field(default_factory=list)
    missing_trials: list[str] = field(default_factory=list)

    @property
    def stored(self) -> dict[tuple[str, int], TrialRecord]:
        return {(t.case_id, t.trial): t for t in self.source.trials}

    @property
    def source_cases(self) -> list[str]:
        return list(dict.fromkeys(t.case_id for t in self.source.trials))

    @property
    def removed(self) -> list[str]:
        return [c for c in self.source_cases if c not in self.collected]


def is_regrade(record: RunRecord) -> bool:
    """Whether `record` is a regrade run (kind `regrade`, naming its source in
    `options["regrade_of"]`)."""
    return record.kind == "regrade"


# -- configure ----------------------------------------------------------------------------------


def resolve_source(config: pytest.Config, ref: str) -> RunRecord:
    """The run `ref` names (an id, a unique id prefix, or a JSON run record); a `UsageError`
    naming what was given and what is allowed otherwise."""
    ref = ref.strip()
    given = f"{OPTION}={ref!r}"
    path = Path(ref).expanduser()
    try:
        if path.suffix == ".json" or path.is_file():
            if not path.is_absolute():
                path = Path(config.invocation_params.dir) / path
            found = load_record(path)
        else:
            folder = store_folder(config)
            if folder is None:
                raise pytest.UsageError(
                    f"{given}: no run store (--commerce-store=none) to look a run id up in; "
                    "give a run record JSON file (--commerce-json) instead"
                )
            store = RunStore(folder, read_only=True)
            in_store = store.find(ref) if ref else None
            if in_store is None:
                recent = ", ".join(r.run_id for r in store.runs(limit=5)) or "none"
                raise pytest.UsageError(
                    f"{given}: no run with that id or id prefix in {store.path} (recent runs: "
                    f"{recent}); {ALLOWED}"
                )
            found = in_store
    except StoreError as exc:
        raise pytest.UsageError(f"{given}: {exc}; {ALLOWED}") from None
    if found.kind not in ("regression", "regrade"):
        raise pytest.UsageError(
            f"{given}: run {found.run_id} is a {found.kind} run; only a regression (or regrade) "
            "run's trials are cases that can be graded again"
        )
    if not found.trials:
        raise pytest.UsageError(f"{given}: run {found.run_id} recorded no trials to grade")
    return found


def _check_combination(config: pytest.Config, source: RunRecord) -> None:
    found = settings(config)
    for on, flag in (
        (found.compare, "--commerce-compare"),
        (found.live, "--commerce-live"),
        (found.vacuity, "--commerce-vacuity"),
        (found.lint, "--commerce-lint"),
    ):
        if on:
            raise pytest.UsageError(
                f"{OPTION} grades a stored run's transcripts; it cannot be combined with {flag}"
            )
    workers = config.getoption("numprocesses", None)
    if workers not in (None, 0, "0"):
        raise pytest.UsageError(
            f"{OPTION} with -n {workers}: a regrade calls no agent and runs in one process; "
            "the judge's calls already run concurrently (--commerce-concurrency)"
        )
    # the ini's or the environment's trials per case are the project's default, not a request
    asked = found.trials
    stored = source.selection.trials
    if found.origin("trials") == "option" and asked != stored:
        raise pytest.UsageError(
            f"--commerce-trials={asked} with {OPTION}: a regrade grades the trials run "
            f"{source.run_id} stored ({stored} per case); leave --commerce-trials out"
        )


def start(config: pytest.Config, baseline: Any) -> RunRecord | None:
    """Resolve `--commerce-regrade` (controller only) and set the session up to grade the source
    run's stored trials: their number per case, and the trials themselves for the runner.
    Returns the source run, which is the diff's baseline unless `baseline` was named."""
    ref = settings(config).regrade
    config.stash[REGRADE] = None
    if not ref:
        return None
    source = resolve_source(config, ref)
    _check_combination(config, source)
    config.stash[REGRADE] = Regrade(source)
    config.stash[STORED_TRIALS] = {(t.case_id, t.trial): t for t in source.trials}
    # a regrade grades the trials the source stored: the run's selection is derived again
    config.stash[RUN_CONFIG] = replace(run_config(config), trials=source.selection.trials)
    return source if baseline is None else None


def regrade_of(config: pytest.Config) -> Regrade | None:
    return config.stash.get(REGRADE, None)


def identity(source: RunRecord) -> dict[str, Any]:
    """What the new run takes from its source: the agent and the commit that made the
    transcripts, and the source's id (`options["regrade_of"]`)."""
    return {
        "kind": "regrade",
        "git_commit": source.git_commit,
        "git_dirty": source.git_dirty,
        "agent_model": source.agent_model,
        "agent_base_url": source.agent_base_url,
        "options": {"regrade_of": source.run_id},
    }


def header_line(config: pytest.Config) -> str | None:
    plan = regrade_of(config)
    if plan is None:
        return None
    src = plan.source
    return (
        f"commerce-evals: regrading run {src.run_id} ({len(src.trials)} stored trials of "
        f"{len(plan.source_cases)} cases, {src.selection.trials} per case); the agent is not called"
    )


# -- collection ---------------------------------------------------------------------------------


def note_collected(config: pytest.Config, item: pytest.Item) -> None:
    plan = regrade_of(config)
    case = getattr(item, "case", None)
    if plan is not None and case is not None:
        plan.collected.add(case.id)


def plan_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the trials the source run stored; deselect the others (cases added since, or a trial
    the source run did not finish). A trial the source skipped is skipped again: it has no
    transcript."""
    plan = regrade_of(config)
    if plan is None:
        return
    stored = plan.stored
    source_cases = set(plan.source_cases)
    kept, dropped = [], []
    for item in items:
        case = getattr(item, "case", None)
        trial = getattr(item, "trial", None)
        if case is None or trial is None:
            kept.append(item)
            continue
        found = stored.get((case.id, trial))
        if found is None:
            dropped.append(item)
            if case.id not in source_cases:
                if case.id not in plan.added:
                    plan.added.append(case.id)
            else:
                plan.missing_trials.append(f"{case.id} trial {trial}")
            continue
        if found.outcome == "skipped" and not case.skip:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"skipped in run {plan.source.run_id}: no transcript to grade"
                )
            )
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


# -- the summary --------------------------------------------------------------------------------


def _listed(title: str, names: list[str], **markup: bool) -> list[tuple[str, dict[str, bool]]]:
    if not names:
        return []
    return [(f"{title} ({len(names)}): " + ", ".join(names), markup)]


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def changed_definitions(plan: Regrade, trials: list[TrialRecord]) -> dict[str, list[str]]:
    """Per case, the `expected` keys and rubric dimensions graded differently from the source
    run's grading (a key added, removed or with another value; a rubric text changed)."""
    stored = plan.stored
    out: dict[str, list[str]] = {}
    for new in trials:
        old = stored.get((new.case_id, new.trial))
        if old is None or new.error or not (new.grader_results or new.verdicts):
            continue
        if not (old.grader_results or old.verdicts):
            continue
        was = {g.key: _json(g.expected) for g in old.grader_results}
        now = {g.key: _json(g.expected) for g in new.grader_results}
        keys = sorted(k for k in was.keys() | now.keys() if was.get(k) != now.get(k))
        old_rubric = {v.dimension: v.rubric for v in old.verdicts}
        new_rubric = {v.dimension: v.rubric for v in new.verdicts}
        dims = sorted(
            d for d in old_rubric.keys() & new_rubric.keys() if old_rubric[d] != new_rubric[d]
        )
        found = out.setdefault(new.case_id, [])
        for what in [f"expected {k}" for k in keys] + [f"rubric {d}" for d in dims]:
            if what not in found:
                found.append(what)
        if not found:
            del out[new.case_id]
    return out


def _graded(v: RubricVerdict) -> bool:
    return v.outcome in ("pass", "fail") and v.verdict in ("PASS", "FAIL")


def judge_agreement(
    plan: Regrade, trials: list[TrialRecord]
) -> tuple[dict[str, DimensionAgreement], dict[str, int]]:
    """Per rubric dimension, the (stored, new) verdict pairs of the trials regraded by a judge
    whose fingerprint differs from the stored verdict's, and how many verdicts of a dimension
    could not be paired (one side missing, or a judge or endpoint error on either side)."""
    from ..judge.calibration import DimensionAgreement

    stored = plan.stored
    table: dict[str, DimensionAgreement] = {}
    unpaired: dict[str, int] = {}
    for new in trials:
        old = stored.get((new.case_id, new.trial))
        if old is None or not new.verdicts:
            continue
        before = {v.dimension: v for v in old.verdicts}
        for v in new.verdicts:
            was = before.get(v.dimension)
            if was is not None and was.judge_fingerprint == v.judge_fingerprint:
                continue  # the same judge: not a judge change
            row = table.setdefault(v.dimension, DimensionAgreement(v.dimension))
            if was is None or was.verdict is None or v.verdict is None:
                unpaired[v.dimension] = unpaired.get(v.dimension, 0) + 1
                continue
            if not (_graded(was) and _graded(v)):
                unpaired[v.dimension] = unpaired.get(v.dimension, 0) + 1
                continue
            row.pairs.append((was.verdict, v.verdict))
    return dict(sorted(table.items())), unpaired


def _judges(verdicts: list[RubricVerdict]) -> str:
    found = sorted(
        {(v.judge_model or "(unnamed)", (v.judge_fingerprint or "")[:12]) for v in verdicts}
    )
    return ", ".join(f"{m} (fingerprint {p or 'none'})" for m, p in found) or "none"


def _judge_lines(plan: Regrade, trials: list[TrialRecord]) -> list[tuple[str, dict[str, bool]]]:
    new = [v for t in trials for v in t.verdicts]
    if not new:
        return [("judge: no rubric was judged in this regrade", {})]
    regraded = {(t.case_id, t.trial) for t in trials if t.verdicts}
    old = [v for key, t in plan.stored.items() if key in regraded for v in t.verdicts]
    reused = sum(v.reused for v in new)
    store_line: tuple[str, dict[str, bool]] = (
        f"verdict store: {reused} of {len(new)} verdicts reused (the same judge, rubric and "
        f"transcript), {len(new) - reused} asked of the judge",
        {},
    )
    table, unpaired = judge_agreement(plan, trials)
    if not table:
        return [(f"judge unchanged: {_judges(new)}", {}), store_line]
    out: list[tuple[str, dict[str, bool]]] = [
        ("judge changed", {"bold": True}),
        (f"  stored verdicts: {_judges(old)}", {}),
        (f"  new verdicts:    {_judges(new)}", {}),
        ("agreement of the stored and the new verdicts, per rubric dimension:", {}),
    ]
    width = max([len("dimension"), *(len(d) for d in table)])
    out.append(
        (f"  {'dimension':<{width}}  {'n':>4}  {'agreement':>9}  {'kappa':>9}  {'unpaired':>8}", {})
    )
    for name, row in table.items():
        agreement = "n/a" if row.agreement is None else f"{100 * row.agreement:.1f}%"
        kappa = "undefined" if row.kappa is None else f"{row.kappa:.2f}"
        out.append(
            (
                f"  {name:<{width}}  {row.n:>4}  {agreement:>9}  {kappa:>9}  "
                f"{unpaired.get(name, 0):>8}",
                {},
            )
        )
    out.append(
        (
            "  kappa: Cohen's kappa of the paired PASS/FAIL verdicts, undefined when both judges "
            "gave every pair one and the same label; unpaired: a verdict missing or an error on "
            "either side",
            {},
        )
    )
    out.append(store_line)
    return out


def summary_lines(
    config: pytest.Config, trials: list[TrialRecord]
) -> list[tuple[str, dict[str, bool]]]:
    """The regrade's section of the terminal summary; `trials` are the new run's trials."""
    plan = regrade_of(config)
    if plan is None:
        return []
    src = plan.source
    refused = [
        f"{t.case_id} trial {t.trial}: {t.error[len(NOT_REGRADED) + 2 :]}"
        for t in trials
        if t.error and t.error.startswith(NOT_REGRADED)
    ]
    graded = [
        t
        for t in trials
        if t.outcome != "skipped"
        and not _carried(plan, t)
        and not (t.error and t.error.startswith(NOT_REGRADED))
    ]
    out: list[tuple[str, dict[str, bool]]] = [
        (
            f"regrade of run {src.run_id} (started {src.started_at}, agent "
            f"{src.agent_model or '(not named)'}, commit {(src.git_commit or 'no git')[:12]}): "
            f"{len(graded)} of its {len(src.trials)} stored trials graded again with today's "
            "cases and judge; the agent was not called",
            {"bold": True},
        )
    ]
    out += _listed(
        "cases not in the source run (added since, or outside its selection; not run)",
        plan.added,
        yellow=True,
    )
    out += _listed(
        "cases in the source run not collected now (removed since, invalid, or outside this "
        "selection)",
        plan.removed,
        yellow=True,
    )
    out += _listed("stored trials missing from the source run (not run)", plan.missing_trials)
    changed = changed_definitions(plan, trials)
    out += _listed(
        "graded with a definition changed since the source run",
        [f"{c} ({', '.join(what)})" for c, what in changed.items()],
    )
    carried = [f"{t.case_id} trial {t.trial} {t.outcome}" for t in trials if _carried(plan, t)]
    out += _listed("kept as stored: the agent did not finish them in the source run", carried)
    if refused:
        out.append((f"not regraded ({len(refused)}):", {"red": True}))
        out += [(f"  {line}", {"red": True}) for line in refused]
    if graded:
        out += _judge_lines(plan, graded)
    return out


def _carried(plan: Regrade, trial: TrialRecord) -> bool:
    old = plan.stored.get((trial.case_id, trial.trial))
    return (
        old is not None
        and old.snapshot is None
        and trial.outcome == old.outcome
        and trial.error == old.error
        and bool(old.error or old.outcome in ("infra_error", "error"))
    )
