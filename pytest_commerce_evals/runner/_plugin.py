"""The runner's hooks: trials overlap on the scheduler, reports carry each trial's record, the
terminal summary, JUnit outcomes and the exit status from the sets."""

from __future__ import annotations

import gc
from typing import Any, cast

import pytest

from ..compat import capture_by_sys, case_scheduler, junit_error, run_session, xdist_queued
from ..jsonsafe import printable
from ..models.clients import AGENT_USED
from ..models.pricing import price_book
from ..results import NOT_GRADED as UNGRADED_OUTCOMES
from ..results import Outcome, Stopping, TrialRecord, attach_payload, report_payload
from ..settings import run_config, settings
from ..store.recorder import BASELINE, BASELINE_IS_SOURCE, RECORDER, problem
from . import regrade_plan
from ._scheduler import SCHEDULER, TrialScheduler, resolve_auto
from .adaptive import ADAPTIVE, AdaptiveRun, adaptive_run
from .items import CaseItem, InvalidCase, agent_endpoint_data
from .progress import ProgressPlugin, progress_for
from .regrade import stored_trial
from .shards import select_shard, shard_gate, shard_verdict_line
from .spending import run_spend
from .state import NON_CASE_FAILURES, NOT_GRADED, RUN_PROBLEMS, SUMMARY, TRIAL_RAN
from .summary import Summary


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        _start_regrade(config)
    config.stash[SUMMARY] = Summary(adaptive=run_config(config).adaptive, prices=price_book(config))
    config.stash[NON_CASE_FAILURES] = []
    config.stash[NOT_GRADED] = []
    if run_config(config).adaptive is not None and not hasattr(config, "workerinput"):
        group_by_case(config)


# -- regrading a stored run (`--commerce-regrade`) ----------------------------------------------


def _start_regrade(config: pytest.Config) -> None:
    """Resolve the source run (after the store's configure has read `--commerce-baseline`): a
    regrade diffs against its source unless a baseline is named."""
    source = regrade_plan.start(config, config.stash.get(BASELINE, None))
    if source is not None:
        config.stash[BASELINE] = source
        config.stash[BASELINE_IS_SOURCE] = True
    if regrade_plan.regrade_of(config) is not None:
        # registered after the store's hooks: its summary section comes before the run history
        config.pluginmanager.register(_RegradeSummary(), "commerce_evals.regrade_summary")


def pytest_report_header(config: pytest.Config) -> str | None:
    return regrade_plan.header_line(config)


def pytest_itemcollected(item: pytest.Item) -> None:
    regrade_plan.note_collected(item.config, item)


@pytest.hookimpl(trylast=True)  # after -k and -m: what they leave is what a regrade runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    regrade_plan.plan_items(config, items)
    select_shard(config, items)


def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    if settings(config).merge:
        from .merge import merge_main

        return run_session(config, merge_main)
    return None


def pytest_commerce_evals_run_identity(config: pytest.Config) -> dict | None:
    plan = regrade_plan.regrade_of(config)
    return regrade_plan.identity(plan.source) if plan is not None else None


class _RegradeSummary:
    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(
        self, terminalreporter: Any, exitstatus: int, config: pytest.Config
    ) -> None:
        recorder = config.stash.get(RECORDER, None)
        if recorder is None or recorder.finished is None:
            return
        try:
            section = regrade_plan.summary_lines(config, list(recorder.finished.trials))
        except Exception as exc:  # the run is already written; the summary must not end pytest
            section = [
                (f"commerce-evals: the regrade summary failed: {problem(exc)}", {"red": True})
            ]
        if section:
            terminalreporter.section("commerce-evals regrade")
            for line, markup in section:
                terminalreporter.write_line(printable(line), **markup)


@pytest.hookimpl(trylast=True)
def pytest_commerce_evals_item_class(config: pytest.Config, kind: str) -> type[pytest.Item] | None:
    classes: dict[str, type[pytest.Item]] = {"trial": CaseItem, "invalid": InvalidCase}
    return classes.get(kind)


@pytest.hookimpl(trylast=True)
def pytest_commerce_evals_case_trials(items: list[pytest.Item]) -> list[pytest.Item]:
    return [i for i in items if type(i) is CaseItem]


