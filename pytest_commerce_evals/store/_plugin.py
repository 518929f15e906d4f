"""pytest hooks of the run store: record every run, diff its failing set against a baseline,
compare two models' runs, and write the HTML and JSON reports.

Everything here runs in the controlling process (the only one without pytest-xdist); each trial
arrives as its typed record (`results.TrialRecord`) through
`pytest_commerce_evals_trial_recorded`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..compat import run_session
from ..errors import StoreError
from ..jsonsafe import printable
from ..results import TrialRecord
from ..runs import RunRecord
from ..settings import BY_NAME, settings
from .commands import copy_main, copy_run_store, flaky_main, import_main, open_store, resolve_run
from .history import (
    load_history,
)
from .recorder import (
    BASELINE,
    BASELINE_NOTES,
    RECORDER,
    RunRecorder,
    agent_guess,
    problem,
)
from .run_store import RunStore
from .shard_recorder import ShardRecorder, check_shard_options


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The seams the store asks of the features above it (`store/seams.py`)."""
    from . import seams

    pluginmanager.add_hookspecs(seams)


@pytest.hookimpl(tryfirst=True)  # before the runner's: a regrade reads the baseline found here
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    check_shard_options(config)
    ref = settings(config).baseline
    config.stash[BASELINE] = None
    if ref:
        try:
            path = Path(ref).expanduser()
            store = None if (path.suffix == ".json" or path.is_file()) else open_store(config)
            config.stash[BASELINE] = resolve_run(store, ref, "--commerce-baseline")
        except StoreError as exc:
            raise pytest.UsageError(f"--commerce-baseline: {exc}") from None
        if store is not None and store.damaged:
            # the run is diffed against the run found; say what was left out on the way
            config.stash[BASELINE_NOTES] = list(store.damaged)
    # a regrade (--commerce-regrade, the runner's) diffs against its source run unless one is
    # named: the runner's pytest_configure, called after this one (tryfirst), sets it


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    found = settings(config)
    checking = found.vacuity or found.lint
    if (
        not hasattr(config, "workerinput")
        and not found.compare
        and not found.flaky
        and not checking  # the vacuity check and the lint are not runs of the agent
        and not found.merge  # the merge step finishes a stored run (runner/merge.py)
    ):
        recorder = config.stash[RECORDER] = (
            ShardRecorder(config) if found.shard is not None else RunRecorder(config)
        )
        config.pluginmanager.register(recorder, "commerce_evals.recorder")
        config.pluginmanager.register(_HistoryForWorkers(recorder), "commerce_evals.history")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with case trials to record stops here when its store cannot be opened (a folder
    that is a file, a PostgreSQL server that does not answer or refuses the user): running
    anyway would leave the record in `unsaved-<run>.json`, and CI green with no history. (Under
    xdist the controller collects nothing: `_HistoryForWorkers` probes the store when the first
    worker has collected case trials, before any is scheduled.)"""
    config = session.config
    recorder = config.stash.get(RECORDER, None)
    if recorder is None or recorder.target is None or config.option.collectonly:
        return
    if not config.hook.pytest_commerce_evals_case_trials(items=session.items):
        return
    problem = _store_problem(config, recorder)
    if problem is not None:
        raise pytest.UsageError(problem)


def _store_problem(config: pytest.Config, recorder: RunRecorder) -> str | None:
    """Why the run's store cannot be opened, said for the user; None when it opens."""
    target = recorder.target
    assert target is not None  # asked only of a run being recorded
    try:
        RunStore(target).close()
    except Exception as exc:
        where = settings(config).sources.get("store", "default")
        name = BY_NAME["store"].where(where) if where != "default" else "the run store"
        return (
            f"{name}: the run store cannot be opened: {problem(exc)}; fix it, or record "
            "nothing with --commerce-store=none"
        )
    return None


HISTORY_SOURCE = "commerce_evals_history_source"
"""The key of a worker's `workerinput` that says where the run's history is read from."""


