"""The merge step of a run recorded in shards (`pytest --commerce-merge=RUN`, docs/shards.md):
the one gate over every shard's trials.

It reads the run's plan, shards and trials from the store and plays each stored trial's reports
through the session as the trial's own run reported them: the runner's summary and exit status,
`--junitxml`, and then the recorder's baseline, failing-set diff, JSON record and HTML report
see the same trials one runner would have recorded, so they decide the same. A shard that never
began, did not end or ended interrupted makes the run incomplete and fails the gate, named; a
shard that failed on its own errors fails it too.

Why a separate step, not the last shard to finish: a shard cannot tell whether another is still
queued for a runner, and a CI system runs a job after all others have ended (GitHub Actions'
`needs:` with `if: !cancelled()`); the merge can also be run again, and is the one writer of the
run's verdict.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest

from ..compat import line_writer
from ..errors import StoreError
from ..jsonsafe import printable
from ..results import NOT_GRADED, TrialRecord, attach_payload
from ..settings import settings
from ..store.identity import ci_run_id
from ..store.recorder import RECORDER
from ..store.run_store import RunStore
from ..store.shard_recorder import MergedRecorder
from ..store.shards import ShardRow, check_against_plan, read_plan, shard_rows
from .state import RUN_PROBLEMS

__all__ = ["merge_main", "shard_problems"]


def _shown(text: str) -> str:
    """A shard's own words on one terminal line: control characters (ESC, BEL, DEL, C1, line
    breaks) written as escapes, never sent raw."""
    return printable("".join(c if c.isprintable() or c == " " else ascii(c)[1:-1] for c in text))


def shard_problems(
    total: int, plan: dict[str, int], rows: list[ShardRow], stored: Counter[int] | None = None
) -> list[str]:
    """Why the run cannot pass beyond its sets, one line per shard: never began, did not end,
    ended incomplete, exited on its own errors, or ended with other trials than the store holds
    of its cases (`stored`: trials stored per shard, by the plan)."""
    by_number = {r.shard: r for r in rows}
    out = []
    for k in range(1, total + 1):
        cases = sum(1 for v in plan.values() if v == k)
        row = by_number.get(k)
        name = f"shard {k}/{total} ({cases} case(s))"
        if row is None:
            out.append(f"{name} never began: none of its trials is stored")
        elif row.ended_at is None:
            out.append(
                f"{name} began at {_shown(row.started_at)} and never ended (still running, or "
                f"its runner was lost): {row.trials or 'some'} of its trials may be stored"
            )
        elif not row.complete:
            out.append(
                f"{name} ended incomplete (exit status {row.exit_status}: interrupted or stopped "
                f"early): only its {row.trials} finished trial(s) are stored"
            )
        else:
            if stored is not None and stored[k] != row.trials:
                out.append(
                    f"{name} ended with {row.trials} trial(s), and the store holds {stored[k]} "
                    "of its cases' trials: trials were lost or added after it ended; run it again"
                )
            if row.exit_status not in (0, None):
                said = "; ".join(_shown(e) for e in row.errors[:3]) or "see its log"
                out.append(f"{name} failed on its own (exit status {row.exit_status}): {said}")
    return out


def _nodeid(record: TrialRecord) -> str:
    name = record.case_id if record.trials == 1 else f"{record.case_id}[trial-{record.trial}]"
    return f"{record.file}::{name}" if record.file else name


def _replay(config: pytest.Config, record: TrialRecord) -> None:
    """The reports a trial's own run sent, with its record: setup, call and teardown."""
    nodeid = _nodeid(record)
    location = (record.file or nodeid, (record.line or 1) - 1, record.case_id)
    outcome = record.outcome
    text = "\n".join(record.failures) or record.error or outcome
    if outcome == "skipped":
        phases: list[tuple[str, str, Any]] = [
            ("setup", "skipped", (location[0], location[1] + 1, f"Skipped: {text}")),
            ("teardown", "passed", None),
        ]
    else:
        failed = outcome == "fail" or outcome in NOT_GRADED
        phases = [
            ("setup", "passed", None),
            ("call", "failed" if failed else "passed", text if failed else None),
            ("teardown", "passed", None),
        ]
    config.hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    for when, result, longrepr in phases:
        report = pytest.TestReport(
            nodeid=nodeid,
            location=location,
            keywords={},
            outcome=result,  # type: ignore[arg-type]
            longrepr=longrepr,
            when=when,  # type: ignore[arg-type]
            duration=record.duration_s if when == "call" else 0.0,
            user_properties=[("outcome", outcome)] if when == "teardown" else [],
        )
        if when == ("setup" if outcome == "skipped" else "call"):
            attach_payload(
                report,
                "trial",
                outcome=outcome,
                record=record,
                rubric_not_judged=False,
                agent_endpoint=None,
                decided=None,
            )
        config.hook.pytest_runtest_logreport(report=report)
    config.hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def _not_started(config: pytest.Config, rows: list[ShardRow]) -> None:
    """The trials a shard's budget left unstarted, counted as its own run counted them."""
    for row in rows:
        for left in row.not_started:
            report = pytest.TestReport(
                nodeid=f"{left.get('case_id', '')}[not started]",
                location=("", None, ""),
                keywords={},
                outcome="skipped",
                longrepr=("", 0, "Skipped: not started (the shard's budget was spent)"),
                when="setup",
            )
            attach_payload(
                report,
                "not_started",
                reason=f"shard {row.shard}'s budget was spent",
                case_id=str(left.get("case_id", "")),
                trial=int(left.get("trial", 0)),
                set_name=str(left.get("set_name", "")),
                threshold=float(left.get("threshold", 0.0)),
            )
            config.hook.pytest_runtest_logreport(report=report)