def group_by_case(config: pytest.Config) -> bool:
    """Under `-n` with adaptive trials, every trial of a case must run on one worker (its
    decisions need all of its results): with `--dist load` (xdist's default), `worksteal` or
    `loadgroup` the controller schedules by case instead. (`loadscope` and `loadfile` keep a case
    file on one worker already.) True when the plugin schedules."""
    option = config.option
    if not getattr(option, "numprocesses", None) or getattr(option, "dist", "no") not in (
        "load",
        "worksteal",
        "loadgroup",
    ):
        return False
    config.pluginmanager.register(_CaseScheduling(), "commerce_evals.case_scheduling")
    return True


class _CaseScheduling:
    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        return case_scheduler(config, log)


# -- adaptive trials (`--commerce-trials=auto`) ------------------------------------------------


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Under adaptive trials: learn the session's case trials and ask for their history."""
    config = session.config
    spec = run_config(config).adaptive
    if spec is None or config.option.collectonly:
        return
    if not hasattr(config, "workerinput") and config.getoption("numprocesses", None):
        return  # the xdist controller runs no trial: its workers decide
    run = AdaptiveRun(spec, level=settings(config).diff_level)
    run.add_items([i for i in session.items if type(i) is CaseItem])
    config.stash[ADAPTIVE] = run
    if run.cases:
        run.ask_history(config)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A trial of a case already decided is not run (unless it is already in flight), nor one
    the run's budget has no room left for."""
    if type(item) is not CaseItem:
        return
    scheduler = item.config.stash.get(SCHEDULER, None)
    spend = run_spend(item.config)
    if spend is not None and spend.exhausted() and not (scheduler and scheduler.submitted(item)):
        item.commerce_not_started = spend.text()
        pytest.skip(f"not started: the run's budget is spent ({item.commerce_not_started})")
    run = adaptive_run(item.config)
    if run is None:
        return
    decision = run.decision(item.case.id)
    if decision is None:
        return
    scheduler = item.config.stash.get(SCHEDULER, None)
    if scheduler is not None and scheduler.submitted(item):
        return  # in flight when the case was decided: it finishes and is recorded
    item.commerce_decided = decision.text()
    pytest.skip(decision.text())


def _adaptive_record(item: CaseItem, outcome: str) -> str | None:
    """Count a finished trial toward its case's decision; submit the case's next trial while it
    is undecided. The decision's reason when this trial decided the case."""
    run = adaptive_run(item.config)
    if run is None:
        return None
    before = run.decision(item.case.id)
    decision = run.record(item.case.id, outcome)
    if decision is None:
        scheduler = item.config.stash.get(SCHEDULER, None)
        if scheduler is not None:
            following = run.next_trial(item.case.id, item.trial, scheduler.submitted)
            if following is not None:
                scheduler.submit([following])
        return None
    return decision.reason if before is None else None