class _HistoryForWorkers:
    """Under pytest-xdist, tell each worker the store folder and the run's identity, so the
    case-history hook answers in the worker that decides a case's adaptive trials."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        self.probed = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The controller's store probe, before xdist schedules a trial: the first worker to
        collect case trials (a `.yaml::` or `.yml::` node id) has it opened once; a store that
        cannot be opened ends the session as a usage error, as without xdist."""
        recorder = self.recorder
        if self.probed or recorder.target is None or recorder.config.option.collectonly:
            return
        if not any(".yaml::" in i or ".yml::" in i for i in ids):
            return
        self.probed = True
        problem = _store_problem(recorder.config, recorder)
        if problem is not None:
            pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        target = self.recorder.target
        if target is not None:
            node.workerinput[HISTORY_SOURCE] = {
                "target": str(target),
                "url": isinstance(target, str),
                "record": self.recorder.record.model_dump(mode="json"),
            }


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    # write the run row before the first trial runs (under xdist the controller has no items:
    # the row is written when the first result arrives)
    recorder = session.config.stash.get(RECORDER, None)
    if session.config.option.collectonly:
        return
    if recorder is not None and any(hasattr(item, "case") for item in session.items):
        recorder.begin()


def pytest_commerce_evals_trial_recorded(config: pytest.Config, record: TrialRecord) -> None:
    recorder = config.stash.get(RECORDER, None)
    if recorder is not None:
        recorder.add(record)


def pytest_commerce_evals_trial_not_started(
    config: pytest.Config, reason: str, case_id: str, trial: int, set_name: str, threshold: float
) -> None:
    recorder = config.stash.get(RECORDER, None)
    if recorder is not None:
        recorder.stopped = reason
        recorder.not_started.append((case_id, trial, set_name, threshold))


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int):
    result = yield
    recorder = session.config.stash.get(RECORDER, None)
    if recorder is not None:
        recorder.finish(session)
    return result


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    recorder = config.stash.get(RECORDER, None)
    if recorder is None or recorder.finished is None:
        return
    terminalreporter.section("commerce-evals run history")
    try:
        lines = recorder.summary_lines()
    except Exception as exc:  # the run is already written; the summary must not end pytest
        lines = [(f"commerce-evals: the run history summary failed: {problem(exc)}", {"red": True})]
    for line, markup in lines:
        terminalreporter.write_line(printable(line), **markup)


def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    found = settings(config)
    if found.store_import:
        return run_session(config, import_main)
    if found.store_copy or found.judge_store_copy:
        return run_session(config, copy_main)
    if found.flaky and not found.compare:  # the comparison is the reports' (reports/_plugin)
        return run_session(config, flaky_main)
    return None


@pytest.hookimpl(tryfirst=True)  # the runs first, then each feature's own store
def pytest_commerce_evals_copy_stores(config: pytest.Config, write: Callable[..., None]) -> None:
    if settings(config).store_copy:
        copy_run_store(config, write)


def pytest_commerce_evals_case_history(
    config: pytest.Config, case_ids: list[str]
) -> dict[str, list[tuple[int, int]]] | None:
    """Each case's (passed, graded) in the last --commerce-history-runs comparable complete runs,
    newest first; None without a store or a run being recorded, {} when no run knows a case."""
    recorder = config.stash.get(RECORDER, None)
    source = getattr(config, "workerinput", {}).get(HISTORY_SOURCE)
    if recorder is not None and recorder.target is not None:
        target, record, store = recorder.target, recorder.record, recorder.store
    elif recorder is None and source:  # an xdist worker: the controller said where to read
        target = source["target"] if source["url"] else Path(source["target"])
        record, store = RunRecord.model_validate(source["record"]), None
    else:
        return None
    if store is None and not RunStore.exists(target):
        return {}  # no run recorded yet
    opened = None
    try:
        if store is None:
            store = opened = RunStore(target, read_only=True)
        max_runs = settings(config).history_runs
        history = None
        guess = agent_guess(config) if record.agent_model is None else None
        if guess:
            # before a trial ran, an agent that will ask the plugin for a client is not named
            # yet: its runs were stored under the configured model (the embedded one included)
            found = load_history(
                store, record.model_copy(update={"agent_model": guess}), case_ids, max_runs
            )
            history = found if found.runs else None
        if history is None:
            history = load_history(store, record, case_ids, max_runs)
    except Exception:  # no readable store: no history
        return None
    finally:
        if opened is not None:
            opened.close()
    out = {}
    for case_id in case_ids:
        past = history.past(case_id)
        if past:
            out[case_id] = [(p.passed, p.graded) for p in past]
    return out