def _run_id(config: pytest.Config, write: Any) -> str | None:
    ref = str(settings(config).merge).strip()
    if ref != "ci":
        return ref
    found = ci_run_id(os.environ)
    if found is None:
        write(
            "commerce-evals: --commerce-merge=ci reads the CI run's id, and no GitHub Actions, "
            "GitLab CI or Buildkite run is here: give the run id (--commerce-merge=RUN)",
            red=True,
        )
        return None
    return found[0]


def merge_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    write = line_writer(config)
    run_id = _run_id(config, write)
    target = settings(config).store
    if run_id is None:
        return pytest.ExitCode.USAGE_ERROR
    if target is None:
        write("commerce-evals: --commerce-merge reads the run store; it is off", red=True)
        return pytest.ExitCode.USAGE_ERROR
    try:
        store = RunStore(target)
        config.add_cleanup(store.close)
        found = read_plan(store, run_id)
        if found is None:
            exists = store.find(run_id) is not None
            recent = ", ".join(r.run_id for r in store.runs(limit=5)) or "none"
            write(
                f"commerce-evals: --commerce-merge={run_id}: "
                + (
                    "that run was not recorded in shards (it has its own verdict)"
                    if exists
                    else f"no run of that id in {store.path} (recent runs: {recent}); no shard "
                    "of it has collected its cases yet"
                ),
                red=True,
            )
            return pytest.ExitCode.USAGE_ERROR
        total, plan = found
        rows = shard_rows(store, run_id)
        run = store.load_run(run_id)
        check_against_plan(store.path, run_id, total, plan, rows, {t.case_id for t in run.trials})
    except StoreError as exc:
        write(f"commerce-evals: --commerce-merge: {exc}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    stored = Counter(plan[c] for c, _ in {(t.case_id, t.trial) for t in run.trials})
    problems = shard_problems(total, plan, rows, stored)
    write(
        f"commerce-evals: merging run {run_id} from {store.path}: {len(run.trials)} trials of "
        f"{len(plan)} case(s) in {total} shard(s)",
        bold=True,
    )
    for row in rows:
        state = "finished" if row.complete else "INCOMPLETE"
        write(
            f"  shard {row.shard}/{total}: {row.trials} trials, {state}, exit status "
            f"{row.exit_status}, {_shown(row.started_at)} to "
            f"{_shown(row.ended_at or '(not ended)')}"
        )
    session.testscollected = len(run.trials)
    for record in run.trials:
        _replay(config, record)
    recorder = MergedRecorder(config, store, run)
    recorder.incomplete = [p for p in problems if "failed on its own" not in p]
    config.stash[RECORDER] = recorder
    config.stash[RUN_PROBLEMS] = problems
    _not_started(config, rows)
    return pytest.ExitCode.TESTS_FAILED if problems else pytest.ExitCode.OK