def _runs_ahead(item: pytest.Item) -> bool:
    """A trial worth starting before its turn: a case trial pytest will not skip."""
    if type(item) is not CaseItem:
        return False
    run = adaptive_run(item.config)
    if run is not None and (not run.first_wave(item) or run.decision(item.case.id)):
        return False  # an adaptive case's later trials are submitted while it stays undecided
    return not any(item.iter_markers("skip")) and not any(item.iter_markers("skipif"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Keep the scheduler fed: every case trial of the session at the first item, or under an
    xdist worker the trials the controller has queued for it so far."""
    config = item.config
    if SCHEDULER not in config.stash:
        if type(item) is not CaseItem:
            return  # decided at the first case trial
        size = run_config(config).concurrency
        if size is None:  # auto: run trials one by one until one has shown what it needs
            if not config.stash.get(TRIAL_RAN, False):
                return
            size = resolve_auto(config)
        if config.getoption("usepdb", False) or config.getoption("trace", False):
            size = 1  # a debugger stops in the trial it is reporting, on the main thread
        config.stash[SCHEDULER] = TrialScheduler(size) if size > 1 else None
        if size > 1:  # what concurrent trials print lands in whichever item is reporting anyway
            capture_by_sys(config)
    scheduler = config.stash[SCHEDULER]
    if scheduler is None:
        return
    session = item.session
    if hasattr(config, "workerinput"):
        queued = xdist_queued(config, session)
        items = [item, *(queued or [])]
    elif not scheduler.fed:
        scheduler.fed = True
        start = session.items.index(item) if item in session.items else 0
        items = session.items[start:]
    else:
        return
    scheduler.submit([i for i in items if _runs_ahead(i)])


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Before an eval run's trials: move what collection built (modules, cases, items) out of
    the garbage collector's reach, so each full collection during the run walks only what the
    trials made. (Again at the session's end, for pytest's own collections at exit.)"""
    if _eval_run(session):
        gc.freeze()


def _eval_run(session: pytest.Session) -> bool:
    return not session.config.option.collectonly and any(
        type(item) is CaseItem for item in session.items
    )


def _close_scheduler(config: pytest.Config) -> None:
    scheduler = config.stash.get(SCHEDULER, None)
    if scheduler is not None:
        scheduler.close()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    scheduler = config.stash.get(SCHEDULER, None)
    if scheduler is not None:  # the interpreter settings the trials ran with, put back
        scheduler.restore()


# -- reports, summary, exit status ------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if isinstance(item, CaseItem) and item.records_trial:
        _trial_report(item, report)
    elif isinstance(item, InvalidCase) and report.failed:
        attach_payload(report, "invalid", message=item.message)
    return report


def _trial_report(item: CaseItem, report: pytest.TestReport) -> None:
    """Put the trial's record on the report that closes it (`results.REPORT_KINDS`)."""
    if item.commerce_not_started is not None:
        if report.skipped:  # not a trial: nothing recorded, its set could not finish
            attach_payload(
                report,
                "not_started",
                reason=item.commerce_not_started,
                case_id=item.case.id,
                trial=item.trial,
                set_name=item.set_name,
                threshold=item.threshold,
            )
        return
    decided = item.commerce_decided
    if decided is not None:
        if report.when == "setup":  # not a trial: nothing recorded or counted
            attach_payload(report, "not_needed", decided=decided)
        return
    outcome = None
    if report.when == "call":
        # no result: the plugin's own code failed around the trial, not the agent
        outcome = item.result.outcome if item.result else ("pass" if report.passed else "error")
    elif report.when == "setup" and report.skipped:
        outcome = "skipped"
    elif report.when == "setup" and report.failed:
        outcome = "error"  # a fixture or hook failed before the trial: not the agent's doing
    if outcome is not None:
        # on the item: junitxml writes the properties of the teardown report, made from it
        item.user_properties.append(("outcome", outcome))
        not_judged = bool(item.result and item.result.rubric_not_judged)
        if not_judged:
            report.user_properties.append(("rubric", "not judged"))
        record = _trial_record(item, report, outcome)
        stopped = None
        if report.when == "call" or outcome == "error":
            stopped = _adaptive_record(item, outcome)
        attach_payload(
            report,
            "trial",
            outcome=outcome,
            # an xdist worker sends its reports as plain data: the record's own dump (of its
            # writable form), made typed again where reports gather (`record_of`)
            record=(record.clean().model_dump() if hasattr(item.config, "workerinput") else record),
            rubric_not_judged=not_judged,
            agent_endpoint=agent_endpoint_data(item.config),
            decided=stopped,
        )
    if report.when == "teardown":
        item.result = None  # recorded; a long run keeps no second copy of every transcript


def _trial_record(item: CaseItem, report: pytest.TestReport, outcome: str) -> TrialRecord:
    """The record of the trial a report closes: the one the trial ran into, or, for a trial that
    never ran (skipped, or failed before or around it), one from its case and outcome."""
    stopping = _stopping(item)
    if item.result is not None and report.when == "call":
        item.result.stopping = stopping
        return item.result
    # the customer's messages, for the report's timeline (not for a trial whose setup failed)
    messages = list(item.case.turns) if report.when == "call" or report.skipped else []
    record = TrialRecord.begin(item.spec, messages=messages)
    record.outcome = cast(Outcome, outcome)
    record.stopping = stopping
    return record


def _stopping(item: CaseItem) -> Stopping | None:
    """The stopping rule adaptive trials run the item's case under; a regrade keeps the source
    trial's (its rate is read again under the rule that stopped it)."""
    run = adaptive_run(item.config)
    if run is not None:
        return run.stopping(item.case.id)
    stored = stored_trial(item.config, item.case.id, item.trial)
    return stored.stopping if stored is not None else None


def record_of(report: pytest.TestReport) -> TrialRecord | None:
    """The typed trial record a report carries (None: the report closes no trial), rebuilt
    from its serialised form when an xdist worker sent it; taken off the report once read, as
    pytest keeps every report to the end of the session."""
    data = report_payload(report, "trial")
    if data is None or "record" not in data:
        return None
    found = data.pop("record")
    return found if isinstance(found, TrialRecord) else TrialRecord.model_validate(found)


_STATUS_LETTERS = {"judge_error": "J", "user_error": "U", "infra_error": "I", "error": "E"}


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    if report_payload(report, "not_started") and report.skipped:
        return "unstarted", "", "NOT STARTED (the run's budget is spent)"
    not_needed = report_payload(report, "not_needed")
    if not_needed and report.when == "setup":
        # a trial adaptive trials did not need: not a skipped case (no letter, its own count)
        return "decided", "", f"NOT NEEDED ({not_needed['decided']})"
    data = report_payload(report, "trial")
    if data and report.when == "call" and data["outcome"] in UNGRADED_OUTCOMES:
        outcome = data["outcome"]
        return outcome, _STATUS_LETTERS[outcome], outcome.upper()
    return None


class _JUnitOutcomes:
    """In `--junitxml`, a trial that could not be graded (judge, simulated customer,
    infrastructure or glue error)
    is an `<error>`, not a `<failure>`. pytest writes every failed call as a failure, so the
    element it just wrote is retagged; registered on the controller only."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)  # after junitxml's own hook has written the element
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = report_payload(report, "trial")
        if not data or report.when != "call" or not report.failed:
            return
        outcome = data["outcome"]
        if outcome not in UNGRADED_OUTCOMES:
            return
        junit_error(self.config, report, outcome)


class _Gatherer:
    """Collects trial records where reports gather: the only process without xdist, the
    controller with it (workers never register it)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        config = self.config
        payload = report_payload(report)
        kind = payload.get("kind") if payload is not None else None
        if kind in ("vacuity", "not_needed"):
            return  # authoring's hooks read vacuity findings; a trial not needed is not counted
        if kind == "not_started" and payload is not None:
            summary = config.stash[SUMMARY]
            summary.not_started(payload["set_name"], payload["threshold"])
            summary.budget_stop = (
                f"the run's budget ran out ({payload['reason']}); trials not started: "
                f"{sum(g.not_started for g in summary.sets.values())} (their sets are UNDECIDED)"
            )
            config.hook.pytest_commerce_evals_trial_not_started(
                config=config,
                reason=payload["reason"],
                case_id=payload.get("case_id", ""),
                trial=payload.get("trial", 0),
                set_name=payload["set_name"],
                threshold=payload["threshold"],
            )
            return
        data = payload if kind == "trial" else None
        if data is not None:
            if data.get("agent_endpoint") and AGENT_USED not in config.stash:
                config.stash[AGENT_USED] = data["agent_endpoint"]
            record = record_of(report)
            if record is None:  # read already
                return
            config.stash[SUMMARY].add(record)
            if data.get("decided"):
                config.stash[SUMMARY].decided[record.case_id] = data["decided"]
            if data.get("rubric_not_judged"):
                config.stash[SUMMARY].not_judged += 1
            if data["outcome"] in UNGRADED_OUTCOMES and report.failed:
                config.stash[NOT_GRADED].append((report.nodeid, str(report.longrepr)))
            config.hook.pytest_commerce_evals_trial_recorded(config=config, record=record)
            return
        if kind == "invalid" and payload is not None:
            config.stash[SUMMARY].invalid.append(payload["message"])
        elif report.failed:
            config.stash[NON_CASE_FAILURES].append(report.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Gatherer(config), "commerce_evals.gatherer")
        config.pluginmanager.register(_JUnitOutcomes(config), "commerce_evals.junit")
        progress = progress_for(config) if not settings(config).merge else None
        if progress is not None:
            config.pluginmanager.register(ProgressPlugin(progress), "commerce_evals.progress")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    try:
        _terminal_summary(terminalreporter, config)
    except Exception as exc:  # the summary must never take the run's exit status with it
        terminalreporter.write_line(
            f"commerce-evals: the summary could not be written ({type(exc).__name__}: {exc}); "
            "the exit status still comes from the sets",
            red=True,
        )


def _terminal_summary(terminalreporter, config: pytest.Config) -> None:
    summary = config.stash[SUMMARY]
    if not summary.cases and not summary.invalid:
        if settings(config).shard is not None:  # a shard of no case still says who decides
            reasons = _reasons(summary, len(config.stash[NON_CASE_FAILURES]), own=True)
            terminalreporter.write_line(shard_verdict_line(config, reasons))
        _problem_lines(terminalreporter, config.stash.get(RUN_PROBLEMS, []))
        return
    not_graded = config.stash[NOT_GRADED]
    if not_graded:
        # not agent failures, so pytest's FAILURES section leaves them out: show them here
        terminalreporter.section(
            "judge, infrastructure and glue errors (not counted against the agent)"
        )
        for nodeid, text in not_graded:
            terminalreporter.write_sep("_", nodeid)
            terminalreporter.write_line(text)
    terminalreporter.section("commerce-evals")
    if summary.not_judged:
        from ..judge.skipping import not_judged_reason

        summary.not_judged_reason = not_judged_reason(config)
    for line in summary.lines(verbose=config.getoption("verbose") > 0):
        terminalreporter.write_line(line)
    shortfalls = summary.shortfalls
    undecided = summary.undecided
    if shortfalls:
        terminalreporter.write_line("")
        terminalreporter.write_line("sets below their threshold:", red=True, bold=True)
        for line in shortfalls:
            terminalreporter.write_line(f"  {line}", red=True)
    if undecided:
        terminalreporter.write_line("")
        terminalreporter.write_line(
            "sets undecided (nothing graded to measure):", yellow=True, bold=True
        )
        for line in undecided:
            terminalreporter.write_line(f"  {line}", yellow=True)
    if summary.sets and not shortfalls and not undecided:
        terminalreporter.write_line("every set met its threshold", green=True)
    problems = config.stash.get(RUN_PROBLEMS, [])
    _problem_lines(terminalreporter, problems)
    if settings(config).shard is not None:
        reasons = _reasons(summary, len(config.stash[NON_CASE_FAILURES]), own=True)
        terminalreporter.write_line(shard_verdict_line(config, reasons))
    elif summary.sets:
        others = len(config.stash[NON_CASE_FAILURES])
        terminalreporter.write_line(_verdict_line(summary, others, len(problems)))


def _problem_lines(terminalreporter: Any, problems: list[str]) -> None:
    """A merged run's shards that were missing, unfinished or failed."""
    if problems:
        terminalreporter.write_line("")
        terminalreporter.write_line("run incomplete or failed in a shard:", red=True, bold=True)
        for line in problems:
            terminalreporter.write_line(f"  {line}", red=True)
        if terminalreporter.config.stash[SUMMARY].cases:
            return
        terminalreporter.write_line(
            f"verdict: fail — {len(problems)} shard(s) missing, unfinished or failed"
        )


def _reasons(summary: Summary, others: int = 0, shards: int = 0, own: bool = False) -> list[str]:
    """Why the run fails (`own`: only what fails a shard on its own)."""
    reasons = []
    if summary.shortfalls and not own:
        reasons.append(f"{len(summary.shortfalls)} set(s) short")
    if summary.undecided and not own:
        reasons.append(f"{len(summary.undecided)} set(s) undecided")
    if shards:
        reasons.append(f"{shards} shard(s) missing, unfinished or failed")
    if summary.glue_errors and not own:
        reasons.append(f"{summary.glue_errors} glue error(s)")
    if summary.invalid:
        reasons.append(f"{len(summary.invalid)} invalid case entr(ies)")
    if others:
        reasons.append(f"{others} other test(s) failed")
    return reasons


def _verdict_line(summary: Summary, others: int = 0, shards: int = 0) -> str:
    """One line saying why the run passes or fails, as the exit status will."""
    reasons = _reasons(summary, others, shards)
    if not reasons:
        return f"verdict: pass — all {len(summary.sets)} set(s) met their thresholds"
    return "verdict: fail — " + ", ".join(reasons)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The exit status says whether every set met its threshold, not whether one trial failed."""
    config = session.config
    _close_scheduler(config)
    if any(type(item) is CaseItem for item in session.items):
        # the run (or the collection) is over: pytest's collections at exit need not walk
        # every case and trial again (5 full collections: 0.3 s for 200 collected cases)
        gc.freeze()
    if hasattr(config, "workerinput"):
        return
    if settings(config).shard is not None:
        shard_gate(session)
        return
    summary = config.stash.get(SUMMARY, None)
    if summary is None or not summary.cases:
        return
    if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return
    bad = (
        config.stash.get(RUN_PROBLEMS, [])
        or summary.shortfalls
        or summary.undecided
        or summary.glue_errors
        or summary.invalid
        or config.stash[NON_CASE_FAILURES]
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED if bad else pytest.ExitCode.OK
